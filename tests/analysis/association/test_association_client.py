"""Several variables per client: Encoder.encode_variables, rappor encode with several columns,
multi-variable privacy, rappor privacy --variables, rappor simulate-assoc and its report."""

from __future__ import annotations

import csv
import hashlib
import json
import struct
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import binomtest

import rappor
from rappor import Encoder, Params
from rappor.analysis.association import AssociationDecoder, Variable, boolean_params, multi_variable_privacy
from rappor.formats._association import read_assoc_reports
from rappor.cli._main import main
from rappor.client import client_secret, encode_clients, prr_uniforms, prr_uniforms_of_variable

PARAMS = Params(num_bloombits=16, num_hashes=2, num_cohorts=8, prob_p=0.5, prob_q=0.75, prob_f=0.5)
NOISELESS_IRR = Params(num_bloombits=16, num_hashes=2, num_cohorts=8, prob_p=0.0, prob_q=1.0, prob_f=0.5)
SECRET = b"0123456789abcdef0123456789abcdef"


def test_variable_prr_follows_the_spec_and_is_domain_separated() -> None:
    # docs/client.md: SHAKE256(b"rappor/prr/v3/var" || uint32(len(name)) || name || T || uint32(len(secret))
    # || secret || uint32(cohort) || value), T = uint64(k) || uint64(h) || uint32(round(f 2**31)).
    name, cohort, value = "domain", 3, "google.com"
    tag = struct.pack(">QQI", 16, 2, 2**30)
    message = (b"rappor/prr/v3/var" + struct.pack(">I", len(name)) + name.encode() + tag + struct.pack(">I", len(SECRET))
               + SECRET + struct.pack(">I", cohort) + value.encode())
    expected = np.frombuffer(hashlib.shake_256(message).digest(64), dtype=">u4")
    np.testing.assert_array_equal(prr_uniforms_of_variable(SECRET, name, cohort, value, PARAMS), expected)
    single = prr_uniforms(SECRET, cohort, value, PARAMS)
    other_var = prr_uniforms_of_variable(SECRET, "other", cohort, value, PARAMS)
    assert not np.array_equal(single, expected) and not np.array_equal(other_var, expected)
    boolean = prr_uniforms_of_variable(SECRET, "flag", cohort, True, boolean_params(PARAMS))
    message = (b"rappor/prr/v3/var" + struct.pack(">I", 4) + b"flag" + struct.pack(">QQI", 1, 1, 2**30)
               + struct.pack(">I", len(SECRET)) + SECRET + struct.pack(">I", cohort) + b"TRUE")
    np.testing.assert_array_equal(boolean, np.frombuffer(hashlib.shake_256(message).digest(4), dtype=">u4"))


def test_encode_variables_gives_one_report_per_variable_in_the_client_cohort() -> None:
    enc = Encoder(PARAMS, SECRET, rng=0)
    reports = enc.encode_variables({"domain": "google.com", "flag": True})
    assert set(reports) == {"domain", "flag"}
    assert reports["domain"].num_bloombits == 16 and reports["flag"].num_bloombits == 1
    assert reports["domain"].cohort == reports["flag"].cohort == enc.cohort
    # The one-variable API is unchanged (golden vectors in data/golden still hold: tests/client/test_derivations.py).
    assert enc.encode("google.com").num_bloombits == 16


def test_encode_variables_prr_is_memoized_and_matches_encode_clients() -> None:
    # With p = 0 and q = 1 the report is the PRR: identical on every call, and equal to the batch encoder's.
    key = b"k" * 32
    secret = client_secret(key, "alice")
    enc = Encoder(NOISELESS_IRR, secret)
    first = enc.encode_variables({"domain": "google.com", "flag": False})
    second = enc.encode_variables({"domain": "google.com", "flag": False})
    assert first["domain"] == second["domain"] and first["flag"] == second["flag"]
    batch = encode_clients(NOISELESS_IRR, key, ["alice"], ["google.com"], variable="domain")
    np.testing.assert_array_equal(batch.bits()[0], first["domain"].bits)
    bbatch = encode_clients(boolean_params(NOISELESS_IRR), key, ["alice"], ["0"], variable="flag", boolean=True)
    np.testing.assert_array_equal(bbatch.bits()[0], first["flag"].bits)
    plain = encode_clients(NOISELESS_IRR, key, ["alice"], ["google.com"])
    assert plain.cohorts[0] == batch.cohorts[0]


