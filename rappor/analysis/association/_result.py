"""The result of an association analysis (private; re-exported by :mod:`rappor.analysis.association`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from ..._util.results import ConfidenceInterval
from ..._util.table import TextTable, labelled_table
from ..._util.validation import check_probability
from ...exceptions import InvalidParameterError
from ._inference import boundary_interval, conditional_distribution, marginal_distribution


__all__ = ["AssociationResult", "Distribution", "IndependenceTest"]

Array = npt.NDArray[np.float64]
_RESERVED = ("proportion", "std_error", "prop_low_95", "prop_high_95")


class Distribution(NamedTuple):
    """A marginal or conditional distribution with its standard errors.

    Attributes
    ----------
    categories : tuple of tuple of str
        Labels of each axis.
    proportion : ndarray
    std_error : ndarray
        Same shape as ``proportion`` (delta method from the joint covariance).
    """

    categories: tuple[tuple[str, ...], ...]
    proportion: Array
    std_error: Array


@dataclass(frozen=True, slots=True, kw_only=True)
class IndependenceTest:
    """Likelihood-ratio test that the variables are independent.

    Attributes
    ----------
    statistic : float
        ``2 (l_joint - sum_j l_j)``.
    df : int
        ``prod C_j - 1 - sum_j (C_j - 1)``.
    pvalue : float
        Share of draws of the statistic's law under independence (boundary included) at
        least as large as ``statistic``; or, when the chi-square(df) upper tail is already
        below what the draws resolve, that tail (an upper bound: the law is stochastically
        smaller than chi-square when cells are near 0).
    method : str
        Which of the two, with the number of draws.
    """

    statistic: float
    df: int
    pvalue: float
    method: str = "likelihood-ratio"


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class AssociationResult:
    """The estimated joint distribution of two or three RAPPOR-encoded variables.

    Attributes
    ----------
    variables : tuple of str
        Variable names, in the order of the table's axes.
    categories : tuple of tuple of str
        Categories of each variable: its candidates (the detected ones by default), then
        ``"Other"`` (strings that are not among them) when modelled; ``("TRUE", "FALSE")``
        for a boolean.
    proportion : ndarray of shape (C_1, C_2[, C_3])
        Estimated share of clients in each cell (sums to 1).
    std_error : ndarray, same shape
        Standard errors (inverse observed information on the simplex); ``nan`` when not
        computed, ``inf`` for cells the data cannot resolve.
    covariance : ndarray of shape (cells, cells) or None
        Covariance of the flattened table (C order).
    n_reports : int
        Report tuples analysed (after dropping impossible ones).
    n_patterns : int
        Distinct ``(cohort, bits)`` tuples among them.
    method : str
        ``"sqp"`` or ``"em"``.
    iterations, max_iterations : int
    converged : bool
        Whether ``gap <= tolerance``.
    gap : float
        Certified bound on how far the log-likelihood is below its maximum.
    tolerance : float
    log_likelihood : float
        Up to an additive constant.
    independence : IndependenceTest or None
    marginal_results : tuple
        The marginal :class:`~rappor.DecodeResult` of each string variable (``None`` for
        booleans and when the candidates were given).
    diagnostics : dict
        Timings, reports dropped, the other category's method and its bit probabilities.
    profile_interval : ConfidenceInterval or None
        Profile-likelihood intervals of the cells at ``profile_level``
        (``AssociationDecoder(profile_level=...)``), or ``None``.
    profile_level : float or None
    projected_law : ndarray of float32 of shape (draws, cells) or None
        Draws of the estimate's projected-normal law (flat cells, C order), whose upper
        quantiles raise the intervals' upper ends near the boundary
        (:func:`~rappor.analysis.association._inference.boundary_interval`); ``None`` for Wald
        intervals (``AssociationDecoder(intervals="wald")``, tables above 512 cells).
    maximum_likelihood : ndarray or None
        The maximum-likelihood table when :attr:`proportion` is not it: its Other totals set
        to the marginal decodes' (``AssociationDecoder(other_share="marginal")``) and/or its
        empirical-Bayes shrinkage (``AssociationDecoder(shrinkage="conditionals" | "boolean-split")``);
        the intervals are those of this table, widened where needed to hold :attr:`proportion`.
    signed_maximum, signed_std_error : ndarray or None
        The maximum of the likelihood over *signed* tables (cells may be negative, the sum
        is 1) and its inverse-information standard errors, shaped like :attr:`proportion`:
        the centre and half-width / z of the intervals (``AssociationDecoder(intervals="signed")``,
        the default; :mod:`rappor.analysis.association._signed`).  ``None`` for the other
        intervals and where that maximum does not exist.
    signed_covariance : ndarray of shape (cells, cells) or None
        The signed maximum's covariance (inverse information on the simplex, flat cells in C
        order), whose diagonal gives ``signed_std_error``: for the standard error of a sum of
        cells.
    selection_shift : ndarray or None
        How far choosing the categories from the same reports is expected to have moved the
        signed maximum (:mod:`rappor.analysis.association._selection`); the signed intervals
        also cover ``signed_maximum - selection_shift``.  ``None`` when no category was chosen
        by a detection.
    """

    variables: tuple[str, ...]
    categories: tuple[tuple[str, ...], ...]
    proportion: Array
    std_error: Array
    covariance: Array | None
    n_reports: int
    n_patterns: int
    method: str
    iterations: int
    max_iterations: int
    converged: bool
    gap: float
    tolerance: float
    log_likelihood: float
    independence: IndependenceTest | None = None
    marginal_results: tuple[Any, ...] = ()
    diagnostics: dict[str, Any] = field(default_factory=dict)
    profile_interval: ConfidenceInterval | None = None
    profile_level: float | None = None
    projected_law: npt.NDArray[np.floating[Any]] | None = field(default=None, repr=False, compare=False)
    maximum_likelihood: Array | None = field(default=None, repr=False, compare=False)
    signed_maximum: Array | None = field(default=None, repr=False, compare=False)
    signed_std_error: Array | None = field(default=None, repr=False, compare=False)
    signed_covariance: Array | None = field(default=None, repr=False, compare=False)
    selection_shift: Array | None = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        for name in ("proportion", "std_error"):
            arr = np.array(getattr(self, name), dtype=np.float64, copy=True)
            arr.flags.writeable = False
            object.__setattr__(self, name, arr)
        for name in ("covariance", "signed_covariance"):
            if getattr(self, name) is not None:
                cov = np.array(getattr(self, name), dtype=np.float64, copy=True)
                cov.flags.writeable = False
                object.__setattr__(self, name, cov)
        if self.projected_law is not None:
            law = np.array(self.projected_law, dtype=np.float32, copy=True)
            law.flags.writeable = False
            object.__setattr__(self, "projected_law", law)
        for name in ("signed_maximum", "signed_std_error", "selection_shift"):
            value = getattr(self, name)
            if value is not None:
                arr = np.array(value, dtype=np.float64, copy=True).reshape(self.proportion.shape)
                arr.flags.writeable = False
                object.__setattr__(self, name, arr)
        shape = tuple(len(c) for c in self.categories)
        if self.proportion.shape != shape or self.std_error.shape != shape or len(self.variables) != len(shape):
            msg = f"AssociationResult: a table of shape {shape} was expected, got {self.proportion.shape}."
            raise InvalidParameterError(msg)

    @property
    def shape(self) -> tuple[int, ...]:
        """The table's shape, one axis per variable."""
        return tuple(len(c) for c in self.categories)

    def _axis(self, variable: int | str, what: str) -> int:
        if isinstance(variable, str):
            if variable not in self.variables:
                msg = f"The {what!r} parameter must name a variable of {self.variables}. Got {variable!r} instead."
                raise InvalidParameterError(msg)
            return self.variables.index(variable)
        if isinstance(variable, bool) or not isinstance(variable, (int, np.integer)) or not 0 <= variable < len(self.variables):
            msg = f"The {what!r} parameter must be a variable name or an axis in [0, {len(self.variables) - 1}]. Got {variable!r} instead."
            raise InvalidParameterError(msg)
        return int(variable)

    def confidence_interval(self, confidence_level: float = 0.95) -> ConfidenceInterval:
        """Intervals of the cells at ``confidence_level``.

        Profile-likelihood intervals when the decode computed them at this level
        (``AssociationDecoder(profile_level=...)``); otherwise, by default
        (``AssociationDecoder(intervals="signed")``), ``signed_maximum ± z * signed_std_error``
        clipped to ``[0, 1]`` and widened where needed to hold :attr:`proportion`
        (:mod:`rappor.analysis.association._signed`), and extended to cover the same interval
        around ``signed_maximum - selection_shift`` (:mod:`rappor.analysis.association._selection`);
        with ``intervals="projected"``
        ``proportion ± z * std_error`` clipped to ``[0, 1]``, with the upper end raised to the
        ``(1 + level) / 2`` quantile of the estimate's projected-normal law
        (:func:`~rappor.analysis.association._inference.boundary_interval`).  With a shrunk
        :attr:`proportion`, the interval of :attr:`maximum_likelihood`, widened to hold it.

        Returns
        -------
        ConfidenceInterval
            ``low`` and ``high``, arrays shaped like :attr:`proportion` (``[0, 1]`` where the
            standard error is infinite, ``nan`` where it was not computed).
        """
        level = check_probability(confidence_level, "confidence_level", "AssociationResult.confidence_interval",
                                  open_low=True, open_high=True)
        if self.profile_interval is not None and self.profile_level == level:
            low, high = self.profile_interval.low, self.profile_interval.high
        elif self.signed_maximum is not None and self.signed_std_error is not None:
            low, high = boundary_interval(self.signed_maximum, self.signed_std_error, None, level)
            if self.selection_shift is not None:
                moved = boundary_interval(self.signed_maximum - self.selection_shift, self.signed_std_error, None, level)
                low, high = np.fmin(low, moved[0]), np.fmax(high, moved[1])
            low, high = np.fmin(low, self.proportion), np.fmax(high, self.proportion)
        else:
            center = self.proportion if self.maximum_likelihood is None else self.maximum_likelihood
            low, high = boundary_interval(center, self.std_error, self.projected_law, level)
        if self.maximum_likelihood is not None:  # the shrunk estimate lies in its own interval
            low, high = np.fmin(low, self.proportion), np.fmax(high, self.proportion)
        return ConfidenceInterval(low=low, high=high)

    def marginal(self, variable: int | str) -> Distribution:
        """The estimated distribution of one variable (summing the table over the others)."""
        axis = self._axis(variable, "variable")
        probs, se = marginal_distribution(self.proportion, self.covariance, axis)
        return Distribution(categories=(self.categories[axis],), proportion=probs, std_error=se)

    def conditional(self, given: int | str) -> Distribution:
        """``P(other variables | given)``: each slice of the table along ``given`` divided by its total.

        For two variables ``x`` (axis 0) and ``y`` (axis 1), ``conditional("y").proportion[i, j]``
        is ``P(x = i | y = j)``.  ``nan`` where the given category has estimated share 0.
        """
        axis = self._axis(given, "given")
        probs, se = conditional_distribution(self.proportion, self.covariance, axis)
        return Distribution(categories=self.categories, proportion=probs, std_error=se)

    def table(self, confidence_level: float = 0.95) -> Any:
        """:meth:`table_array` as a labelled table: a :class:`pandas.DataFrame` where pandas is
        installed, else a :class:`~rappor._util.table.TextTable` (which prints aligned)."""
        return labelled_table(self.table_array(confidence_level))

    def _repr_html_(self) -> str:
        """The result in a notebook: the table of cells (``_repr_html_``)."""
        return TextTable(self.table_array())._repr_html_()

    def table_array(self, confidence_level: float = 0.95) -> npt.NDArray[Any]:
        """One row per cell (first variable outermost): the categories, the share, its SE and interval.

        With two variables, also ``given_<v2>`` = P(v1 | v2) and ``given_<v1>`` = P(v2 | v1),
        each with its ``_std_error``.
        """
        interval = self.confidence_interval(confidence_level)
        index = np.indices(self.shape).reshape(len(self.shape), -1)
        width = max([len(c) for cats in self.categories for c in cats] + [1])
        fields: list[tuple[str, Any]] = [(name, f"U{width}") for name in self.variables]
        fields += [(name, "f8") for name in _RESERVED]
        extra = self._conditional_columns()
        fields += [(name, "f8") for name, _ in extra]
        out = np.zeros(index.shape[1], dtype=fields)
        for axis, name in enumerate(self.variables):
            out[name] = np.asarray(self.categories[axis], dtype=object)[index[axis]]
        out["proportion"] = self.proportion.reshape(-1)
        out["std_error"] = self.std_error.reshape(-1)
        out["prop_low_95"] = interval.low.reshape(-1)
        out["prop_high_95"] = interval.high.reshape(-1)
        for name, values in extra:
            out[name] = values
        return out

    def _conditional_columns(self) -> list[tuple[str, Array]]:
        if len(self.variables) != 2:
            return []
        cols: list[tuple[str, Array]] = []
        for given in (1, 0):
            dist = self.conditional(given)
            name = f"given_{self.variables[given]}"
            cols.append((name, dist.proportion.reshape(-1)))
            cols.append((f"{name}_std_error", dist.std_error.reshape(-1)))
        return cols

    def summary(self) -> dict[str, Any]:
        """A JSON-ready summary: sizes, convergence, the independence test and timings."""
        test = self.independence
        return {
            "variables": list(self.variables),
            "categories": [list(c) for c in self.categories],
            "estimate_dimensions": list(self.shape),
            "sum_estimates": float(self.proportion.sum()),
            "num_reports": self.n_reports,
            "num_patterns": self.n_patterns,
            "method": self.method,
            "num_em_iters": self.iterations,
            "max_iterations": self.max_iterations,
            "converged": self.converged,
            "log_likelihood_gap": self.gap,
            "tolerance": self.tolerance,
            "independence": None if test is None else {
                "method": test.method, "statistic": test.statistic, "df": test.df, "pvalue": test.pvalue},
            **{key: value for key, value in self.diagnostics.items() if key != "other_probabilities"},
        }


def check_variable_names(names: Sequence[str]) -> None:
    """Names must be distinct and not a column of :meth:`AssociationResult.table`."""
    if len(set(names)) != len(names):
        msg = f"The variables must have distinct names. Got {list(names)}."
        raise InvalidParameterError(msg)
    clash = [n for n in names if n in _RESERVED or n.startswith("given_")]
    if clash:
        msg = f"Variable names cannot be {_RESERVED} or start with 'given_'. Got {clash[0]!r}."
        raise InvalidParameterError(msg)
