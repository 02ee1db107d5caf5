"""The association decoder's inputs checked: one batch a variable, rows aligned by client, a fit that fits (private)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from ..._util.clients import cohort_conflict
from ..._util.memory import check_memory
from ...client._reports import ReportBatch
from ...exceptions import DecodeError, IncompatibleParamsError, InvalidParameterError
from . import _threads
from ._mixture import HESSIAN_ROWS
from ._repeats import client_factor_bytes
from ._result import check_variable_names
from ._variables import Variable

__all__ = ["check_fit_memory", "check_inputs", "client_codes", "client_rows", "fit_bytes"]


def check_inputs(reports: Sequence[ReportBatch], variables: Sequence[Variable],
                 ) -> tuple[list[ReportBatch], list[Variable]]:
    """The batches and variables as lists, checked: as many, matching parameters, same lengths and cohorts.

    Raises
    ------
    InvalidParameterError, IncompatibleParamsError
        Naming the variable or the report that does not match.
    DecodeError
        If there is no report.
    """
    owner = "AssociationDecoder.decode"
    batches, variables = list(reports), list(variables)
    if not 1 <= len(variables) <= 3:
        msg = f"The 'variables' parameter of {owner} must hold 1 to 3 variables. Got {len(variables)} instead."
        raise InvalidParameterError(msg)
    if len(batches) != len(variables):
        msg = f"The 'reports' parameter of {owner} must hold one batch per variable ({len(variables)}). Got {len(batches)} instead."
        raise InvalidParameterError(msg)
    for var in variables:
        if not isinstance(var, Variable):
            msg = f"The 'variables' parameter of {owner} must hold Variable objects. Got {type(var).__name__} instead."
            raise InvalidParameterError(msg)
    check_variable_names([v.name for v in variables])
    first = batches[0]
    for batch, var in zip(batches, variables):
        if not isinstance(batch, ReportBatch):
            msg = f"The 'reports' parameter of {owner} must hold ReportBatch objects. Got {type(batch).__name__} instead."
            raise InvalidParameterError(msg)
        if batch.params != var.params:
            raise IncompatibleParamsError(f"The reports of variable {var.name!r} were made with {batch.params!r}, "
                                          f"not with the variable's {var.params!r}.")
        if batch.params.num_cohorts != first.params.num_cohorts:
            raise IncompatibleParamsError(f"Variable {var.name!r} has {batch.params.num_cohorts} cohorts, "
                                          f"{variables[0].name!r} has {first.params.num_cohorts}.")
        if len(batch) != len(first):
            msg = (f"Every variable needs one report per client: {variables[0].name!r} has {len(first)} reports, "
                   f"{var.name!r} has {len(batch)}.")
            raise InvalidParameterError(msg)
        if not np.array_equal(batch.cohorts, first.cohorts):
            row = int(np.flatnonzero(batch.cohorts != first.cohorts)[0])
            msg = (f"The reports of one client must share its cohort: report {row} is in cohort "
                   f"{int(first.cohorts[row])} for {variables[0].name!r} but {int(batch.cohorts[row])} for {var.name!r}.")
            raise InvalidParameterError(msg)
    if len(first) == 0:
        raise DecodeError("No report to analyse.")
    return batches, variables


def client_codes(clients: npt.ArrayLike, cohorts: npt.NDArray[np.int64], owner: str) -> npt.NDArray[np.int64]:
    """Each report's client as an integer code (equal ids, equal codes), checked against the reports' cohorts.

    Raises
    ------
    InvalidParameterError
        If there is not one id a report, or a client's reports are in two cohorts (a client
        belongs to one cohort for good: its id names two clients, or the reports are mixed up).
    """
    n_reports = int(cohorts.shape[0])
    ids = np.asarray(clients)
    if ids.ndim != 1 or ids.shape[0] != n_reports:
        msg = (f"The 'clients' parameter of {owner} must hold one client id a report ({n_reports:,}). "
               f"Got shape {ids.shape} instead.")
        raise InvalidParameterError(msg)
    _, codes = np.unique(ids, return_inverse=True)
    out: npt.NDArray[np.int64] = codes.reshape(-1).astype(np.int64)
    conflict = cohort_conflict(out, cohorts)
    if conflict is not None:
        row, earlier = conflict
        msg = (f"The reports of one client are in two cohorts ({int(cohorts[earlier])} and {int(cohorts[row])}, "
               f"report tuple {row + 1} in file order): a client belongs to one cohort for good, so a client id "
               f"must not name two clients.")
        raise InvalidParameterError(msg)
    return out


def fit_bytes(patterns: int, columns: Sequence[int], variables: Sequence[Variable]) -> int:
    """Peak bytes of the likelihoods and the fit for ``patterns`` report tuples and ``columns`` candidates a variable.

    One byte per (candidate, pattern) for a string variable's coded likelihoods (four when
    ``h > 8``); the SQP step's Hessian sample (up to ``HESSIAN_ROWS`` patterns x cells,
    float64) and three ``cells x cells`` matrices (the Hessian, its factor, the
    covariance) plus one Hessian accumulator per row range of a pass
    (:data:`~rappor.analysis.association._threads.MAX_THREADS`); 16 float64 vectors per
    pattern.  A string variable's categories are its candidates plus Other.  An estimate of
    the arrays, not of every temporary.
    """
    cells = 1
    coded = 0
    for count, var in zip(columns, variables):
        categories = count if var.kind == "boolean" else count + 1
        cells *= max(categories, 1)
        if var.kind == "string":
            coded += patterns * count * (1 if var.params.num_hashes <= 8 else 4)
    sample = min(patterns, HESSIAN_ROWS)
    return coded + 8 * sample * cells + (3 + _threads.MAX_THREADS) * 8 * cells * cells + 16 * 8 * patterns


def check_fit_memory(patterns: int, columns: Sequence[int], variables: Sequence[Variable], extra: int = 0) -> None:
    """Refuse a table whose likelihoods and fit (and ``extra`` bytes) cannot fit in memory, naming the sizes and the remedy."""
    sizes = " x ".join(f"{c + (var.kind == 'string')} ({var.name})" for c, var in zip(columns, variables))
    check_memory(fit_bytes(patterns, columns, variables) + extra,
                 f"the association fit of {patterns:,} report tuples over {sizes} categories",
                 remedy="keep the detected candidates (candidates='detected', rappor decode-assoc --categories "
                        "detected) or use fewer candidates")


def client_rows(clients: int, reports: int, selections: Sequence[tuple[Any, ...]], variables: Sequence[Variable],
                budget: int) -> bool:
    """Whether repeated reports are fitted by each client's exact likelihood (rows are clients, _repeats).

    Its dense factors (:func:`~rappor.analysis.association._repeats.client_factor_bytes`) are
    taken up to ``budget`` bytes, and beyond it while they are no larger than the report
    patterns' fit would be with every report tuple its own pattern (:func:`fit_bytes`): R
    reports a client under one PRR differ by their IRRs, so their patterns are about as many as
    the reports.  Else the patterns, with the covariance clustered by client (_clusters).
    Measured (string x boolean, 100 strings, 1 M clients x 10 reports, k=32 m=32 f=0.5, 91
    categories): the factors 1.5 GB against the patterns' 2.2 GB; the patterns took 242 s of CPU
    and 4.7 GB at peak.
    """
    dense = client_factor_bytes(clients, selections)
    return dense <= max(budget, fit_bytes(reports, [len(sel[0]) for sel in selections], variables))