def test_boolean_reports_have_the_rates_of_p11_and_p01() -> None:
    # 4,000 clients per value: the count of 1s is Binomial(4000, p11 or p01); p-value > 1e-6
    # fails with probability 1e-6 per check.
    key = b"k" * 32
    bparams = boolean_params(PARAMS)
    ids = [f"c{i}" for i in range(8000)]
    values = ["1"] * 4000 + ["0"] * 4000
    bits = encode_clients(bparams, key, ids, values, rng=1, variable="flag", boolean=True).bits()[:, 0]
    assert binomtest(int(bits[:4000].sum()), 4000, PARAMS.p11).pvalue > 1e-6
    assert binomtest(int(bits[4000:].sum()), 4000, PARAMS.p01).pvalue > 1e-6


def test_multi_variable_privacy_adds_epsilons() -> None:
    cost = multi_variable_privacy(PARAMS, ["string", "boolean", "string"])
    assert cost.total_epsilon_inf == pytest.approx(2 * PARAMS.epsilon_inf + np.log((1 - 0.25) / 0.25))
    p11, p01 = PARAMS.p11, PARAMS.p01
    one_bit = max(abs(np.log(p11 / p01)), abs(np.log((1 - p11) / (1 - p01))))
    assert cost.epsilon_one[1] == pytest.approx(one_bit)
    assert cost.total_epsilon_one == pytest.approx(2 * PARAMS.epsilon_one + one_bit)


def test_one_bit_epsilon_is_the_largest_likelihood_ratio() -> None:
    # Brute force over the two reports of one boolean bit: the exact max log-ratio of P(report | TRUE)
    # and P(report | FALSE) equals the boolean's epsilon_one; and not less (both sides, as OpenDP checks).
    p11, p01 = PARAMS.p11, PARAMS.p01
    worst = max(abs(np.log(p11 / p01)), abs(np.log((1 - p11) / (1 - p01))))
    eps = multi_variable_privacy(PARAMS, ["boolean"]).epsilon_one[0]
    assert eps >= worst - 1e-12 and not eps >= worst * 1.001


