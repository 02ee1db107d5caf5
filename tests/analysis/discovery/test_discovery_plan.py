"""Planning discovery: parameters for the privacy targets, per-client privacy, predicted share found."""

from __future__ import annotations

import dataclasses
import json
import math
import re

import numpy as np
import pytest

from rappor import Params
from rappor.exceptions import InvalidParameterError
from rappor.cli._main import main
from rappor.analysis.discovery import DiscoverySpec
from rappor.analysis.discovery._oracle import _trimmed_mean_variance
from rappor.analysis.discovery._plan import discovery_frequency, plan_discovery
from rappor.analysis.discovery._search import _thresholds
from rappor.formats import read_discovery_params


def _full(p: float = 0.0) -> Params:
    return Params(num_bloombits=128, num_hashes=2, num_cohorts=64, prob_p=p, prob_q=1.0 - p, prob_f=0.3)


@pytest.mark.parametrize("p", [0.0, 0.3])
def test_discovery_params_meet_the_full_string_privacy(p: float) -> None:
    full = _full(p)
    result = plan_discovery(full, 1_000_000, discovery_share=0.75)
    disc = result.spec.params
    assert disc.num_hashes == 1 and disc.num_cohorts == 32
    assert disc.epsilon_inf == pytest.approx(full.epsilon_inf, rel=1e-9)
    # No instantaneous noise on discovery reports by default (what finds values); irr=True keeps it.
    assert (disc.prob_p, disc.prob_q) == (0.0, 1.0) and not result.irr
    noisy = plan_discovery(full, 1_000_000, discovery_share=0.75, irr=True)
    assert noisy.spec.params.epsilon_one == pytest.approx(full.epsilon_one, rel=1e-6)
    if p > 0:  # the cost of the noise, in the share found
        assert noisy.found_frequency[16] > 2 * result.found_frequency[16]
        assert noisy.found_frequency_other == result.found_frequency
        assert result.found_frequency_other == noisy.found_frequency
    else:
        assert not noisy.irr and noisy.found_frequency_other == {}
    assert result.privacy.epsilon_inf == pytest.approx(full.epsilon_inf, rel=1e-9)  # one report per client
    assert result.n_full_reports + result.n_discovery_reports == 1_000_000
    assert result.n_discovery_reports == 750_000


def test_discovery_frequency_follows_its_formula() -> None:
    # A value of at most one segment is found iff its z-score reaches z_pending in the slot
    # where it is whole: with power 1/2 the share is z_pending * se / n_s exactly.
    params = Params(num_bloombits=256, num_hashes=1, num_cohorts=32, prob_p=0.0, prob_q=1.0,
                    prob_f=2.0 / (1.0 + math.exp(2.0)))
    spec = DiscoverySpec(params=params, max_length=30, segment=2)
    n = 750_000
    n_s = n / spec.levels
    beta = 1.0 / 256
    lam = params.p01 + (params.p11 - params.p01) * beta
    v = lam * (1.0 - lam) / (params.p11 - params.p01) ** 2 / (1.0 - beta) ** 2
    se = math.sqrt(_trimmed_mean_variance(4 / 32) * n_s * v)
    z_pending = _thresholds(spec, 0.25, 0.0, 100.0, None).pending
    assert discovery_frequency(spec, n, value_length=2) == pytest.approx(z_pending * se / n_s, rel=1e-6)
    # Longer values need more slots; more reports find rarer values (about 1 / sqrt(N)).
    shares = [discovery_frequency(spec, n, value_length=length) for length in (2, 8, 16, 30)]
    assert shares == sorted(shares)
    ratio = discovery_frequency(spec, 100 * n, value_length=16) / discovery_frequency(spec, n, value_length=16)
    assert ratio == pytest.approx(0.1, rel=1e-6)


#: Shared-prefix credit of two values (15 prefix slots): one whose 2- and 4-byte prefixes others share, one alone.
_TWO_ROWS = [[0.004, 0.001] + [0.0] * 13, [0.0] * 15]


