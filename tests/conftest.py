"""Shared fixtures: small parameters, a seeded generator, the interop data."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from rappor import Params

DATA_DIR = Path(__file__).parent / "data"
REPO_DIR = Path(__file__).parent.parent


@pytest.fixture
def params() -> Params:
    """Small parameters (k=8, h=2, m=4) for fast tests."""
    return Params(num_bloombits=8, num_hashes=2, num_cohorts=4, prob_p=0.5, prob_q=0.75, prob_f=0.5)


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(12345)


@pytest.fixture
def data_dir() -> Path:
    return DATA_DIR


@pytest.fixture
def interop_dir() -> Path:
    """google/rappor's own small collection (copied from shared/interop/google_rappor_small)."""
    return DATA_DIR / "google_rappor_small"


def run_limited(code: str, *, address_space: int, timeout: float = 120.0) -> subprocess.CompletedProcess[str]:
    """Run ``code`` in a fresh Python whose address space is capped at ``address_space`` bytes.

    For memory tests that must fail cleanly (MemoryError, non-zero exit) rather than
    exhaust the shared machine when the code under test regresses: the old O(k**2)
    parser or an unbounded read of /dev/zero dies here instead of swapping.
    """
    prelude = ("import resource\n"
               f"resource.setrlimit(resource.RLIMIT_AS, ({address_space}, {address_space}))\n")
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    return subprocess.run([sys.executable, "-c", prelude + code], capture_output=True, text=True, timeout=timeout,
                          env=env, cwd=REPO_DIR)


@pytest.fixture
def run_limited_python() -> Callable[..., subprocess.CompletedProcess[str]]:
    """:func:`run_limited` as a fixture."""
    return run_limited


@pytest.fixture
def one_report() -> tuple[Params, list[list[int]], list[str]]:
    """A decode whose standard errors are partly infinite: 20 strings of equal share in one cohort
    (k=16, 200,000 reports), decoded against those 20, more than its 16 rows (issue 13, item 6).
    ``(params, counts, candidates)``.  (It was one report in all; since the random-string null no
    longer detects every candidate of counts that hold no signal, one report detects nothing.)"""
    from rappor.simulation import Population, simulate

    params = Params(num_bloombits=16, num_hashes=2, num_cohorts=1, prob_p=0.5, prob_q=0.75, prob_f=0.5)
    candidates = [f"v{i}" for i in range(20)]
    sim = simulate(params, Population.from_counts(dict.fromkeys(candidates, 1.0), name="flat"), 200_000,
                   rng=np.random.default_rng(0))
    return params, np.asarray(sim.aggregate.counts).tolist(), candidates


@pytest.fixture
def twin_candidates(params: Params) -> tuple[Any, Any]:
    """``(aggregate, candidate_map)``: "a" and "a-twin" set the same bits in every cohort (one group),
    "b" others; every report holds "a" (its bits at rate p11, the rest at p01; 5,000 per cohort)."""
    from rappor.collect._aggregate import Aggregate
    from rappor.collect._design import CandidateMap

    rows = [[0, 9, 17, 25], [0, 9, 17, 25], [3, 12, 20, 30]]
    cmap = CandidateMap.from_indices(params, ["a", "a-twin", "b"], rows)
    counts = np.full((4, 9), 0)
    counts[:, 0] = 5000
    counts[:, 1:] = np.rint(5000 * params.p01)
    counts[0, 1] = counts[1, 2] = counts[2, 2] = counts[3, 2] = np.rint(5000 * params.p11)
    return Aggregate(params=params, counts=counts), cmap


def _load_by_path(path: Path) -> Any:
    """Run the Python file ``path`` as a fresh module (benchmark scripts and test files are not importable)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(f"_by_path_{path.parent.name}_{path.stem}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the file runs
    try:
        spec.loader.exec_module(module)
    finally:
        del sys.modules[spec.name]
    return module


@pytest.fixture
def load_by_path() -> Callable[[Path], Any]:
    """:func:`_load_by_path`: a benchmark script or another test file, loaded from its path."""
    return _load_by_path
