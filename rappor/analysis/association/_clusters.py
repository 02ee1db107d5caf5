"""Clients that report more than once: the cluster-robust covariance of the table (private).

RAPPOR is deployed with clients that report the same value again and again (a daily
report), every report an instantaneous response drawn from one memoized permanent response
(Erlingsson, Pihur and Korolova 2014, *RAPPOR*, Sec. 3): a client's reports are not
independent.  The likelihood that multiplies the reports' likelihoods (the model of
google/rappor's ``association.R``) is then a working-independence likelihood.  Its maximum is
still consistent, since each report's own law is right, but its inverse information ``C``
counts the permanent response's noise once a report instead of once a client, and understates
the covariance.  The sandwich clustered by client (Huber 1967; White 1982, *Econometrica*
50(1); Liang and Zeger 1986, *Biometrika* 73(1)) corrects it::

    C J C,    J = sum_i s_i s_i',    s_i = sum_{r in client i} g_r,    g_r = L_r / (L_r . pi)

with ``g_r`` report ``r``'s score in the table (``L_r`` its likelihood row).  At the maximum
the information is ``sum_r g_r g_r'`` (the mixture's Hessian), and ``C`` its inverse on the
simplex, so ``C J C = C + C D C`` with::

    D = sum_i (s_i s_i' - sum_{r in client i} g_r g_r')

the cross products of a client's distinct reports only: nothing changes when every client
reports once.  The decoder adds ``D`` to the products it carries into the covariance
(:func:`~rappor.analysis.association._nuisance.with_nuisance`) where it fits the reports'
patterns: when the exact likelihood of each client's reports (:mod:`~rappor.analysis.association._repeats`,
the default: closer to the truth, its information honest) would not fit in memory.
Measured with 10 and 30 reports a client in ``docs/association.md``, *Repeated reports*.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from ...client._reports import ReportBatch
from ...collect._aggregate import Aggregate
from ._mixture import ProductLikelihood
from ._threads import in_ranges

__all__ = ["cluster_score_products", "repeats_clients", "repeats_without_ids"]

Array = npt.NDArray[np.float64]

#: Reports a block (its likelihood rows: ``BLOCK x cells`` floats).
BLOCK = 4096
#: The reports a client that a marginal decode's dispersion must point to, at the low end that
#: chance leaves (``reports_per_client_low`` of :func:`rappor.analysis.decoder.explain_dispersion`), before
#: :func:`repeats_without_ids` warns.  Strings outside the candidates spread the counts too: with
#: every fifth string outside (string x boolean, 100,000 single reports, k=32 m=32 f=0.5) the
#: dispersion pointed to about 2 (1.15-1.20) on three of four collections, as 2 reports a client
#: did (1.16-1.29), where 3 gave 2.7-3.7 and 10 gave 10-12 (low ends: 3 a client 2.0-3.1, 10 a
#: client 9.7-11.4, 30 a client 30.3-34.3).  The low end, not the point: at k=16 m=64 p=0.5 q=0.75
#: f=0.5 with 6 of 100 strings listed, one collection of twenty single-report ones pointed to 4.3
#: (dispersion 1.157, chi-square p 4e-4) with a low end of 1.4.
WARN_REPORTS = 2.5


def repeats_clients(codes: npt.NDArray[np.int64] | None) -> bool:
    """Whether some client has more than one report."""
    return codes is not None and codes.size > 0 and int(np.bincount(codes).max()) > 1


def cluster_score_products(lik: ProductLikelihood, table: Array, report_patterns: npt.NDArray[np.int64],
                           codes: npt.NDArray[np.int64]) -> Array:
    """``D = sum_i (s_i s_i' - sum_{r in i} g_r g_r')`` over the clients with more than one report.

    Parameters
    ----------
    lik : ProductLikelihood
        Over the patterns that ``report_patterns`` indexes.
    table : ndarray of float64, shape (cells,)
        The table at which to take the scores (the maximum).
    report_patterns : ndarray of int64, shape (n_reports,)
        Each report's pattern; -1 for a report left out of the fit.
    codes : ndarray of int64, shape (n_reports,)
        Each report's client (:func:`~rappor.analysis.association._inputs.client_codes`).

    Returns
    -------
    ndarray of float64, shape (cells, cells)
    """
    table = np.asarray(table, dtype=np.float64).reshape(-1)
    size = lik.size
    kept = np.flatnonzero(report_patterns >= 0)
    per_client = np.bincount(codes[kept])
    rows = kept[per_client[codes[kept]] > 1]
    if rows.size == 0:
        return np.zeros((size, size))
    rows = rows[np.argsort(codes[rows], kind="stable")]
    client = codes[rows]
    starts = np.flatnonzero(np.concatenate(([True], client[1:] != client[:-1])))
    bounds = np.append(starts, rows.size)

    def work(first: int, last: int) -> Array:  # clients first:last (of the repeated ones)
        acc = np.zeros((size, size))
        lo = first
        while lo < last:
            # whole clients, about BLOCK reports (one client may be more)
            hi = max(lo + 1, min(last, int(np.searchsorted(bounds, bounds[lo] + BLOCK, side="right")) - 1))
            picked = rows[bounds[lo]:bounds[hi]]
            block = lik.take_rows(report_patterns[picked])
            d = block @ table
            with np.errstate(divide="ignore", invalid="ignore"):
                g = np.where(d[:, None] > 0, block / d[:, None], 0.0)
            s = np.add.reduceat(g, bounds[lo:hi] - bounds[lo], axis=0)
            acc += s.T @ s - g.T @ g
            lo = hi
        return acc

    out: Array = np.add.reduce(in_ranges(work, starts.size, 64))
    return out


def repeats_without_ids(batches: Sequence[ReportBatch], selections: Sequence[tuple[Any, ...]],
                        names: Sequence[str]) -> str | None:
    """A warning when a string variable's counts look like repeated reports and no client ids were given.

    Each string variable's marginal decode says what its residual dispersion points to
    (:func:`rappor.analysis.decoder.explain_dispersion`: symmetric residuals and the bits a report
    sets as expected point to clients that report more than once); without the clients' ids the
    joint table's intervals and independence test count every report as a client.  Only where
    chance leaves at least :data:`WARN_REPORTS` reports a client (fewer, outside strings look the same).
    """
    from ..decoder import explain_dispersion

    for batch, selection, name in zip(batches, selections, names):
        marginal = selection[2]
        diag = getattr(marginal, "diagnostics", None)
        if diag is None or not hasattr(diag, "residuals"):
            continue
        counts = Aggregate.from_reports(batch).counts
        check = explain_dispersion(counts, batch.params, diag.residuals, diag.dispersion, diag.chi2_pvalue,
                                   diag.unexplained_mass)
        if check is not None and check.cause == "repeated reports" and check.reports_per_client_low >= WARN_REPORTS:
            return (f"the reports of variable {name!r} look like repeated reports of one value (residual dispersion "
                    f"{check.dispersion:.2f} with symmetric residuals, as about {check.reports_per_client:.0f} reports "
                    "a client would give), and no client ids were given: if clients report more than once, the "
                    "intervals and the independence test count each report as a client and are too narrow; give "
                    "each report's client (clients=, or a 'client' column for rappor decode-assoc).")
    return None