@pytest.mark.parametrize(("perplexity", "shared"), [(None, None), (10.0, None), (10.0, _TWO_ROWS)])
def test_discovery_frequency_chain_equals_enumerating_the_search_paths(perplexity: float | None,
                                                                       shared: list[list[float]] | None) -> None:
    # The model's two-state chain against every path a 16-byte value can take through its 7 prefix
    # slots: each slot z >= z_extend ("strong") or z_reserve <= z < z_extend ("weak", a reserve),
    # never two reserves in a row; then z_pending in its last slot and z_confirm pooled over the 8 after.
    # With the learnt prior (perplexity P), slots 1 on spread the budgets by the prior
    # 0.9 P**-2 + 0.1 / 65536 of a 2-byte tail (weighted Bonferroni: 1 - Phi(z) = budget * prior).
    # With shared-prefix credit, a prefix slot's share is the value's plus the credit, and the
    # probability found is the mean over the credit rows.
    import itertools

    from scipy.stats import norm

    from rappor.analysis.discovery._plan import _Z_CONFIRM

    params = Params(num_bloombits=256, num_hashes=1, num_cohorts=32, prob_p=0.0, prob_q=1.0,
                    prob_f=2.0 / (1.0 + math.exp(2.0)))
    spec = DiscoverySpec(params=params, max_length=30, segment=2)
    n = 750_000
    beta = 1.0 / 256
    lam = params.p01 + (params.p11 - params.p01) * beta
    unit = math.sqrt(_trimmed_mean_variance(4 / 32) * lam * (1.0 - lam)) / (params.p11 - params.p01) / (1.0 - beta)
    x = discovery_frequency(spec, n, value_length=16, perplexity=perplexity, shared=shared)  # power 1/2
    th = _thresholds(spec, 0.25, 2.0, 100.0, None)
    phi = lambda t: 0.5 * math.erfc(-t / math.sqrt(2.0))  # noqa: E731
    z = x * math.sqrt(n / spec.levels) / unit
    if perplexity is None:
        levels = [(th.extend, th.reserve)] * 7
        z_pending = th.pending
    else:
        prior = 0.9 * perplexity ** -2 + 0.1 / 65536
        levels = [(th.extend, th.reserve)] + [(norm.isf(0.25 * prior), norm.isf(2.25 * prior))] * 6
        z_pending = min(norm.isf(min(100 * prior * 65536 / 65792, 0.5)), th.extend)  # at least z = 0, as the search
    paths = 0.0
    rows = shared or [[0.0] * 15]
    for row in rows:
        zs = [(x + c) * math.sqrt(n / spec.levels) / unit for c in row[:7]]
        steps = [{"s": phi(zc - e), "w": phi(zc - r) - phi(zc - e)} for zc, (e, r) in zip(zs, levels)]
        paths += sum(math.prod(step[c] for step, c in zip(steps, path)) for path in itertools.product("sw", repeat=7)
                     if "ww" not in "".join(path)) / len(rows)
    found = paths * phi(z - z_pending) * phi(x * math.sqrt(n * 8 / spec.levels) / unit - _Z_CONFIRM)
    assert found == pytest.approx(0.5, rel=1e-9)


def test_cli_plan_with_discovery(tmp_path) -> None:
    out, dp = tmp_path / "plan.txt", tmp_path / "dp.csv"
    rc = main(["plan", "--reports", "1000000", "--candidates", "1000", "--no-irr", "--top", "0",
               "--discovery-share", "0.75", "--discovery-params-out", str(dp), "-o", str(out)])
    assert rc == 0
    text = out.read_text()
    assert text.startswith("# 250000 reports")  # the full-string design is planned for (1 - S) N reports
    assert "per client (one report each): eps_inf=4.000" in text
    params, layout = read_discovery_params(dp)  # the file alone gives the clients' layout
    assert params.num_cohorts == 32 and layout == {"max_length": 30, "segment": 2, "slot_weights": None}
    assert main(["plan", "--reports", "1000000", "--candidates", "1000", "--no-irr", "--top", "0",
                 "--discovery-share", "0.75", "--discovery-lengths", "6-15", "--discovery-params-out", str(dp),
                 "-o", str(out)]) == 0
    weights = read_discovery_params(dp)[1]["slot_weights"]
    assert len(weights) == 16 and f"--slot-weights {','.join(map(str, weights))}" in out.read_text()
    assert main(["plan", "--reports", "1000000", "--candidates", "1000", "--json", "--discovery-share", "0.5",
                 "-o", str(out)]) == 0
    data = json.loads(out.read_text())
    assert data["discovery"]["n_discovery_reports"] == 500_000 and data["n_reports"] == 500_000


