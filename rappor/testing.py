"""The testing hook: the inner parts that ``benchmarks/`` times, compares or varies, named in one place.

Not the public API (no stability promise; not imported by ``import rappor``).  Everything a
user needs is on :mod:`rappor` and its stage packages' faces; what is here exists for the
measurements in ``benchmarks/``, which import nothing else of the package's private modules
(``tests/test_layers.py`` checks it).  Each name says which measurement needs it, stage by
stage in the pipeline's order:

client
    :func:`murmur3_x64_128`, the hand-written vectorised MurmurHash3 (``hand_written.py``
    times it against a loop of ``mmh3`` calls); :func:`hmac_sha256_many` and
    :func:`keyed_hmac_sha256`, HMAC-SHA256 over hashlib's keyed states (``hand_written.py``
    times them against :mod:`hmac`).
simulation
    :func:`bloom_table` and :func:`encode_rows`, the fast simulated encoder's set-up and
    core (``simulate_reports.py`` times the core alone); :func:`draw_counts`, the exact law
    of the counts given each cohort's set bits (``_classes.py`` draws google/rappor's MD5
    Bloom filters with it).
analysis
    :class:`DecodeOptions` and :func:`estimate`, a decode past the decoder's refusal of an
    option combination, with :data:`NULLS` and :data:`CORRECTIONS` (``option_grid.py``);
    :func:`weighted_problem`, :func:`scale_rows` and :func:`cv_lasso`, the screening Lasso's
    inputs and its cross-validation (``penalty.py``); :func:`debias` and :func:`select_rows`,
    the debiased shares and their rows (``oracle_bound.py``; ``cv_products.py`` scores held-out cohorts on them); :func:`shares_inputs`,
    :func:`coordinate_ascent`, :func:`bagged_shares`, :func:`fixed_unexplained`,
    :func:`capped_shares`, :func:`prior_grid` and the shares' constants (:data:`CLEAR_Z`,
    :data:`KEPT_Z`, :data:`PRIOR_CAP_Z`, :data:`BAGGING_GRID`, :data:`N_PRIORS`), the default
    shares' steps, which ``oracle_shares.py`` runs again with one estimate replaced by the
    truth; :func:`ascent_prior` and :func:`npmle_prior`, the coordinate ascent's fitted prior
    and the NPMLE (``u_profile.py`` scores the regression's evidence over the unexplained
    mass); :func:`nonneg_fit`, the
    active-set QP (``hand_written.py``); :func:`reference_conditional_probabilities`,
    :func:`reference_em` and :func:`boundary_interval`, google/rappor's association EM as
    written and our default interval, and :func:`association_pass_threads`, the threads of
    the association fit's passes (``association.py``); :func:`candidate_likelihood`, the association
    likelihood over every candidate without Other, with :func:`fit_mixture`, :func:`observed_covariance`
    and :func:`projected_draws`, its maximum, inverse information and the maximum's boundary law
    (``association_oracle.py``'s bounds); :func:`association_other`, Other's per-client likelihood and
    outside rates replaced, with :class:`ClientSums`, :func:`client_bit_sums`, :func:`client_runs`,
    :func:`client_folds`, :func:`report_folds`, :func:`client_log_terms`, :func:`client_log_factor`,
    :func:`other_prr_rates`, :func:`outside_residual`, :func:`share_directions` and :class:`OutsideNoise`,
    the pieces they are built from (``association_other_rates.py``'s oracles);
    :class:`ConfirmationNull`,
    :func:`tilted_tail_probability` and :func:`discovery_settings`, discovery's confirmation
    law and the search's limits (``discovery_pvalues.py``).
formats
    :func:`parse_report_block` and :func:`parse_report_row`, the reports reader's numpy block
    parser and its row-by-row csv path, with :func:`bitstrings_to_bits`; and
    :func:`map_rows_through_csv_module`, :func:`rappor.formats.read_map` without its fast path
    (``hand_written.py``).
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from ._util.bits import bitstrings_to_bits
from .analysis.association import _threads
from .analysis.association._inference import boundary_interval, projected_draws
from .analysis.association._likelihood import CodedLikelihood, group_reports, likelihood_factors
from .analysis.association import _other, _repeats
from .analysis.association._mixture import ProductLikelihood, fit_mixture
from .analysis.association._other import OutsideNoise, outside_residual, report_folds, share_directions
from .analysis.association._reference import reference_conditional_probabilities, reference_em
from .analysis.association._repeats import ClientSums, client_bit_sums, client_folds, client_runs
from .analysis.association._repeats import _log_terms as client_log_terms
from .analysis.association._repeats import _variable_log_factor as client_log_factor
from .analysis.association._repeats import _prr_rates as other_prr_rates
from .analysis.association._signed import observed_covariance
from .analysis.decoder import _estimate, _shares
from .analysis.decoder._adjust import CORRECTIONS
from .analysis.decoder._estimate import DecodeOptions, estimate
from .analysis.decoder._fit import nonneg_fit
from .analysis.decoder._null import NULLS
from .analysis.decoder._problem import Array, debias, scale_rows, select_rows, weighted_problem
from .analysis.decoder._screen import cv_lasso
from .analysis.decoder._shares import BAGGING_GRID, CLEAR_Z, KEPT_Z, N_PRIORS, PRIOR_CAP_Z, bagged_shares
from .analysis.decoder._shares import _capped as capped_shares
from .analysis.decoder._shares import _grid as prior_grid
from .analysis.decoder._shares import coordinate_ascent, fixed_unexplained, npmle_prior
from .analysis.discovery import _oracle, _search
from .analysis.discovery._confirmation import ConfirmationNull, tilted_tail_probability
from .client._hmac import hmac_sha256_many, keyed_hmac_sha256
from .client._murmur import murmur3_x64_128
from .formats import _map
from .formats._reports_csv import _parse_block as parse_report_block
from .formats._reports_csv import _parse_row as parse_report_row
from .simulation._reports import _bloom_table as bloom_table
from .simulation._reports import _draw_counts as draw_counts
from .simulation._reports import _encode_rows as encode_rows

__all__ = [
    "BAGGING_GRID",
    "CLEAR_Z",
    "ClientSums",
    "OutsideNoise",
    "association_other",
    "client_bit_sums",
    "client_folds",
    "client_log_factor",
    "client_log_terms",
    "client_runs",
    "other_prr_rates",
    "outside_residual",
    "report_folds",
    "share_directions",
    "CORRECTIONS",
    "KEPT_Z",
    "NULLS",
    "N_PRIORS",
    "PRIOR_CAP_Z",
    "ConfirmationNull",
    "ascent_prior",
    "association_pass_threads",
    "DecodeOptions",
    "bagged_shares",
    "bitstrings_to_bits",
    "bloom_table",
    "boundary_interval",
    "candidate_likelihood",
    "capped_shares",
    "coordinate_ascent",
    "cv_lasso",
    "debias",
    "discovery_settings",
    "draw_counts",
    "encode_rows",
    "estimate",
    "fit_mixture",
    "fixed_unexplained",
    "hmac_sha256_many",
    "keyed_hmac_sha256",
    "map_rows_through_csv_module",
    "murmur3_x64_128",
    "nonneg_fit",
    "npmle_prior",
    "observed_covariance",
    "parse_report_block",
    "parse_report_row",
    "prior_grid",
    "projected_draws",
    "reference_conditional_probabilities",
    "reference_em",
    "scale_rows",
    "select_rows",
    "shares_inputs",
    "tilted_tail_probability",
    "weighted_problem",
]


@contextlib.contextmanager
def map_rows_through_csv_module() -> Iterator[None]:
    """Within the block, :func:`rappor.formats.read_map` reads every row with the csv module (no fast path)."""
    split_row = _map._split_row
    _map._split_row = lambda text, width: None
    try:
        yield
    finally:
        _map._split_row = split_row


@contextlib.contextmanager
def association_pass_threads(threads: int) -> Iterator[None]:
    """Within the block, the association fit's passes over the data run on at most ``threads`` threads."""
    limit = _threads.MAX_THREADS
    _threads.MAX_THREADS = int(threads)
    try:
        yield
    finally:
        _threads.MAX_THREADS = limit


