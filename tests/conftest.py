"""Shared fixtures: small parameters, a seeded generator, the interop data."""

from __future__ import annotations

from pathlib import Path

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
