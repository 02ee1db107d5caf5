"""Clients that report more than once: the covariance clustered by client (_clusters) and what uses it."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import rappor
from rappor import Params
from rappor.analysis.association import AssociationDecoder, example_joint, simulate_association
from rappor.analysis.association._clusters import cluster_score_products, repeats_clients
from rappor.analysis.association._inputs import client_codes
from rappor.analysis.association._likelihood import group_reports, likelihood_factors
from rappor.analysis.association._mixture import ProductLikelihood
from rappor.exceptions import InvalidParameterError, RapporWarning

PARAMS = Params(num_bloombits=16, num_hashes=2, num_cohorts=8, prob_p=0.25, prob_q=0.75, prob_f=0.5)
#: google/rappor's benchmark privacy (benchmarks/association_recipe.py's "low"), where repeats matter most.
BENCH = Params(num_bloombits=32, num_hashes=2, num_cohorts=32, prob_p=0.25, prob_q=0.75, prob_f=0.5)


def _problem(clients: int, repeats: int, seed: int = 3):
    joint, values, _ = example_joint("string-bool", 6)
    sim = simulate_association(PARAMS, joint, values, clients, reports_per_client=repeats, rng=seed)
    patterns = group_reports(sim.reports, index_reports=True)
    string, boolean = sim.variables
    selections = [(np.arange(6, dtype=np.intp), tuple(string.candidate_map.strings), None, None),
                  (np.arange(2, dtype=np.intp), tuple(boolean.candidate_map.strings), None, None)]
    factors, impossible = likelihood_factors(patterns, sim.variables, selections)
    assert not impossible.any()
    return sim, patterns, ProductLikelihood(factors, patterns.counts.astype(np.float64))


def test_the_simulated_repeats_share_one_permanent_response_a_client() -> None:
    # With p = 0 and q = 1 the IRR is the PRR: a client's reports are identical when its PRR is
    # drawn once, and distinct clients of one value differ where f = 0.5 replaced their bits.
    params = Params(num_bloombits=16, num_hashes=2, num_cohorts=4, prob_p=0.0, prob_q=1.0, prob_f=0.5)
    sim = simulate_association(params, np.full((3, 2), 1 / 6), [["a", "b", "c"], None], 200, reports_per_client=5, rng=0)
    assert sim.report_clients is not None and sim.report_clients.tolist() == np.repeat(np.arange(200), 5).tolist()
    for batch in sim.reports:
        words = batch.words.reshape(200, 5, -1)
        assert (words == words[:, :1]).all()
        assert np.ptp(batch.cohorts.reshape(200, 5), axis=1).max() == 0
    string_words = sim.reports[0].words[::5, 0]
    assert np.unique(string_words).size > 100  # about 8 random bits a client: distinct clients differ


def test_group_reports_keeps_each_report_s_pattern() -> None:
    sim, patterns, _ = _problem(300, 3)
    assert patterns.reports is not None and patterns.reports.shape == (900,)
    assert np.bincount(patterns.reports, minlength=len(patterns)).tolist() == patterns.counts.tolist()
    for var, batch in enumerate(sim.reports):
        assert (patterns.words[var][patterns.reports] == batch.words).all()
        assert (patterns.cohorts[patterns.reports] == batch.cohorts).all()
    # Leaving patterns out marks their reports -1 and renumbers the others.
    keep = np.arange(len(patterns)) % 3 != 0
    kept = patterns.select(keep)
    assert kept.reports is not None
    assert ((kept.reports < 0) == ~keep[patterns.reports]).all()
    inside = kept.reports >= 0
    assert (kept.cohorts[kept.reports[inside]] == patterns.cohorts[patterns.reports[inside]]).all()


def test_the_products_are_the_cross_products_of_each_client_s_reports() -> None:
    # D = sum_i (s_i s_i' - sum_r g_r g_r'), g_r = L_r / (L_r . pi): against a loop over the clients.
    sim, patterns, lik = _problem(400, 3)
    codes = client_codes(sim.report_clients, sim.reports[0].cohorts, "test")
    # Some clients report once: drop two of the reports of every fifth client.
    keep = np.ones(1200, dtype=bool)
    keep[np.flatnonzero(codes % 5 == 0)[np.arange(np.sum(codes % 5 == 0)) % 3 != 0]] = False
    reports = np.where(keep, patterns.reports, -1)
    table = np.random.default_rng(1).dirichlet(np.ones(lik.size))
    rows = lik.take_rows(np.arange(len(patterns)))
    scores = rows / (rows @ table)[:, None]
    expected = np.zeros((lik.size, lik.size))
    for client in range(400):
        mine = np.flatnonzero((codes == client) & keep)
        g = scores[reports[mine]]
        s = g.sum(axis=0)
        expected += np.outer(s, s) - g.T @ g
    got = cluster_score_products(lik, table, reports, codes)
    np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-10 * np.abs(expected).max())
    # Every client once: nothing to add.
    assert not cluster_score_products(lik, table, patterns.reports, np.arange(1200)).any()


def test_client_ids_are_checked_and_coded() -> None:
    cohorts = np.array([4, 1, 4, 0])
    codes = client_codes(["b", "a", "b", "c"], cohorts, "owner")
    assert codes[0] == codes[2] and len(set(codes.tolist())) == 3
    assert repeats_clients(codes) and not repeats_clients(client_codes([1, 2, 3], cohorts[:3], "owner"))
    with pytest.raises(InvalidParameterError, match="one client id a report"):
        client_codes(["a", "b"], cohorts[:3], "owner")
    with pytest.raises(InvalidParameterError, match=r"in two cohorts \(4 and 0, report tuple 4"):
        client_codes(["b", "a", "c", "b"], cohorts, "owner")


def test_one_report_a_client_decodes_as_without_ids() -> None:
    joint, values, _ = example_joint("string-bool", 8)
    sim = simulate_association(PARAMS, joint, values, 5000, rng=2)
    plain = AssociationDecoder(rng=0).decode(sim.reports, sim.variables)
    ided = AssociationDecoder(rng=0).decode(sim.reports, sim.variables, clients=[f"c{i}" for i in range(5000)])
    np.testing.assert_array_equal(plain.proportion, ided.proportion)
    np.testing.assert_array_equal(plain.std_error, ided.std_error)
    assert plain.independence is not None and ided.independence is not None
    assert plain.independence.pvalue == ided.independence.pvalue


@pytest.mark.parametrize("path", ["exact", "clustered"])
def test_repeated_reports_get_honest_standard_errors(path: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # 3,000 clients x 30 reports under one PRR each (string x boolean, 50 Zipf strings, k=32 m=32
    # f=0.5; seeds 20-25, about 117 cells of 0.005 and above).  The signed maximum's z against the
    # truth: with every report its own client, mean z^2 2.35 and +-1.96 coverage 0.829 (measured);
    # clustered by client (the sandwich over the reports' patterns, forced here) 0.84 and 0.957; with the exact likelihood of each client's reports (the default) the model
    # is right and its information honest.  Bounds: 4 standard errors of each statistic for
    # independent cells (z^2 mean: sqrt(2 / cells); coverage: binomial).
    from rappor.analysis.association import _decoder

    if path == "clustered":
        monkeypatch.setattr(_decoder, "client_rows", lambda *args: False)
    joint, values, _ = example_joint("string-bool", 50)
    z, covered = [], []
    for seed in range(20, 26):
        sim = simulate_association(BENCH, joint, values, 3000, reports_per_client=30, rng=seed)
        res = AssociationDecoder(rng=0).decode(sim.reports, sim.variables, clients=sim.report_clients)
        assert res.signed_maximum is not None and res.signed_std_error is not None
        assert res.diagnostics["clients"] == 3000
        if path == "clustered":
            assert "clustered by client" in res.diagnostics["std_error_method"]
        else:
            assert res.diagnostics["likelihood_rows"].startswith("clients") and res.n_patterns == 3000
        truth = sim.truth(res.categories)
        big = truth >= 0.005
        z.extend(((res.signed_maximum - truth) / res.signed_std_error)[big].tolist())
        ci = res.confidence_interval()
        covered.extend(((ci.low <= truth) & (truth <= ci.high))[big].tolist())
    z_arr = np.array(z)
    cells = z_arr.size
    assert cells > 100
    assert abs(float(np.mean(z_arr ** 2)) - 1.0) <= 4 * np.sqrt(2 / cells), np.mean(z_arr ** 2)
    assert np.mean(np.abs(z_arr) <= 1.96) >= 0.95 - 4 * np.sqrt(0.95 * 0.05 / cells)
    assert np.mean(covered) >= 0.95 - 4 * np.sqrt(0.95 * 0.05 / cells)


def test_repeated_reports_with_outside_strings_use_each_client_s_likelihood_and_cover() -> None:
    # 3,000 clients x 30 reports, string x boolean, 50 Zipf strings of which every third is outside
    # the candidates (k=32 m=32 f=0.5; seeds 20-25): Other's outside rates are estimated by fold, a
    # client takes its fold's row and the rates' noise enters through each client's likelihood
    # (_nuisance.client_nuisance_products).  The signed maximum's z against the truth and the
    # intervals over the cells of 0.005 and above: bounds of 4 standard errors as above.
    joint, values, cands = example_joint("string-bool", 50, remove_every=3)
    z, covered, by_fold = [], [], 0
    for seed in range(20, 26):
        sim = simulate_association(BENCH, joint, values, 3000, candidates=cands, reports_per_client=30, rng=seed)
        res = AssociationDecoder(rng=0).decode(sim.reports, sim.variables, clients=sim.report_clients)
        assert res.diagnostics["likelihood_rows"].startswith("clients")
        assert res.signed_maximum is not None and res.signed_std_error is not None
        by_fold += res.diagnostics["other_probabilities"][0].shape[0] > BENCH.num_cohorts
        truth = sim.truth(res.categories)
        big = truth >= 0.005
        z.extend(((res.signed_maximum - truth) / res.signed_std_error)[big].tolist())
        ci = res.confidence_interval()
        covered.extend(((ci.low <= truth) & (truth <= ci.high))[big].tolist())
    assert by_fold >= 4  # the outside strings show in the marginal decode of most collections (5 of 6)
    z_arr = np.array(z)
    cells = z_arr.size
    assert cells > 60
    assert abs(float(np.mean(z_arr ** 2)) - 1.0) <= 4 * np.sqrt(2 / cells), np.mean(z_arr ** 2)
    assert np.mean(covered) >= 0.95 - 4 * np.sqrt(0.95 * 0.05 / cells)


def test_the_exact_client_likelihood_is_the_report_likelihood_for_single_reports() -> None:
    # With one report a client, P(reports | category) is the report's own likelihood: the rows of
    # client_factors equal the report patterns' rows up to a factor a row (both are scaled).
    from rappor.analysis.association._repeats import client_factors, client_reports

    joint, values, cands = example_joint("string-bool", 6, remove_every=3)
    sim = simulate_association(PARAMS, joint, values, 500, candidates=cands, rng=4)
    patterns = group_reports(sim.reports, index_reports=True)
    string, boolean = sim.variables
    # Other's report-level rates as the model makes them: p01 + (p11 - p01) x a Bloom-bit rate.
    other = PARAMS.p01 + (PARAMS.p11 - PARAMS.p01) * np.random.default_rng(0).uniform(0.0, 1.0, size=(8, 16))
    selections = [(np.arange(4, dtype=np.intp), tuple(string.candidate_map.strings) + ("Other",), None, other),
                  (np.arange(2, dtype=np.intp), tuple(boolean.candidate_map.strings), None, None)]
    by_pattern, _ = likelihood_factors(patterns, sim.variables, selections)
    by_client, impossible = client_factors(sim.variables, selections, client_reports(sim.reports, np.arange(500)))
    assert not impossible.any()
    assert patterns.reports is not None
    for mine, theirs in zip(by_client, by_pattern):
        rows = theirs.take(patterns.reports) if hasattr(theirs, "take") else np.asarray(theirs)[patterns.reports]
        ratio = mine / rows
        np.testing.assert_allclose(ratio, np.broadcast_to(ratio[:, :1], ratio.shape), rtol=1e-9)


def test_the_outside_rates_noise_through_each_client_is_the_per_report_term_for_single_reports() -> None:
    # With one report a client the derivative of log P(client's reports | Other) in o[r, j] is the
    # report's x / o - (1 - x) / (1 - o), so G Cov(o) G' over the clients (rows in code order, Other's
    # rates by (fold, cohort)) equals the report patterns' (_nuisance), up to rounding.
    from rappor.analysis.association._nuisance import client_nuisance_products, nuisance_score_products
    from rappor.analysis.association._other import OutsideNoise, report_folds
    from rappor.analysis.association._repeats import client_factors, client_reports

    joint, values, cands = example_joint("string-bool", 6, remove_every=3)
    sim = simulate_association(PARAMS, joint, values, 600, candidates=cands, rng=5)
    folds = report_folds(sim.reports[0].cohorts)
    patterns = group_reports(sim.reports, folds, index_reports=True)
    string, boolean = sim.variables
    gen = np.random.default_rng(1)
    other = PARAMS.p01 + (PARAMS.p11 - PARAMS.p01) * gen.uniform(0.05, 0.95, size=(16, 16))  # (fold, cohort) rows
    noise = OutsideNoise(variance=gen.uniform(0.0, 1e-3, size=other.size), directions=gen.normal(0, 0.01, (other.size, 3)))
    selections = [(np.arange(4, dtype=np.intp), tuple(string.candidate_map.strings) + ("Other",), None, other),
                  (np.arange(2, dtype=np.intp), tuple(boolean.candidate_map.strings), None, None)]
    table = gen.dirichlet(np.ones(10))
    by_pattern, _ = likelihood_factors(patterns, sim.variables, selections)
    theirs = nuisance_score_products(ProductLikelihood(by_pattern, patterns.counts.astype(np.float64)), table, patterns,
                                     [(16, 8, other, noise), None])
    per_client = client_reports(sim.reports, np.arange(600), folds)
    by_client, impossible = client_factors(sim.variables, selections, per_client)
    assert not impossible.any()
    lik = ProductLikelihood(list(by_client), np.ones(600))
    mine = client_nuisance_products(lik, table, sim.variables, selections, [noise, None], per_client, ~impossible)
    assert np.abs(theirs).max() > 0
    np.testing.assert_allclose(mine, theirs, rtol=1e-8, atol=1e-10 * np.abs(theirs).max())


def test_the_exact_client_likelihood_is_closer_than_the_clustered_patterns(monkeypatch: pytest.MonkeyPatch) -> None:
    # 3,000 clients x 30 reports (string x boolean as above, seeds 30-35): TV to the clients' joint,
    # measured 0.095 with each client's exact likelihood against 0.109 with the reports' patterns
    # clustered by client (closer on 5 of 6).  Checked: closer on average, and on at least 4 of 6.
    from rappor.analysis.association import _decoder, total_variation

    joint, values, _ = example_joint("string-bool", 50)
    exact, clustered = [], []
    for seed in range(30, 36):
        sim = simulate_association(BENCH, joint, values, 3000, reports_per_client=30, rng=seed)
        for by_client, out in ((True, exact), (False, clustered)):
            monkeypatch.setattr(_decoder, "client_rows", lambda *args, use=by_client: use)
            res = AssociationDecoder(rng=0).decode(sim.reports, sim.variables, clients=sim.report_clients)
            out.append(total_variation(res.proportion, sim.truth(res.categories)))
    assert np.mean(exact) < np.mean(clustered)
    assert sum(a < b for a, b in zip(exact, clustered)) >= 4


def test_the_independence_test_keeps_its_level_with_repeated_reports(monkeypatch: pytest.MonkeyPatch) -> None:
    # Independent string x boolean (8 strings, P(TRUE) = 0.4 whatever the string), 2,000 clients x
    # 30 reports, k=32 m=32 f=0.5.  Measured over 60 collections (seeds 100-159): rejected at 5% in
    # 1.7% with the reports' patterns clustered by client, in 68% with every report its own client.
    # Here 40 collections with each client's exact likelihood (the default): at a level of 0.05 the
    # rejections are Binomial(40, 0.05), and 8 or more has probability 0.005; 20 with the clustered
    # patterns; and 10 with every report a client, which reject 3 or more unless the level were
    # right (at 0.68, 2 or fewer has probability 0.004).
    values = [f"v{i}" for i in range(8)]
    share = np.array([0.3, 0.2, 0.15, 0.1, 0.1, 0.05, 0.05, 0.05])
    joint = np.outer(share, [0.4, 0.6])
    rejected = rejected_fallback = naive = 0
    for seed in range(40):
        sim = simulate_association(BENCH, joint, [values, None], 2000, reports_per_client=30, rng=seed)
        res = AssociationDecoder(candidates="all", other="none", rng=seed).decode(
            sim.reports, sim.variables, clients=sim.report_clients)
        assert res.independence is not None and res.diagnostics["likelihood_rows"].startswith("clients")
        rejected += res.independence.pvalue <= 0.05
        if seed < 20:  # the reports' patterns clustered by client (the fallback), forced
            from rappor.analysis.association import _decoder

            with monkeypatch.context() as patch:
                patch.setattr(_decoder, "client_rows", lambda *args: False)
                fallback = AssociationDecoder(candidates="all", other="none", rng=seed).decode(
                    sim.reports, sim.variables, clients=sim.report_clients)
            assert fallback.independence is not None and "clustered by client" in fallback.independence.method
            rejected_fallback += fallback.independence.pvalue <= 0.05
        if seed < 10:
            with pytest.warns(RapporWarning, match="look like repeated reports"):
                plain = AssociationDecoder(candidates="all", other="none", rng=seed).decode(sim.reports, sim.variables)
            assert plain.independence is not None
            naive += plain.independence.pvalue <= 0.05
    assert rejected <= 7
    assert rejected_fallback <= 4  # of 20: 5 or more has probability 0.016 at a level of 0.05
    assert naive >= 3


def test_a_client_s_reports_share_a_fold() -> None:
    from rappor.analysis.association._other import report_folds

    codes = np.repeat(np.arange(1000), 7)
    folds = report_folds(np.zeros(7000, dtype=np.int64), clients=codes)
    assert (folds.reshape(1000, 7) == folds[::7, None]).all()
    # Each client's fold is a fair coin: 1000 clients, 4 binomial standard errors of 500.
    assert abs(int((folds[::7] == 0).sum()) - 500) <= 4 * np.sqrt(250)


def test_the_counts_design_effect_is_one_for_single_reports_and_r_for_copies() -> None:
    # Sum of squared deviations of 0/1 values from their mean is exactly N p (1 - p): ratio 1.
    # R identical reports a client (p = 0, q = 1: the IRR is the PRR) multiply both the
    # deviations (by R, squared) and the count (by R): ratio R.
    from rappor.analysis.association._other import bit_count_design_effect

    params = Params(num_bloombits=16, num_hashes=2, num_cohorts=4, prob_p=0.0, prob_q=1.0, prob_f=0.5)
    for repeats in (1, 3):
        sim = simulate_association(params, np.full((3, 2), 1 / 6), [["a", "b", "c"], None], 2000,
                                   reports_per_client=repeats, rng=5)
        clients = np.arange(2000) if sim.report_clients is None else sim.report_clients
        effect = bit_count_design_effect(sim.reports[0], clients)
        assert effect.shape == (4, 16)
        np.testing.assert_allclose(effect, repeats, rtol=1e-12)


def test_repeated_reports_without_ids_are_warned_of() -> None:
    # 3,000 clients x 30 reports decoded without their ids: the marginal decode's dispersion
    # (measured 6.9-7.7, as about 31-35 reports a client) says so; with the ids, or with one
    # report a client, nothing is said.

    joint, values, _ = example_joint("string-bool", 50)

    def said(sim, clients) -> list[str]:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            AssociationDecoder(rng=0).decode(sim.reports, sim.variables, clients=clients)
        return [str(w.message) for w in caught if issubclass(w.category, RapporWarning)]

    repeated = simulate_association(BENCH, joint, values, 3000, reports_per_client=30, rng=0)
    (message,) = said(repeated, None)
    assert "look like repeated reports" in message and "'client' column" in message
    assert said(repeated, repeated.report_clients) == []
    single = simulate_association(BENCH, joint, values, 90_000, rng=0)
    assert said(single, None) == []


@pytest.mark.parametrize("table_limit", [None, 0])
def test_the_terms_looked_up_are_those_computed_element_by_element(table_limit: int | None,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    # log [P q^s (1-q)^(R-s) + (1-P) p^s (1-p)^(R-s)] over (row, bit, R, s) computed once and
    # gathered: the same expression on the same numbers, so equal to the last bit (P = 0 and 1
    # included); with no room for a table (limit 0), computed element by element.
    from rappor.analysis.association import _repeats

    if table_limit is not None:
        monkeypatch.setattr(_repeats, "MAX_TERM_TABLE", table_limit)
    rng = np.random.default_rng(3)
    reports = rng.choice([1, 2, 10, 30], size=500).astype(np.float64)
    ones = rng.binomial(reports[:, None].astype(int), 0.4, size=(500, 16)).astype(np.float64)
    sums = _repeats.ClientSums(np.zeros(500, np.int64), reports, ones)
    for prr in (np.full((1, 16), 0.25), np.ones((1, 16)), np.zeros((1, 16)), rng.uniform(0.01, 0.99, (1, 16))):
        expected = _repeats._direct_log_terms(PARAMS, ones, reports[:, None] - ones, np.broadcast_to(prr, ones.shape))
        np.testing.assert_array_equal(_repeats._log_terms(PARAMS, sums, prr), expected)
    rows = rng.integers(0, 8, size=500)
    prr = rng.uniform(0.01, 0.99, (8, 16))
    expected = _repeats._direct_log_terms(PARAMS, ones, reports[:, None] - ones, prr[rows])
    np.testing.assert_array_equal(_repeats._log_terms(PARAMS, sums, prr, rows), expected)


def test_client_rows_beyond_the_budget_while_no_larger_than_the_patterns() -> None:
    # String x boolean, 90 detected strings + Other, k=32 m=32 (1 byte a coded candidate): a
    # million clients' dense factors take 16 x 1e6 x 93 = 1.49 GB.  With 10 reports a client the
    # patterns' fit would take about 2.2 GB (90 bytes + 16 float64 a pattern): clients' rows, though
    # above a 1 GB budget.  With 1.2 reports a client (1.2 M patterns, 0.27 GB) the patterns.
    from rappor.analysis.association._inputs import client_rows, fit_bytes
    from rappor.analysis.association._repeats import client_factor_bytes

    joint, values, _ = example_joint("string-bool", 50)
    variables = simulate_association(BENCH, joint, values, 10, rng=0).variables
    selections = [(np.arange(90), tuple(range(91)), None, None), (np.arange(2), ("TRUE", "FALSE"), None, None)]
    assert client_factor_bytes(1_000_000, selections) == 16 * 1_000_000 * 93
    assert fit_bytes(10_000_000, [90, 2], variables) > client_factor_bytes(1_000_000, selections) > 1 << 30
    assert client_rows(1_000_000, 10_000_000, selections, variables, 1 << 30)
    assert not client_rows(1_000_000, 1_200_000, selections, variables, 1 << 30)
    assert client_rows(1_000_000, 1_200_000, selections, variables, 2 << 30)  # within the budget


def test_a_dispersion_just_past_the_alarm_is_not_called_repeated_reports() -> None:
    # One report a client, 6 of 100 Zipf strings listed, k=16 m=64 p=0.5 q=0.75 f=0.5: kappa is
    # small there (0.047), so this collection's dispersion (1.157, chi-square p 4e-4; a chance
    # high with outside strings) reads as 4.3 reports a client, and warned before; the low end
    # that chance leaves is 1.4, below WARN_REPORTS.
    from rappor.analysis.association._clusters import WARN_REPORTS
    from rappor.analysis.decoder import explain_dispersion

    joint, values, _ = example_joint("string-bool", 100)
    weak = Params(num_bloombits=16, num_hashes=2, num_cohorts=64, prob_p=0.5, prob_q=0.75, prob_f=0.5)
    sim = simulate_association(weak, joint, values, 100_000, candidates=[list(values[0][:6]), None], rng=902)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RapporWarning)
        res = AssociationDecoder(candidates="all", independence_test=False).decode(sim.reports, sim.variables)
    d = res.marginal_results[0].diagnostics
    counts = rappor.Aggregate.from_reports(sim.reports[0]).counts
    check = explain_dispersion(counts, weak, d.residuals, d.dispersion, d.chi2_pvalue, d.unexplained_mass)
    assert check is not None and check.cause == "repeated reports"
    assert check.reports_per_client >= WARN_REPORTS > check.reports_per_client_low  # the old rule warned


def test_the_clustered_tail_bound_holds_and_decides_strong_dependence() -> None:
    # T <= sum_i lambda_i chi^2_1: the bound is at least that variable's tail (Monte Carlo, 200,000
    # draws: its standard error is at most 0.0011, checked with 4 of them), and at least the
    # chi-square tail when every effect is 1 (T is then chi^2_df).
    from scipy import special

    from rappor.analysis.association._inference import clustered_tail_bound

    rng = np.random.default_rng(0)
    lam = np.concatenate([np.full(30, 1.0), rng.uniform(1.0, 6.0, 20)])
    sums = (rng.standard_normal((200_000, lam.size)) ** 2) @ lam
    for s in (np.quantile(sums, 0.9), np.quantile(sums, 0.99), np.quantile(sums, 0.999)):
        assert clustered_tail_bound(float(s), lam, 40) >= float((sums >= s).mean()) - 4 * 0.0011
    for s in (50.0, 80.0, 150.0):
        assert clustered_tail_bound(s, np.ones(40), 40) >= float(special.chdtrc(40, s)) * (1 - 1e-9)
    # Strong dependence: a statistic far above sum(lambda) is decided without draws (below 1/1001),
    # where lambda_max chi^2_df alone would not be.
    lam = np.concatenate([np.full(400, 1.5), [3.5]])
    assert float(special.chdtrc(409, 1254 / 3.5)) > 1e-3
    assert clustered_tail_bound(1254.0, lam, 409) < 1e-20
    assert clustered_tail_bound(10.0, np.array([np.inf]), 4) == 1.0