@contextlib.contextmanager
def association_other(*, client_log_factor: Callable[..., Any] | None = None,
                      outside_rates: Callable[..., Any] | None = None) -> Iterator[None]:
    """Within the block, the association decoder builds Other with the functions given; each gets the default first.

    Parameters
    ----------
    client_log_factor : callable, optional
        ``client_log_factor(default, params, cmap, columns, other, sums, fold)``: a variable's
        ``log P(client's reports | category)`` up to a per-client constant, shape (clients,
        len(columns) [+ 1]), Other last (the exact likelihood of repeated reports).
    outside_rates : callable, optional
        ``outside_rates(default, aggregate, cmap, shares, share_std_errors, design_effect)``: the
        Bloom-bit rates of the strings outside the candidates, shape (m, k), and their
        :class:`OutsideNoise` or None.
    """
    log_factor, rates = _repeats._variable_log_factor, _other.outside_bit_rates
    if client_log_factor is not None:
        def patched_factor(*args: Any) -> Any:
            return client_log_factor(log_factor, *args)
        _repeats._variable_log_factor = patched_factor  # type: ignore[assignment]
    if outside_rates is not None:
        def patched_rates(aggregate: Any, cmap: Any, shares: Any, share_std_errors: Any = None,
                          design_effect: Any = None) -> Any:
            return outside_rates(rates, aggregate, cmap, shares, share_std_errors, design_effect)
        _other.outside_bit_rates = patched_rates
    try:
        yield
    finally:
        _repeats._variable_log_factor, _other.outside_bit_rates = log_factor, rates


