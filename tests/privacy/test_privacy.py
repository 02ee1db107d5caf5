"""Tests for rappor.privacy._accounting: closed forms against exact enumeration, zCDP, conversions, composition.

Brute force: every output of the permanent randomized response (PRR) and of one full
report (IRR over PRR, enumerated through every PRR) is listed with exact rational
probabilities (fractions.Fraction) for Bloom filters of k = 4..6 bits and h = 1..2 hashes.
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest

from rappor import Params
from rappor.privacy import _accounting as P
from rappor.exceptions import InvalidParameterError
from rappor.client._hashing import bloom_bits


# ----------------------------------------------------------------------------- enumeration helpers


def _log(fr: Fraction) -> float:
    """Natural log of a positive Fraction without overflowing a float."""
    return math.log(fr.numerator) - math.log(fr.denominator)


def _prr_dist(bloom: tuple[int, ...], f: Fraction) -> dict[tuple[int, ...], Fraction]:
    keep, flip = 1 - f / 2, f / 2
    out = {}
    for y in itertools.product((0, 1), repeat=len(bloom)):
        pr = Fraction(1)
        for b, yi in zip(bloom, y):
            pr *= keep if b == yi else flip
        out[y] = pr
    return out


def _report_dist(bloom: tuple[int, ...], p: Fraction, q: Fraction, f: Fraction) -> dict[tuple[int, ...], Fraction]:
    """One report: sum over every PRR of P(prr | bloom) P(irr | prr); p11/p01 are NOT used."""
    prr = _prr_dist(bloom, f)
    out = {}
    for y in itertools.product((0, 1), repeat=len(bloom)):
        total = Fraction(0)
        for s, ps in prr.items():
            pr = ps
            for si, yi in zip(s, y):
                one = q if si else p
                pr *= one if yi else 1 - one
            total += pr
        out[y] = total
    return out


def _max_log_ratio(a: dict, b: dict) -> float:
    return max(_log(a[y] / b[y]) for y in a)


def _renyi(a: dict, b: dict, alpha: int) -> float:
    """Exact D_alpha for an integer alpha >= 2: the sum is a Fraction, only the final log is float."""
    s = sum(a[y] ** alpha * b[y] ** (1 - alpha) for y in a)
    return _log(s) / (alpha - 1)


def _kl(a: dict, b: dict) -> float:
    return sum(float(a[y]) * _log(a[y] / b[y]) for y in a)


def _filter(k: int, ones: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(1 if i in ones else 0 for i in range(k))


def _params(k: int, h: int, p: Fraction, q: Fraction, f: Fraction) -> Params:
    return Params(num_bloombits=k, num_hashes=h, num_cohorts=1, prob_p=float(p), prob_q=float(q), prob_f=float(f))


def _holds_tightly(brute: float, closed: float) -> None:
    """The bound holds at the value and fails just below it (from both sides)."""
    assert brute <= closed * (1 + 1e-12)
    assert not brute <= closed * (1 - 1e-9)


# Exact dyadic parameters (floats represent them exactly).
CASES = [
    (Fraction(1, 2), Fraction(3, 4), Fraction(1, 2)),   # google/rappor's demo p, q, f
    (Fraction(1, 4), Fraction(3, 4), Fraction(1, 4)),
    (Fraction(1, 8), Fraction(7, 8), Fraction(1, 8)),
    (Fraction(0), Fraction(1), Fraction(3, 4)),         # no IRR: one report == PRR
]


# ----------------------------------------------------------------------------- pure epsilon by brute force


@pytest.mark.parametrize("k,h", [(4, 1), (4, 2), (5, 2), (6, 2)])
@pytest.mark.parametrize("case", CASES[:3])
def test_epsilon_inf_is_the_tight_prr_bound(k: int, h: int, case: tuple[Fraction, ...]) -> None:
    p, q, f = case
    b1, b2 = _filter(k, tuple(range(h))), _filter(k, tuple(range(h, 2 * h)))  # disjoint: differ in 2h bits
    d1, d2 = _prr_dist(b1, f), _prr_dist(b2, f)
    brute = max(_max_log_ratio(d1, d2), _max_log_ratio(d2, d1))
    _holds_tightly(brute, _params(k, h, p, q, f).epsilon_inf)


@pytest.mark.parametrize("k,h", [(4, 1), (4, 2), (5, 2)])
@pytest.mark.parametrize("case", CASES)
def test_epsilon_one_is_the_tight_report_bound(k: int, h: int, case: tuple[Fraction, ...]) -> None:
    p, q, f = case
    b1, b2 = _filter(k, tuple(range(h))), _filter(k, tuple(range(h, 2 * h)))
    d1, d2 = _report_dist(b1, p, q, f), _report_dist(b2, p, q, f)
    brute = max(_max_log_ratio(d1, d2), _max_log_ratio(d2, d1))
    _holds_tightly(brute, _params(k, h, p, q, f).epsilon_one)


@pytest.mark.parametrize("h", [1, 2])
def test_disjoint_filters_are_the_worst_pair_over_all_pairs(h: int) -> None:
    # Every pair of Bloom filters with 1..h ones in k = 4 bits: none beats the closed forms.
    k, (p, q, f) = 4, CASES[1]
    filters = [_filter(k, ones) for r in range(1, h + 1) for ones in itertools.combinations(range(k), r)]
    prr = {b: _prr_dist(b, f) for b in filters}
    rep = {b: _report_dist(b, p, q, f) for b in filters}
    worst_prr = max(_max_log_ratio(prr[a], prr[b]) for a in filters for b in filters)
    worst_rep = max(_max_log_ratio(rep[a], rep[b]) for a in filters for b in filters)
    params = _params(k, h, p, q, f)
    _holds_tightly(worst_prr, params.epsilon_inf)
    _holds_tightly(worst_rep, params.epsilon_one)


def test_two_concrete_strings_with_disjoint_filters_attain_epsilon_inf() -> None:
    # Real hashing: find two strings whose Bloom filters (k=6, h=2, cohort 0) share no bit.
    p, q, f = CASES[0]
    params = _params(6, 2, p, q, f)
    bits = {f"v{i}": set(bloom_bits(f"v{i}", 0, params).tolist()) for i in range(50)}
    pairs = [(a, b) for a, b in itertools.combinations(bits, 2)
             if len(bits[a]) == 2 and len(bits[b]) == 2 and not bits[a] & bits[b]]
    assert pairs, "no two of 50 strings hash to disjoint bits (probability ~0)"
    a, b = pairs[0]
    fa, fb = _filter(6, tuple(bits[a])), _filter(6, tuple(bits[b]))
    brute = _max_log_ratio(_prr_dist(fa, f), _prr_dist(fb, f))
    _holds_tightly(brute, params.epsilon_inf)


# ----------------------------------------------------------------------------- Renyi curves by brute force


@pytest.mark.parametrize("k,h", [(4, 1), (4, 2), (5, 2)])
@pytest.mark.parametrize("case", CASES[:3])
def test_rdp_matches_enumeration(k: int, h: int, case: tuple[Fraction, ...]) -> None:
    p, q, f = case
    params = _params(k, h, p, q, f)
    b1, b2 = _filter(k, tuple(range(h))), _filter(k, tuple(range(h, 2 * h)))
    dists = {"permanent": (_prr_dist(b1, f), _prr_dist(b2, f)),
             "report": (_report_dist(b1, p, q, f), _report_dist(b2, p, q, f))}
    alphas = [2, 3, 5, 10]
    for kind, (d1, d2) in dists.items():
        closed = P.rdp(params, [1.0, *alphas, math.inf], kind=kind)
        brute = [_kl(d1, d2)] + [_renyi(d1, d2, a) for a in alphas] + [_max_log_ratio(d1, d2)]
        np.testing.assert_allclose(closed, brute, rtol=1e-10)


def test_rdp_report_is_symmetric_in_the_pair() -> None:
    p, q, f = CASES[0]
    b1, b2 = _filter(4, (0, 1)), _filter(4, (2, 3))
    d1, d2 = _report_dist(b1, p, q, f), _report_dist(b2, p, q, f)
    assert _renyi(d1, d2, 3) == pytest.approx(_renyi(d2, d1, 3), rel=1e-12)


def test_rdp_composes_over_reports(params: Params) -> None:
    orders = [1.5, 2.0, 8.0]
    np.testing.assert_allclose(P.rdp(params, orders, reports=7), 7 * P.rdp(params, orders))


def test_rdp_limits_are_pure_epsilons(params: Params) -> None:
    assert P.rdp(params, [math.inf])[0] == pytest.approx(params.epsilon_one, rel=1e-12)
    assert P.rdp(params, [math.inf], kind="permanent")[0] == pytest.approx(params.epsilon_inf, rel=1e-12)


def test_rdp_is_nondecreasing_in_order(params: Params) -> None:
    curve = P.rdp(params, P.DEFAULT_ORDERS)
    assert np.all(np.diff(curve) >= -1e-12)


def test_binary_rr_rdp_matches_enumeration() -> None:
    r = Fraction(3, 4)
    a, b = {0: r, 1: 1 - r}, {0: 1 - r, 1: r}
    np.testing.assert_allclose(P.binary_rr_rdp(0.75, [2, 3, 7]), [_renyi(a, b, x) for x in (2, 3, 7)], rtol=1e-12)


def test_renyi_divergence_infinite_when_support_differs() -> None:
    assert np.isinf(P.renyi_divergence([0.5, 0.5], [1.0, 0.0], [2.0])).all()


def test_renyi_divergence_fail_order_below_one() -> None:
    with pytest.raises(InvalidParameterError, match="orders"):
        P.renyi_divergence([0.5, 0.5], [0.5, 0.5], [0.5])


# ----------------------------------------------------------------------------- zCDP


@pytest.mark.parametrize("eps", [0.1, 0.5, 1.0, math.log(3), 3.0, 6.0])
def test_tight_rho_of_binary_rr_is_its_kl_divergence(eps: float) -> None:
    # sup_alpha D_alpha / alpha is the alpha -> 1 limit, eps tanh(eps/2) (found numerically),
    # below the classic eps^2/2 of Bun-Steinke Prop. 1.4.
    r = math.exp(eps) / (1 + math.exp(eps))
    rho = P.tight_rho(lambda a: P.binary_rr_rdp(r, a))
    assert rho == pytest.approx(eps * math.tanh(eps / 2), rel=1e-9)
    assert rho <= P.pure_dp_to_zcdp(eps)


def test_rho_prr_bounds_the_enumerated_curve_and_is_attained() -> None:
    p, q, f = CASES[0]
    params = _params(4, 2, p, q, f)
    rho = P.rho_zcdp(params, kind="permanent")
    d1, d2 = _prr_dist(_filter(4, (0, 1)), f), _prr_dist(_filter(4, (2, 3)), f)
    for a in range(2, 30):
        assert _renyi(d1, d2, a) <= rho * a * (1 + 1e-12)
    assert _kl(d1, d2) == pytest.approx(rho, rel=1e-9)  # the supremum (alpha -> 1) is attained in the limit
    assert rho < P.pure_dp_to_zcdp(params.epsilon_inf)


def test_rho_zcdp_composes(params: Params) -> None:
    assert P.rho_zcdp(params, kind="report", reports=5) == pytest.approx(5 * P.rho_zcdp(params, kind="report"))


def test_rho_zcdp_infinite_without_prr() -> None:
    params = Params(num_bloombits=4, num_hashes=1, num_cohorts=1, prob_p=0.25, prob_q=0.75, prob_f=0.0)
    assert math.isinf(P.rho_zcdp(params, kind="permanent"))
    assert math.isfinite(P.rho_zcdp(params, kind="report"))


# ----------------------------------------------------------------------------- conversions and composition


def _hockey_stick(a: dict, b: dict, eps: float) -> float:
    """Exact delta(eps) = sum_y max(0, P(y) - e^eps Q(y)) (the smallest delta for this eps)."""
    return sum(max(0.0, float(a[y]) - math.exp(eps) * float(b[y])) for y in a)


def _product(d: dict, t: int) -> dict:
    out = {}
    for ys in itertools.product(d, repeat=t):
        pr = Fraction(1)
        for y in ys:
            pr *= d[y]
        out[ys] = pr
    return out


@pytest.mark.parametrize("delta", [1e-2, 1e-3])
def test_rdp_conversion_is_valid_against_exact_hockey_stick(delta: float) -> None:
    # T = 3 reports of changing values, k = 3, h = 1: 512 outcomes enumerated exactly.
    p, q, f = CASES[1]
    params = _params(3, 1, p, q, f)
    one = (_report_dist(_filter(3, (0,)), p, q, f), _report_dist(_filter(3, (1,)), p, q, f))
    d1, d2 = _product(one[0], 3), _product(one[1], 3)
    eps, _ = P.epsilon_from_rdp(P.DEFAULT_ORDERS, P.rdp(params, P.DEFAULT_ORDERS, reports=3), delta)
    assert _hockey_stick(d1, d2, eps) <= delta
    assert _hockey_stick(d2, d1, eps) <= delta
    # and the exact curve at order 2 equals 3x the one-report closed form
    assert _renyi(d1, d2, 2) == pytest.approx(P.rdp(params, [2.0], reports=3)[0], rel=1e-10)


def test_optimal_conversion_never_worse_than_mironov(params: Params) -> None:
    curve = P.rdp(params, P.DEFAULT_ORDERS, reports=20)
    opt, _ = P.epsilon_from_rdp(P.DEFAULT_ORDERS, curve, 1e-6)
    mir, _ = P.epsilon_from_rdp(P.DEFAULT_ORDERS, curve, 1e-6, method="mironov")
    assert opt < mir


def test_optimal_conversion_of_zcdp_beats_classic_formula() -> None:
    rho, delta = 0.5, 1e-6
    orders = P.DEFAULT_ORDERS
    opt, _ = P.epsilon_from_rdp(orders, rho * orders, delta)
    assert opt < P.epsilon_from_zcdp(rho, delta)
    # Bun-Steinke Prop. 1.3 by hand: 0.5 + 2 sqrt(0.5 ln 1e6) = 5.7565...
    assert P.epsilon_from_zcdp(rho, delta) == pytest.approx(0.5 + 2 * math.sqrt(0.5 * math.log(1e6)))


def test_advanced_composition_value() -> None:
    # Dwork-Roth Thm 3.20 by hand: sqrt(2*100*ln(1e5))*0.1 + 100*0.1*(e^0.1 - 1)
    expected = math.sqrt(200 * math.log(1e5)) * 0.1 + 10 * (math.exp(0.1) - 1)
    assert P.advanced_composition(0.1, 100, 1e-5) == pytest.approx(expected)
    assert P.basic_composition(0.1, 100) == pytest.approx(10.0)


def test_loss_reuses_params_epsilons(params: Params) -> None:
    pl = P.loss(params)
    assert pl.epsilon_one == params.epsilon_one
    assert pl.epsilon_inf == params.epsilon_inf
    assert pl.rho_zcdp_prr_classic == pytest.approx(params.epsilon_inf ** 2 / 2)


def test_loss_one_report_best_bound_is_pure(params: Params) -> None:
    pl = P.loss(params, reports=1)
    assert pl.epsilon_delta == pytest.approx(params.epsilon_one)


def test_loss_many_reports_rdp_beats_basic_and_advanced(params: Params) -> None:
    pl = P.loss(params, reports=200, delta=1e-6)
    assert pl.epsilon_rdp < pl.epsilon_zcdp < pl.epsilon_basic
    assert pl.epsilon_rdp < pl.epsilon_advanced
    assert pl.epsilon_delta == pl.epsilon_rdp


def test_loss_epsilon_grows_with_reports(params: Params) -> None:
    values = [P.loss(params, reports=t).epsilon_delta for t in (1, 2, 5, 20, 100)]
    assert values == sorted(values)


def test_privacy_loss_table_and_dict(params: Params) -> None:
    pl = P.loss(params, reports=3)
    names = [row[0] for row in pl.table()]
    assert {"epsilon_one", "epsilon_inf", "rho_zcdp_prr", "epsilon_delta"} <= set(names)
    assert pl.as_dict()["reports"] == 3


@pytest.mark.parametrize("kwargs, match", [
    ({"reports": 0}, "reports"),
    ({"delta": 0.0}, "delta"),
    ({"delta": 1.0}, "delta"),
])
def test_loss_fail_bad_arguments(params: Params, kwargs: dict, match: str) -> None:
    with pytest.raises(InvalidParameterError, match=match):
        P.loss(params, **kwargs)


def test_rdp_fail_bad_kind(params: Params) -> None:
    with pytest.raises(InvalidParameterError, match="kind"):
        P.rdp(params, [2.0], kind="forever")  # type: ignore[arg-type]


_PARAMS16 = Params(num_bloombits=16, num_hashes=2, num_cohorts=8, prob_p=0.5, prob_q=0.75, prob_f=0.5)


@pytest.mark.parametrize(("call", "name"), [
    (lambda: P.basic_composition(1.0, 10**400), "reports"),  # OverflowError
    (lambda: P.advanced_composition(1.0, 10**400, 1e-6), "reports"),
    (lambda: P.loss(_PARAMS16, reports=10**400), "reports"),  # OverflowError
    (lambda: P.rho_zcdp(_PARAMS16, kind="report", reports=10**400), "reports"),
    (lambda: P.basic_composition(math.nan, 3), "epsilon"),  # returned nan
    (lambda: P.basic_composition(-1.0, 3), "epsilon"),  # returned -3.0
    (lambda: P.basic_composition(-math.inf, 3), "epsilon"),
    (lambda: P.advanced_composition(math.nan, 3, 1e-6), "epsilon"),  # returned nan
    (lambda: P.advanced_composition(-0.5, 3, 1e-6), "epsilon"),
    (lambda: P.pure_dp_to_zcdp(-math.inf), "epsilon"),  # returned inf
    (lambda: P.epsilon_from_zcdp(-math.inf, 1e-6), "rho"),  # returned inf
    (lambda: P.loss(_PARAMS16, delta=1e-309), "delta"),  # a subnormal delta: epsilon_advanced was inf
    (lambda: P.advanced_composition(1.0, 3, 5e-324), "delta"),
    (lambda: P.loss(_PARAMS16, delta=math.nan), "delta"),
])
def test_bad_numbers_are_refused_naming_the_argument(call, name) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(InvalidParameterError, match=f"The '{name}' parameter of ") as info:
        call()
    assert len(str(info.value)) < 300  # a 400-digit value is shown by its length


def test_smallest_normal_delta_gives_finite_epsilons() -> None:
    """-ln(delta) instead of ln(1/delta): 1/delta overflows near the smallest delta."""
    pl = P.loss(_PARAMS16, reports=10, delta=2.3e-308)
    assert all(math.isfinite(v) and v > 0 for v in (pl.epsilon_advanced, pl.epsilon_zcdp, pl.epsilon_rdp))
    assert P.advanced_composition(1.0, 10, 2.3e-308) == pytest.approx(
        math.sqrt(20 * -math.log(2.3e-308)) + 10 * math.expm1(1.0), rel=1e-12)
    assert P.basic_composition(math.inf, 2) == math.inf  # no privacy is a valid answer
