"""Tests of rappor._util.pages: large arrays in their own mapped pages."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from rappor._util import pages


def test_small_arrays_are_numpy_arrays() -> None:
    out = pages.empty(10, np.int32)
    assert out.shape == (10,) and out.dtype == np.int32 and out.base is None


@pytest.mark.parametrize("dtype", [np.float64, np.int32, np.int64])
def test_large_arrays_are_mapped_zero_filled_and_writable(monkeypatch: pytest.MonkeyPatch, dtype: type) -> None:
    monkeypatch.setattr(pages, "LARGE", 64)
    out = pages.empty(1000, dtype)
    assert out.shape == (1000,) and out.dtype == dtype and out.flags.writeable and out.flags.c_contiguous
    assert isinstance(out.base, np.ndarray) and out.base.size == out.size  # a view of the mapped array
    np.testing.assert_array_equal(out, 0)
    out[:] = np.arange(1000)
    np.testing.assert_array_equal(out, np.arange(1000))


def test_mapped_arrays_work_in_scipy_sparse_views(monkeypatch: pytest.MonkeyPatch) -> None:
    # SciPy's constructors compare a view's size with base.size: the mapped array must be that base.
    monkeypatch.setattr(pages, "LARGE", 64)
    data, indices = pages.empty(12, np.float64), pages.empty(12, np.int32)
    data[:], indices[:] = np.arange(1.0, 13.0), np.tile([0, 2, 3], 4)
    m = sp.csc_matrix((data[:9], indices[:9], np.array([0, 3, 6, 9])), shape=(4, 3), copy=False)
    dense = np.zeros((4, 3))
    for j in range(3):
        dense[[0, 2, 3], j] = np.arange(1.0, 4.0) + 3 * j
    np.testing.assert_array_equal(m.T.toarray(), dense.T)
    np.testing.assert_array_equal(m @ np.ones(3), dense @ np.ones(3))
