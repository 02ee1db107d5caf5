"""Where the choice of categories by the same reports moves the table (private).

A string variable's categories are the candidates its marginal decode detects, on the same
reports the joint table is then fitted to.  A candidate near the detection threshold is
detected when its noise happened to be high, so the detected candidates' shares in the
table come out too high together and the rest of the table -- "Other" most -- too low
(measured at a million clients and f=0.75: the detected candidates below a share of 0.02
+0.04 to +0.10 together, 1.6-4.0 of that sum's standard error; with the categories chosen on
an independent collection, 0.4 on average; ``docs/notes/association-measurements.md``).  The
intervals of the signed maximum do not see it: it is a bias given the selection, not noise.

Each detected category's expected excess is its marginal decode's
(:meth:`rappor.DecodeResult.selection_excess`: the truncated-normal conditional estimate).
Where the rest of the table gives that mass back is read from the likelihood: in the
quadratic approximation around the signed maximum ``t`` with covariance ``V``, the table
that maximizes the likelihood with each detected category's total lowered by its excess
``delta`` is ``t - V A (A' V A)^{-1} delta`` (``A`` sums the cells of each category; the
constrained maximum of a normal log-likelihood, e.g. Rao 1973, *Linear Statistical Inference*,
4a.9).  The intervals then also cover the table moved so (their union with the interval
around it): they widen on the side the selection could have moved each cell.

The point estimates are moved another way (:func:`marginal_other_table`): the marginal decode's own
estimate of Other (1 minus its categories' shares) is close to the truth where the joint fit's is
too low (design seeds at a million clients: 0.088 / 0.226 against true 0.083 / 0.221, the fit's
0.055 / 0.174), so each string variable's Other total is set to it and the rest of the table moves
as the same quadratic approximation says.  Moving the point estimates by the selection shift
overshot Other.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

__all__ = ["marginal_other_table", "selection_shift"]

Array = npt.NDArray[np.float64]


def selection_shift(covariance: Array, shape: tuple[int, ...], excess: Sequence[Array | None]) -> Array | None:
    """The move of the table's cells that the detected categories' expected excess implies.

    Parameters
    ----------
    covariance : ndarray of shape (cells, cells)
        Of the signed maximum (inverse information on the simplex).
    shape : tuple of int
        The table's shape, one axis per variable.
    excess : sequence of ndarray or None
        Per variable, the expected excess of each category's share (0 for Other and for
        categories that were not chosen by a detection); ``None`` for a variable whose
        categories were not chosen from the data (a boolean, every candidate).

    Returns
    -------
    ndarray of shape ``shape`` or None
        ``V A (A' V A)^+ delta``: to subtract from the signed maximum.  ``None`` when no
        category has an excess or the covariance has infinite entries.
    """
    if not np.isfinite(covariance).all():
        return None
    labels = np.indices(shape).reshape(len(shape), -1)
    columns, delta = [], []
    for axis, values in enumerate(excess):
        if values is None:
            continue
        for category in np.flatnonzero(np.asarray(values) > 0):
            columns.append(labels[axis] == category)
            delta.append(float(values[category]))
    if not columns:
        return None
    return _quadratic_move(covariance, shape, columns, delta)


def _quadratic_move(covariance: Array, shape: tuple[int, ...], groups: Sequence[npt.NDArray[np.bool_]],
                    delta: Sequence[float]) -> Array:
    """``V A (A' V A)^+ delta``, ``A`` the indicators of ``groups`` of cells (flat, C order)."""
    a = np.array(groups, dtype=np.float64).T
    va = covariance @ a
    solution = np.linalg.lstsq(a.T @ va, np.array(delta, dtype=np.float64), rcond=1e-10)[0]
    shift: Array = (va @ solution).reshape(shape)
    return shift


def marginal_other_table(table: Array, covariance: Array, others: Sequence[tuple[int, float] | None],
                         ) -> tuple[Array, float] | None:
    """The table whose Other totals are the marginal decodes' and whose other cells the likelihood moves.

    Parameters
    ----------
    table : ndarray
        The maximum-likelihood table (one axis per variable; a string variable's Other last).
    covariance : ndarray of shape (cells, cells)
        Of the signed maximum.
    others : sequence of (axis, share) or None
        Per variable, the axis and the share of Other in its marginal decode (1 minus the
        shares of the categories); ``None`` for a variable without Other.

    Returns
    -------
    (ndarray, float) or None
        ``table - V A (A' V A)^+ (A' table - o)``, ``A`` summing each Other's cells, ``o``
        their targets (the maximum of the likelihood's quadratic approximation with those
        totals fixed, as in :func:`selection_shift`), clipped at 0 and rescaled to sum to 1,
        and the mass the clipping removed (each Other total is its target within it);
        ``None`` when no variable has Other or the covariance has infinite entries.
    """
    chosen = [o for o in others if o is not None]
    if not chosen or not np.isfinite(covariance).all():
        return None
    labels = np.indices(table.shape).reshape(table.ndim, -1)
    flat = table.reshape(-1)
    groups = [labels[axis] == table.shape[axis] - 1 for axis, _ in chosen]
    delta = [float(flat[g].sum()) - share for g, (_, share) in zip(groups, chosen)]
    moved = table - _quadratic_move(covariance, table.shape, groups, delta)
    clipped = float(-moved[moved < 0].sum())
    moved = np.clip(moved, 0.0, None)
    out: Array = moved / moved.sum()
    return out, clipped
