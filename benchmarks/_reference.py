"""Read google/rappor's R decoder results for the scenario classes (private).

The reference is run outside this repository, on collections written by
``python benchmarks/accuracy.py --export DIR`` (layout in :func:`_classes.export_collection`):
for every ``DIR/<class>/seed<N>`` and run ``R``::

    Rscript bin/decode_dist.R --map DIR/<class>/map.csv --params DIR/<class>/params.csv \
        --counts DIR/<class>/seed<N>/counts.csv --output-dir DIR/<class>/seed<N>/run<R>

from a google/rappor checkout (``RAPPOR_REPO`` set to it; it needs R with glmnet, limSolve and
RJSONIO).  Its decoder is randomized (four of its five fits add Gaussian noise to the
counts), hence several runs per collection.  ``decode_dist.R`` exits 1 without a
``results.csv`` when it detects nothing; a run directory whose ``log.txt`` says so ("returned
no strings") counts as a run that reported nothing; other runs without ``results.csv`` are
skipped (unfinished or failed).

Each run is scored like our decodes: the rows of its ``results.csv`` are the detected
strings, ``proportion`` their shares (:func:`rappor.evaluate`, undetected = 0).
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

import numpy as np

import rappor

__all__ = ["ReferenceRun", "read_reference"]


@dataclass(frozen=True)
class ReferenceRun:
    """One run of the reference on one collection."""

    seed: int
    run: int
    total_variation: float
    detected: int
    false_positives: int
    seconds: float


def _truth(path: Path) -> dict[str, int]:
    with path.open(newline="") as fh:
        return {row["string"]: int(row["count"]) for row in csv.DictReader(fh)}


def _score(run_dir: Path, truth: dict[str, int]) -> tuple[float, int, int]:
    results = run_dir / "results.csv"
    strings: list[str] = []
    shares: list[float] = []
    if results.exists():
        with results.open(newline="") as fh:
            for row in csv.DictReader(fh):
                strings.append(row["string"])
                shares.append(float(row["proportion"]))
    m = rappor.analysis.evaluate(truth, strings, np.array(shares), detected=np.ones(len(strings), dtype=bool))
    return m.total_variation, m.n_detected, m.false_positives


def read_reference(root: str | Path, class_name: str, seeds: range) -> list[ReferenceRun]:
    """Every finished reference run of ``class_name`` for ``seeds`` under ``root`` (may be empty)."""
    out: list[ReferenceRun] = []
    for seed in seeds:
        seed_dir = Path(root) / class_name / f"seed{seed}"
        if not (seed_dir / "truth.csv").exists():
            continue
        truth = _truth(seed_dir / "truth.csv")
        for run_dir in sorted(seed_dir.glob("run*")):
            if not (run_dir / "results.csv").exists():
                log = run_dir / "log.txt"
                nothing = log.exists() and "returned no strings" in log.read_text(errors="replace")
                if not ((run_dir / "failed").exists() and nothing):
                    continue  # still running, or failed for another reason (not a decode)
            tv, det, fp = _score(run_dir, truth)
            seconds_file = run_dir / "seconds"
            seconds = float(seconds_file.read_text()) if seconds_file.exists() else float("nan")
            out.append(ReferenceRun(seed=seed, run=int(run_dir.name[3:]), total_variation=tv, detected=det,
                                    false_positives=fp, seconds=seconds))
    return out