def test_cli_plan_discovery_params_out_needs_a_share(tmp_path, capsys) -> None:
    rc = main(["plan", "--reports", "1000", "--candidates", "10", "--discovery-params-out", str(tmp_path / "d.csv"),
               "-o", str(tmp_path / "p.txt")])
    assert rc == 1
    assert "--discovery-params-out needs --discovery-share" in capsys.readouterr().err
    assert not (tmp_path / "p.txt").exists() and not (tmp_path / "d.csv").exists()


def test_slot_weights_follow_the_lengths_to_find() -> None:
    from rappor.analysis.discovery import plan_slot_weights, typical_prefix_credit

    spec = DiscoverySpec(params=plan_discovery(_full(), 1000).spec.params, max_length=30, segment=2)
    short = plan_slot_weights(spec, 7_500_000, {n: 1.0 for n in range(6, 16)}, total=64)
    long = plan_slot_weights(spec, 7_500_000, {n: 1.0 for n in range(24, 31)}, total=64)
    assert len(short) == len(long) == spec.levels and sum(short) == sum(long) == 64 and min(short) >= 1
    # 6-15 byte values end by slot 7: the later slots only confirm, and get little.
    assert sum(short[8:]) < sum(short) / 4 < sum(long[8:])
    # The model's share found drops for the lengths asked for (it cannot rise: the search starts alike),
    # under the model the weights were chosen with (the typical shared-prefix credit).
    weighted = DiscoverySpec(params=spec.params, max_length=30, segment=2, slot_weights=short)
    credit = typical_prefix_credit(spec)
    for length in (6, 10, 14):
        assert discovery_frequency(weighted, 7_500_000, value_length=length, shared=credit) < 0.8 * discovery_frequency(
            spec, 7_500_000, value_length=length, shared=credit)


def test_cli_plan_discovery_lengths(tmp_path, capsys) -> None:
    args = ["plan", "--reports", "100000", "--candidates", "100", "--top", "0", "--discovery-share", "0.75"]
    assert main([*args, "--discovery-lengths", "6-15", "--discovery-max-length", "16"]) == 0
    out = capsys.readouterr().out
    weights = re.search(r"--max-length 16 --slot-weights ([0-9,]+)", out).group(1).split(",")
    assert len(weights) == 9  # 8 prefix slots of 2 bytes and the confirmation slot
    found = tmp_path / "found.csv"
    found.write_text("string,proportion,prop_std_error,zscore,pvalue,significant,first_slot,slots\n"
                     "abcdefgh,0.1,0.01,10,1e-9,true,3,12\nxy,0.05,0.01,5,1e-5,false,0,15\n")
    assert main([*args, "--discovery-lengths", str(found)]) == 0
    assert "--slot-weights" in capsys.readouterr().out
    assert main([*args, "--discovery-lengths", "6-40"]) == 1
    assert "expected A-B with 1 <= A <= B <= --discovery-max-length (30)" in capsys.readouterr().err