def test_privacy_command_prints_the_sum(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rappor.formats.write_params(PARAMS, tmp_path / "p.csv")
    assert main(["privacy", "--params", str(tmp_path / "p.csv"), "--variables", "string,boolean", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    cost = multi_variable_privacy(PARAMS, ["string", "boolean"])
    assert data["variables"]["total_epsilon_inf"] == pytest.approx(cost.total_epsilon_inf)
    assert main(["privacy", "--params", str(tmp_path / "p.csv"), "--variables", "string,integer"]) == 1
    assert "--variables must list 'string' or 'boolean'" in capsys.readouterr().err


def _key(tmp_path: Path) -> Path:
    path = tmp_path / "key.hex"
    path.write_text(bytes(range(7, 39)).hex() + "\n")
    path.chmod(0o600)
    return path


def test_encode_several_columns_then_decode_assoc(tmp_path: Path) -> None:
    params = Params(num_bloombits=16, num_hashes=2, num_cohorts=16, prob_p=0.25, prob_q=0.75, prob_f=0.2)
    rappor.formats.write_params(params, tmp_path / "p.csv")
    rng = np.random.default_rng(0)
    n = 20000
    domain = rng.choice(["a", "b", "c"], size=n, p=[0.5, 0.3, 0.2])
    p_true = {"a": 0.9, "b": 0.5, "c": 0.1}
    flag = [("true" if rng.random() < p_true[d] else "false") for d in domain]
    with open(tmp_path / "values.csv", "w", newline="") as fh:
        fh.write("client,domain,flag\n")
        fh.writelines(f"c{i},{d},{f}\n" for i, (d, f) in enumerate(zip(domain, flag)))
    assert main(["encode", str(tmp_path / "values.csv"), "--params", str(tmp_path / "p.csv"), "--key-file",
                 str(_key(tmp_path)), "--bool", "flag", "--seed", "3", "-o", str(tmp_path / "reports.csv")]) == 0
    (tmp_path / "cands.txt").write_text("a\nb\nc\n")
    out = tmp_path / "joint.csv"
    assert main(["decode-assoc", "--params", str(tmp_path / "p.csv"), "--reports", str(tmp_path / "reports.csv"),
                 "--var1", "domain", "--candidates1", str(tmp_path / "cands.txt"), "--var2", "flag", "--bool",
                 "--categories", "all", "-o", str(out)]) == 0
    with open(out, newline="") as fh:
        rows = {(r["domain"], r["flag"]): r for r in csv.DictReader(fh)}
    for d in "abc":
        truth = p_true[d]
        row = rows[(d, "TRUE")]
        # P(flag | domain) within 4 standard errors (false failure about 6e-5 per check).
        assert abs(float(row["given_domain"]) - truth) < 4 * float(row["given_domain_std_error"]) + 0.01


def test_encode_several_columns_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rappor.formats.write_params(PARAMS, tmp_path / "p.csv")
    key = str(_key(tmp_path))
    (tmp_path / "v.csv").write_text("client,domain,flag\nc0,a,1\nc1,b\n")
    assert main(["encode", str(tmp_path / "v.csv"), "--params", str(tmp_path / "p.csv"), "--key-file", key,
                 "-o", str(tmp_path / "o.csv")]) == 1
    assert "v.csv:3: expected 3 comma-separated fields" in capsys.readouterr().err
    assert not (tmp_path / "o.csv").exists()
    (tmp_path / "v.csv").write_text("client,domain,flag\nc0,a,yes\n")
    assert main(["encode", str(tmp_path / "v.csv"), "--params", str(tmp_path / "p.csv"), "--key-file", key,
                 "--bool", "flag", "-o", str(tmp_path / "o.csv")]) == 1
    assert "v.csv:2: expected a boolean (1, 0, true or false) for 'flag', found 'yes'" in capsys.readouterr().err
    assert main(["encode", str(tmp_path / "v.csv"), "--params", str(tmp_path / "p.csv"), "--key-file", key,
                 "--bool", "nope", "-o", str(tmp_path / "o.csv")]) == 1
    assert "v.csv:1: the boolean column 'nope' is not in the header" in capsys.readouterr().err


def test_simulate_assoc_writes_every_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("matplotlib")
    out = tmp_path / "sim"
    assert main(["simulate-assoc", "--out", str(out), "--clients", "20000", "--unique", "20",
                 "--remove-every", "5"]) == 0
    for name in ("params.csv", "reports.csv", "map1.csv", "truth.csv", "assoc-results.csv", "metrics.json",
                 "report.html"):
        assert (out / name).exists(), name
    metrics = json.loads((out / "metrics.json").read_text())["metrics"]
    assert 0 <= metrics["total_variation"] <= 1 and metrics["true_other_mass"] > 0
    page = (out / "report.html").read_text()
    assert page.count("data:image/png;base64,") == 1 and "epsilons add" in page
    assert "total variation" in capsys.readouterr().out
    # The written reports decode with rappor decode-assoc.
    params = rappor.formats.read_params(out / "params.csv")
    data = read_assoc_reports(out / "reports.csv", ["value", "flag"], [params, boolean_params(params)])
    cmap = rappor.formats.read_map(out / "map1.csv", params)
    res = AssociationDecoder().decode(data.batches, [Variable.string("value", cmap), Variable.boolean("flag", params)])
    assert res.shape[1] == 2


def test_simulate_assoc_string_by_string(tmp_path: Path) -> None:
    out = tmp_path / "sim"
    assert main(["simulate-assoc", "--out", str(out), "--pair", "string-string", "--clients", "20000",
                 "--unique", "6", "--unique2", "3", "--no-report"]) == 0
    assert (out / "map2.csv").exists() and not (out / "report.html").exists()


def test_encode_several_columns_skips_bad_rows_and_uses_workers(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    # rappor encode with several value columns goes through rappor.engines._encode: --on-error
    # skip and --jobs work as for one variable (the former encoder refused --on-error skip).
    rappor.formats.write_params(PARAMS, tmp_path / "p.csv")
    key = str(_key(tmp_path))
    rows = "".join(f"c{i},v{i % 3},{i % 2}\n" for i in range(40))
    (tmp_path / "v.csv").write_text("client,domain,flag\n" + rows + "bad,x,maybe\n")
    common = ["encode", str(tmp_path / "v.csv"), "--params", str(tmp_path / "p.csv"), "--key-file", key,
              "--bool", "flag", "--seed", "5", "--on-error", "skip"]
    assert main([*common, "--jobs", "1", "-o", str(tmp_path / "one.csv")]) == 0
    err = capsys.readouterr().err
    assert "skipped 1 bad row(s); 40 clients written" in err
    assert (tmp_path / "one.csv.rejects.csv").read_text().splitlines()[1] == \
        f'{tmp_path / "v.csv"},42,"expected a boolean (1, 0, true or false) for \'flag\', found \'maybe\'","bad,x,maybe"'
    assert main([*common, "--jobs", "2", "-o", str(tmp_path / "two.csv")]) == 0
    assert (tmp_path / "one.csv").read_bytes() == (tmp_path / "two.csv").read_bytes()
    assert (tmp_path / "one.csv").read_text().splitlines()[0] == "client,cohort,domain,flag"
