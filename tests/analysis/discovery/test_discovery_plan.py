"""Planning discovery: parameters for the privacy targets, per-client privacy, predicted share found."""

from __future__ import annotations

import json
import math
import re

import pytest

from rappor import Params
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


@pytest.mark.parametrize("perplexity", [None, 10.0])
def test_discovery_frequency_chain_equals_enumerating_the_search_paths(perplexity: float | None) -> None:
    # The model's two-state chain against every path a 16-byte value can take through its 7 prefix
    # slots: each slot z >= z_extend ("strong") or z_reserve <= z < z_extend ("weak", a reserve),
    # never two reserves in a row; then z_pending in its last slot and z_confirm pooled over the 8 after.
    # With the learnt prior (perplexity P), slots 1 on spread the budgets by the prior
    # 0.9 P**-2 + 0.1 / 65536 of a 2-byte tail (weighted Bonferroni: 1 - Phi(z) = budget * prior).
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
    x = discovery_frequency(spec, n, value_length=16, perplexity=perplexity)  # power 1/2
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
    steps = [{"s": phi(z - e), "w": phi(z - r) - phi(z - e)} for e, r in levels]
    paths = sum(math.prod(step[c] for step, c in zip(steps, path)) for path in itertools.product("sw", repeat=7)
                if "ww" not in "".join(path))
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
    from rappor.analysis.discovery import plan_slot_weights

    spec = DiscoverySpec(params=plan_discovery(_full(), 1000).spec.params, max_length=30, segment=2)
    short = plan_slot_weights(spec, 7_500_000, {n: 1.0 for n in range(6, 16)}, total=64)
    long = plan_slot_weights(spec, 7_500_000, {n: 1.0 for n in range(24, 31)}, total=64)
    assert len(short) == len(long) == spec.levels and sum(short) == sum(long) == 64 and min(short) >= 1
    # 6-15 byte values end by slot 7: the later slots only confirm, and get little.
    assert sum(short[8:]) < sum(short) / 4 < sum(long[8:])
    # The model's share found drops for the lengths asked for (it cannot rise: the search starts alike).
    weighted = DiscoverySpec(params=spec.params, max_length=30, segment=2, slot_weights=short)
    for length in (6, 10, 14):
        assert discovery_frequency(weighted, 7_500_000, value_length=length) < 0.8 * discovery_frequency(
            spec, 7_500_000, value_length=length)


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