def test_shared_prefix_credit_sums_the_other_values_with_the_prefix() -> None:
    from rappor.analysis.discovery import shared_prefix_credit

    spec = DiscoverySpec(params=plan_discovery(_full(), 1000).spec.params, max_length=8, segment=2)
    shares = {"q": 0.4, "abcdef": 0.3, "abxy": 0.2, b"abcdzz": 0.1}
    credit = shared_prefix_credit(spec, shares)
    # Rows most frequent first; columns the 4 prefix slots (2, 4, 6, 8 bytes).  A value no longer
    # than a slot's prefix is sent whole (complete) there: it neither has nor gives credit.
    # "ab": abcdef, abxy, abcdzz (0.6); "abcd": abcdef, abcdzz (0.4; abxy is complete in slot 1).
    np.testing.assert_allclose(credit, [[0.0, 0.0, 0.0, 0.0], [0.3, 0.1, 0.0, 0.0], [0.4, 0.0, 0.0, 0.0],
                                        [0.5, 0.3, 0.0, 0.0]], atol=1e-12)
    np.testing.assert_array_equal(shared_prefix_credit(spec, shares, top=2), credit[:2])
    with pytest.raises(InvalidParameterError, match="positive share"):
        shared_prefix_credit(spec, {"a": 0.0})
    with pytest.raises(InvalidParameterError, match=r"shape \(v, 4\)"):
        discovery_frequency(spec, 1000, value_length=4, shared=[[0.1, 0.0]])


def test_typical_prefix_credit_is_the_prefix_probability_at_the_perplexity() -> None:
    from rappor.analysis.discovery import typical_prefix_credit

    spec = DiscoverySpec(params=plan_discovery(_full(), 1000).spec.params, max_length=30, segment=2)
    credit = typical_prefix_credit(spec, 26.0)
    assert credit.shape == (1, 15)
    assert credit[0, 0] == pytest.approx(26.0 ** -2) and credit[0, 1] == pytest.approx(26.0 ** -4)
    assert credit[0, 14] == pytest.approx(26.0 ** -30)


def test_slot_weights_spend_the_shared_first_slots_elsewhere() -> None:
    # Without credit and with the prior, slot 0 (no prior yet) is the model's bottleneck and takes
    # the most; with the typical credit it takes less, and with the credit of values that share their
    # two-byte prefixes (as words and host names do) less again; what it gives up goes to later slots.
    from rappor.analysis.discovery import plan_slot_weights

    spec = DiscoverySpec(params=plan_discovery(_full(), 1000).spec.params, max_length=16, segment=2)
    lengths = {n: 1.0 for n in range(6, 16)}
    none = plan_slot_weights(spec, 7_500_000, lengths, total=64, shared=[[0.0] * 8])
    typical = plan_slot_weights(spec, 7_500_000, lengths, total=64)
    shared = plan_slot_weights(spec, 7_500_000, lengths, total=64, shared=[[0.01] + [0.0] * 7])
    assert sum(none) == sum(typical) == sum(shared) == 64
    assert none[0] == max(none) and shared[0] < typical[0] < none[0]
    # The credit lowers the share found nine times in ten for the lengths asked for.
    cost = lambda w, c: sum(discovery_frequency(dataclasses.replace(spec, slot_weights=w), 7_500_000,  # noqa: E731
                                                value_length=k, power=0.9, shared=c) for k in lengths)
    assert cost(shared, [[0.01] + [0.0] * 7]) < cost(none, [[0.01] + [0.0] * 7])


def test_cli_plan_learns_the_shared_prefixes_from_a_found_csv(tmp_path, capsys) -> None:
    args = ["plan", "--reports", "10000000", "--candidates", "100", "--top", "0", "--no-irr", "--discovery-share",
            "0.75", "--discovery-max-length", "16", "--discovery-lengths"]
    header = "string,proportion,prop_std_error,zscore,pvalue,significant,first_slot,slots\n"
    alone, shared = tmp_path / "alone.csv", tmp_path / "shared.csv"
    alone.write_text(header + "".join(f"{a}{b}qwxyz,0.004,0.001,4,1e-9,true,4,3\n"
                                      for a, b in zip("abcdefgh", "ijklmnop")))
    shared.write_text(header + "".join(f"ab{c}qwxyz,0.004,0.001,4,1e-9,true,4,3\n" for c in "cdefghij"))
    weights = []
    for found in (alone, shared):
        assert main([*args, str(found)]) == 0
        out = capsys.readouterr().out
        weights.append([int(w) for w in re.search(r"--slot-weights ([0-9,]+)", out).group(1).split(",")])
    # Eight 8-byte values sharing "ab" (0.032 in slot 0): slot 0 needs far less.
    assert weights[1][0] < weights[0][0]
