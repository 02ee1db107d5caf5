"""The signed maximum of the likelihood: intervals that do not inherit the boundary's bias (private).

The cells of the table are shares, and the fit keeps them ``>= 0``.  Where many cells are
small against their standard errors (hundreds of cells of a string x string table; cells
of a few tenths of a percent at f=0.75), that constrained maximum is biased: every cell
held at 0 would have gone negative, so the small cells come out too high together and the
large ones too low (measured: ``docs/notes/association-measurements.md``).  An interval
centred on it, whatever its width, misses the large cells.

The likelihood ``l(pi) = sum_i w_i log(L_i . pi)`` is defined beyond the simplex: for any
``pi`` with ``sum pi = 1`` and ``L_i . pi > 0`` for every report.  Its maximum there, the
**signed** maximum, is an interior point, so it is asymptotically normal around the truth
with the inverse information as covariance whether or not a cell's true share is 0 (the
boundary problem of Self and Liang 1987 does not arise: the parameter is interior to the
signed space; e.g. Cox and Hinkley 1974, *Theoretical Statistics*, 9.2).  The Wald interval
around it, clipped to ``[0, 1]``, therefore covers at its level in every band of true share
-- clipping never removes a share in ``[0, 1]`` -- at the price of a wider interval for the
small cells than the boundary-aware law around the constrained maximum gives.  The point
estimate stays the constrained one (a share below 0 is no estimate of a share); the
interval is widened where needed to hold it.

Found by Newton's method on the plane ``sum pi = 1`` from the constrained maximum, each step
the inverse information (on the simplex's tangent space,
:func:`~rappor.analysis.association._inference.constrained_covariance`) times the gradient,
halved until the log-likelihood does not decrease and every ``L_i . pi`` stays positive.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from ._inference import constrained_covariance
from ._mixture import ProductLikelihood, _single_thread

__all__ = ["SignedMaximum", "observed_covariance", "signed_maximum"]

Array = npt.NDArray[np.float64]

#: Stop when the Newton decrement ``g' V g / 2`` (the log-likelihood still to gain in the
#: quadratic model) is below this: the estimate is then within about 0.014 standard errors
#: of the maximum in its worst direction.
SIGNED_TOLERANCE = 1e-4

#: Newton steps before giving up (measured: 2-5 from the constrained maximum).
SIGNED_MAX_ITERATIONS = 30

#: Step halvings before giving up on a step (``L_i . pi`` would reach 0: the likelihood has
#: no interior maximum in that direction).
_MAX_HALVINGS = 30


class SignedMaximum(NamedTuple):
    """The signed maximum of the likelihood and its covariance.

    Attributes
    ----------
    table : ndarray of shape (cells,)
        Sums to 1; cells may be negative.
    covariance : ndarray of shape (cells, cells)
        Inverse observed information at ``table`` on the simplex's tangent space.
    iterations : int
        Newton steps taken.
    """

    table: Array
    covariance: Array
    iterations: int


def observed_covariance(lik: ProductLikelihood, d: Array) -> Array:
    """Inverse observed information on the simplex at the table whose ``L_i . pi`` are ``d``.

    The information is ``sum_i w_i L_i L_i' / d_i^2`` (reports with ``d_i = 0`` left out).
    """
    with np.errstate(divide="ignore", invalid="ignore"):
        curvature = np.where(d > 0, lik.weights / (d * d), 0.0)
    information = lik.hessian(curvature)
    with _single_thread():
        return constrained_covariance(information)


def signed_maximum(lik: ProductLikelihood, table: Array, covariance: Array, *,
                   tolerance: float = SIGNED_TOLERANCE,
                   max_iterations: int = SIGNED_MAX_ITERATIONS) -> SignedMaximum | None:
    """Maximize the log-likelihood over signed tables summing to 1, from the constrained maximum.

    Parameters
    ----------
    lik : ProductLikelihood
    table : ndarray of shape (cells,)
        The constrained maximum (every ``L_i . table > 0``).
    covariance : ndarray of shape (cells, cells)
        The inverse information at ``table`` on the simplex
        (:func:`~rappor.analysis.association._inference.constrained_covariance`): the first
        step's metric.
    tolerance : float, default=SIGNED_TOLERANCE
        Newton decrement (log-likelihood units) at which to stop.
    max_iterations : int, default=SIGNED_MAX_ITERATIONS

    Returns
    -------
    SignedMaximum or None
        ``None`` when there is no interior maximum to find: a covariance with infinite
        entries (directions the data do not resolve), or a step that cannot increase the
        log-likelihood while keeping every ``L_i . pi > 0``, or no convergence.
    """
    if not np.isfinite(covariance).all():
        return None
    x = np.asarray(table, dtype=np.float64).reshape(-1).copy()
    d, grad = lik.forward_gradient(x)
    if not (d > 0).all():
        return None
    ll = lik.log_likelihood(d)
    cov = covariance
    for iteration in range(max_iterations + 1):
        if iteration > 0:
            cov = observed_covariance(lik, d)
            if not np.isfinite(cov).all():
                return None
        step = cov @ grad
        if 0.5 * float(grad @ step) <= tolerance:
            return SignedMaximum(table=x, covariance=cov, iterations=iteration)
        if iteration == max_iterations:
            return None
        t = 1.0
        for _ in range(_MAX_HALVINGS):
            trial = x + t * step
            d_new, grad_new = lik.forward_gradient(trial)
            if (d_new > 0).all():
                ll_new = lik.log_likelihood(d_new)
                if ll_new >= ll:
                    break
            t *= 0.5
        else:
            return None
        x, d, grad, ll = trial, d_new, grad_new, ll_new
    return None  # pragma: no cover - the loop returns