def candidate_likelihood(reports: Any, variables: Any) -> tuple[ProductLikelihood, list[tuple[str, ...]]]:
    """The association likelihood over every candidate of each variable and no Other: ``(likelihood, categories)``.

    The exact model when every client's string is a candidate.  Report tuples impossible under
    every category are left out (as the decoder does).
    """
    batches, variables = list(reports), list(variables)
    patterns = group_reports(batches)
    selections = [(np.arange(len(v.candidate_map), dtype=np.intp), tuple(v.candidate_map.strings), None, None)
                  for v in variables]
    factors, impossible = likelihood_factors(patterns, variables, selections)
    keep = ~impossible
    factors = [f.select(keep) if isinstance(f, CodedLikelihood) else f[keep] for f in factors]
    return ProductLikelihood(factors, patterns.counts[keep].astype(np.float64)), [s[1] for s in selections]


@contextlib.contextmanager
def discovery_settings(*, keep_every_value: bool = False, trim: int | None = None) -> Iterator[None]:
    """Within the block, :func:`rappor.analysis.discovery.discover` runs with other limits.

    Parameters
    ----------
    keep_every_value : bool, default=False
        Keep every pooled value and list it, whatever its z-score (no pruning of values
        whose evidence fell back, no ``z >= 3`` display filter): the search itself and the
        p-values are unchanged.
    trim : int or None, default=None
        Cohorts trimmed at each end of a slot's estimate, in place of ``m // 8``.
    """
    limits = _search._PRUNE_Z, _search._SHOW_Z
    set_null = _oracle.SlotOracle._set_null
    if keep_every_value:
        _search._PRUNE_Z = _search._SHOW_Z = -math.inf
    if trim is not None:
        cut = int(trim)

        def trimmed(self: _oracle.SlotOracle) -> None:
            if self.trim != cut:
                self.trim = cut
                self.trim_factor = _oracle._trimmed_mean_variance(cut / self.cohorts.size)
            set_null(self)

        _oracle.SlotOracle._set_null = trimmed  # type: ignore[method-assign]
    try:
        yield
    finally:
        _search._PRUNE_Z, _search._SHOW_Z = limits
        _oracle.SlotOracle._set_null = set_null  # type: ignore[method-assign]


@contextlib.contextmanager
def shares_inputs() -> Iterator[dict[str, object]]:
    """Within the block, each decode's default shares record their inputs in the dict yielded.

    Keys (the last decode's): ``problem`` (the weighted problem), ``design`` (its whitened
    design), ``fitted`` (the test's fit), ``unexplained`` and ``unexplained_se`` (the reported
    unexplained mass and its standard error), ``skewness_z`` (the residuals' skewness over its
    standard error).  The shares themselves are computed as without the block.
    """
    record: dict[str, object] = {}
    all_shares = _estimate._all_shares

    def recording(problem: object, design: object, fitted: object, unexplained: float, unexplained_se: float,
                  skewness_z: float) -> object:
        record.update(problem=problem, design=design, fitted=fitted, unexplained=unexplained,
                      unexplained_se=unexplained_se, skewness_z=skewness_z)
        return all_shares(problem, design, fitted, unexplained, unexplained_se, skewness_z)  # type: ignore[arg-type]

    _estimate._all_shares = recording  # type: ignore[assignment]
    try:
        yield record
    finally:
        _estimate._all_shares = all_shares


@contextlib.contextmanager
def ascent_prior() -> Iterator[dict[str, object]]:
    """Within the block, :func:`coordinate_ascent` records its prior in the dict yielded.

    Keys (the last ascent's, after its last sweep): ``grid`` (the prior's support, in share
    units) and ``weights`` (its weights after the last EM step).  The ascent computes as
    without the block.
    """
    record: dict[str, object] = {}
    posterior_sums, relaxed = _shares._posterior_sums, _shares._relaxed

    def recording_sums(stat: Array, grid: Array, w: Array, inv_var: Array, **kwargs: Any) -> Any:
        record["grid"] = grid
        return posterior_sums(stat, grid, w, inv_var, **kwargs)

    def recording_relaxed(w: Array, w_em: Array, omega: float) -> Array:
        record["weights"] = out = relaxed(w, w_em, omega)
        return out

    _shares._posterior_sums = recording_sums
    _shares._relaxed = recording_relaxed
    try:
        yield record
    finally:
        _shares._posterior_sums, _shares._relaxed = posterior_sums, relaxed
