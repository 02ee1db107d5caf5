"""``rappor decode-assoc``: google/rappor's inputs and outputs, our simpler form, Parquet, bad input."""

from __future__ import annotations

import csv
import json
import shutil
import warnings
from pathlib import Path

import numpy as np
import pytest

import rappor
from rappor.analysis.association import AssociationDecoder, Variable, boolean_params, simulate_association
from rappor.formats._association import read_assoc_reports, write_assoc_parquet, write_assoc_reports
from rappor.cli._main import main
from rappor.exceptions import ConvergenceWarning
from rappor.params import Params
from rappor.formats._map import read_map, write_map

GOOGLE = Path(__file__).parents[1] / "data" / "assoc_google"


def _rows(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def _google_args(reports: Path, out: Path, *extra: str) -> list[str]:
    return ["decode-assoc", "--metric-name", "m", "--schema", str(GOOGLE / "rappor-vars.csv"),
            "--params-dir", str(GOOGLE), "--reports", str(reports), "--var1", "domain", "--var2", "flag..HTTPS",
            "--map1", str(GOOGLE / "domain_map.csv"), "--create-bool-map", "--output-dir", str(out), *extra]


class _FixedMarginal:
    """A decoder stand-in returning google/rappor's marginal decode of ``domain``."""

    def __init__(self, strings: tuple[str, ...]) -> None:
        rows = {r["string"]: float(r["proportion"]) for r in _rows(GOOGLE / "reference_output" / "marginal-domain.csv")}
        self.detected = np.array([s in rows for s in strings])
        self.proportion = np.array([rows.get(s, 0.0) for s in strings])

    def decode(self, aggregate: object, cmap: object) -> "_FixedMarginal":
        return self


def test_em_with_reference_other_equals_decode_assoc_r() -> None:
    # google/rappor's decode_assoc.R output (20 EM iterations, its GetOtherProbs, see
    # tests/data/assoc_google/README.md) is reproduced to 1e-10 given its marginal decode.
    params = rappor.formats.read_params(GOOGLE / "m_params.csv")
    names = ["domain", "flag..HTTPS"]
    cmap = read_map(GOOGLE / "domain_map.csv", params)
    variables = [Variable.string("domain", cmap), Variable.boolean("flag..HTTPS", params)]
    data = read_assoc_reports(GOOGLE / "reports.csv", names, [v.params for v in variables])
    dec = AssociationDecoder(other="reference", method="em", max_iterations=20, tolerance=0.0,
                             decoder=_FixedMarginal(cmap.strings), shrinkage="none")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        res = dec.decode(data.batches, variables)
    expected = {(r["domain"], r["flag..HTTPS"]): float(r["proportion"])
                for r in _rows(GOOGLE / "reference_output" / "assoc-results.csv")}
    assert res.iterations == 20
    for i, s in enumerate(res.categories[0]):
        for j, b in enumerate(res.categories[1]):
            assert res.proportion[i, j] == pytest.approx(expected[(s, b)], abs=1e-10)


def test_google_form_writes_assoc_results_and_metrics(tmp_path: Path) -> None:
    assert main(_google_args(GOOGLE / "reports.csv", tmp_path)) == 0
    lines = (tmp_path / "assoc-results.csv").read_text().splitlines()
    reference = (GOOGLE / "reference_output" / "assoc-results.csv").read_text().splitlines()
    # google/rappor's columns first, then ours; the boolean varies fastest, Other last.
    assert lines[0] == reference[0] + ',"std_error","prop_low_95","prop_high_95"'
    assert [line.split(",")[0] for line in lines[1:]] == ['"TRUE"', '"FALSE"'] * 4
    assert [line.split(",")[1] for line in lines[1:]][-2:] == ['"Other"', '"Other"']
    metrics = json.loads((tmp_path / "assoc-metrics.json").read_text())
    for key in ("num_reports", "reports_sample_size", "estimate_dimensions", "sum_estimates",
                "total_elapsed_time", "em_elapsed_time", "num_em_iters"):
        assert key in metrics
    assert metrics["num_reports"] == 5000 and metrics["converged"] is True
    assert metrics["sum_estimates"] == pytest.approx(1.0)


def test_our_form_writes_the_table_and_summary(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out, summary = tmp_path / "r.csv", tmp_path / "s.json"
    code = main(["decode-assoc", "--params", str(GOOGLE / "m_params.csv"), "--reports", str(GOOGLE / "reports.csv"),
                 "--var1", "domain", "--map1", str(GOOGLE / "domain_map.csv"), "--var2", "flag..HTTPS", "--bool",
                 "-o", str(out), "--summary", str(summary)])
    assert code == 0
    rows = _rows(out)
    assert list(rows[0]) == ["domain", "flag..HTTPS", "proportion", "std_error", "prop_low_95", "prop_high_95",
                             "given_flag..HTTPS", "given_flag..HTTPS_std_error", "given_domain",
                             "given_domain_std_error"]
    assert sum(float(r["proportion"]) for r in rows) == pytest.approx(1.0)
    data = json.loads(summary.read_text())
    assert data["independence"]["df"] == 3 and 0 <= data["independence"]["pvalue"] <= 1
    # One line on stderr says what was written (and nothing with --quiet).
    shape = " x ".join(str(n) for n in data["estimate_dimensions"])
    assert capsys.readouterr().err == (f"rappor: decoded the joint table of domain, flag..HTTPS ({shape} cells) from "
                                       f"{data['num_reports']:,} reports; wrote {out}, {summary}\n")
    assert main(["decode-assoc", "--params", str(GOOGLE / "m_params.csv"), "--reports", str(GOOGLE / "reports.csv"),
                 "--var1", "domain", "--map1", str(GOOGLE / "domain_map.csv"), "--var2", "flag..HTTPS", "--bool",
                 "-o", str(out), "--quiet"]) == 0
    assert capsys.readouterr().err == ""


def test_no_independence_test_skips_it(tmp_path: Path) -> None:
    out, summary = tmp_path / "r.csv", tmp_path / "s.json"
    code = main(["decode-assoc", "--params", str(GOOGLE / "m_params.csv"), "--reports", str(GOOGLE / "reports.csv"),
                 "--var1", "domain", "--map1", str(GOOGLE / "domain_map.csv"), "--var2", "flag..HTTPS", "--bool",
                 "-o", str(out), "--summary", str(summary), "--no-independence-test"])
    assert code == 0
    data = json.loads(summary.read_text())
    assert data["independence"] is None and data["independence_seconds"] == 0.0
    assert sum(float(r["proportion"]) for r in _rows(out)) == pytest.approx(1.0)


def test_profile_intervals_reach_the_csv(tmp_path: Path) -> None:
    out, summary = tmp_path / "r.csv", tmp_path / "s.json"
    code = main(["decode-assoc", "--params", str(GOOGLE / "m_params.csv"), "--reports", str(GOOGLE / "reports.csv"),
                 "--var1", "domain", "--map1", str(GOOGLE / "domain_map.csv"), "--var2", "flag..HTTPS", "--bool",
                 "-o", str(out), "--summary", str(summary), "--no-independence-test", "--intervals", "profile"])
    assert code == 0
    assert json.loads(summary.read_text())["interval_method"] == "profile likelihood at 0.95"
    rows = _rows(out)
    wald = [float(r["proportion"]) + 1.959964 * float(r["std_error"]) for r in rows]
    # Not the Wald upper ends: the profile's follow the likelihood (equal only by accident).
    assert any(abs(float(r["prop_high_95"]) - w) > 1e-4 for r, w in zip(rows, wald))
    assert all(float(r["prop_low_95"]) <= float(r["proportion"]) <= float(r["prop_high_95"]) for r in rows)


def test_default_intervals_are_signed_and_projected_and_wald_are_options(tmp_path: Path) -> None:
    args = ["decode-assoc", "--params", str(GOOGLE / "m_params.csv"), "--reports", str(GOOGLE / "reports.csv"),
            "--var1", "domain", "--map1", str(GOOGLE / "domain_map.csv"), "--var2", "flag..HTTPS", "--bool",
            "--no-independence-test", "--shrinkage", "none", "--other-share", "fit"]
    runs = {}
    for i, option in enumerate(([], ["--intervals", "projected"], ["--intervals", "wald"])):
        out, summary = tmp_path / f"r{i}.csv", tmp_path / f"s{i}.json"
        assert main([*args, "-o", str(out), "--summary", str(summary), *option]) == 0
        runs[json.loads(summary.read_text())["interval_method"]] = _rows(out)
    assert set(runs) == {"signed maximum", "projected", "wald"}
    for r in runs["wald"]:
        assert float(r["prop_high_95"]) == pytest.approx(min(float(r["proportion"]) + 1.959964 * float(r["std_error"]), 1.0),
                                                         abs=1e-6)
    # Same estimates and lower ends; the projected upper ends are never lower than Wald's.
    for p, w in zip(runs["projected"], runs["wald"]):
        assert p["proportion"] == w["proportion"] and p["prop_low_95"] == w["prop_low_95"]
        assert float(p["prop_high_95"]) >= float(w["prop_high_95"]) - 1e-9
    # The signed intervals: same estimates, each interval holds its estimate, and they are not Wald's.
    for s, w in zip(runs["signed maximum"], runs["wald"]):
        assert s["proportion"] == w["proportion"]
        assert float(s["prop_low_95"]) <= float(s["proportion"]) <= float(s["prop_high_95"])
    assert any(s["prop_high_95"] != w["prop_high_95"] for s, w in zip(runs["signed maximum"], runs["wald"]))


def test_reports_sample_size_analyses_a_sample(tmp_path: Path) -> None:
    assert main(_google_args(GOOGLE / "reports.csv", tmp_path, "--reports-sample-size", "1000")) == 0
    metrics = json.loads((tmp_path / "assoc-metrics.json").read_text())
    assert metrics["num_reports"] == 1000 and metrics["reports_read"] == 5000


def test_parquet_reports_give_the_csv_results(tmp_path: Path) -> None:
    pytest.importorskip("pyarrow")
    params = rappor.formats.read_params(GOOGLE / "m_params.csv")
    names = ["domain", "flag..HTTPS"]
    data = read_assoc_reports(GOOGLE / "reports.csv", names, [params, rappor.analysis.association.boolean_params(params)])
    write_assoc_parquet(tmp_path / "r.parquet", data.batches, names)
    back = read_assoc_reports(tmp_path / "r.parquet", names, [b.params for b in data.batches])
    for a, b in zip(data.batches, back.batches):
        np.testing.assert_array_equal(a.words, b.words)
        np.testing.assert_array_equal(a.cohorts, b.cohorts)
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    assert main(_google_args(GOOGLE / "reports.csv", tmp_path / "a")) == 0
    assert main(_google_args(tmp_path / "r.parquet", tmp_path / "b")) == 0
    assert (tmp_path / "a" / "assoc-results.csv").read_text() == (tmp_path / "b" / "assoc-results.csv").read_text()


def test_parquet_bit_string_columns_are_read(tmp_path: Path) -> None:
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    table = pa.table({"cohort": [0, 1], "s": ["10100000", None], "b": ["1", "0"]})
    pq.write_table(table, tmp_path / "t.parquet")
    params = rappor.formats.read_params(GOOGLE / "m_params.csv")
    bparams = rappor.analysis.association.boolean_params(params)
    with pytest.raises(rappor.ReportFormatError, match=r"t.parquet: row 2: blank value of variable 's'"):
        read_assoc_reports(tmp_path / "t.parquet", ["s", "b"], [params, bparams])
    data = read_assoc_reports(tmp_path / "t.parquet", ["s", "b"], [params, bparams], remove_bad_rows=True)
    assert data.removed == 1 and data.batches[0].bitstrings() == ["10100000"]


# ----------------------------------------------------------------------------- bad input


def _bad_reports(tmp_path: Path, rows: list[str]) -> Path:
    path = tmp_path / "reports.csv"
    path.write_text("client,cohort,domain,flag..HTTPS\n" + "\n".join(rows) + "\n")
    return path


@pytest.mark.parametrize(("row", "message"), [
    ("c1,0,1010101,1", r"reports.csv:3: variable 'domain': expected a bit string of 8 characters, found 7"),
    ("c1,0,1010101x,1", r"reports.csv:3: variable 'domain': expected only '0' and '1'"),
    ("c1,128,10101010,1", r"reports.csv:3: expected a cohort, an integer in \[0, 127\], found '128'"),
    ("c1,x,10101010,1", r"reports.csv:3: expected a cohort"),
    ("c1,0,10101010,11", r"reports.csv:3: variable 'flag..HTTPS': expected a bit string of 1 characters"),
    ("c1,0,10101010", r"reports.csv:3: expected 4 comma-separated columns"),
    ("c1,0,,1", r"reports.csv:3: blank value of variable 'domain' \(pass --remove-bad-rows"),
    ("c1,0,10101010,", r"reports.csv:3: blank value of variable 'flag..HTTPS'"),
])
def test_bad_report_rows_name_the_file_and_line(tmp_path: Path, capsys: pytest.CaptureFixture[str], row: str,
                                                message: str) -> None:
    path = _bad_reports(tmp_path, ["c0,3,00110000,1", row])
    assert main(_google_args(path, tmp_path)) == 1
    err = capsys.readouterr().err
    assert err.startswith("rappor: error: ") and "Traceback" not in err
    assert __import__("re").search(message, err), err
    assert not (tmp_path / "assoc-results.csv").exists()


def test_remove_bad_rows_drops_blank_rows(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    good = (GOOGLE / "reports.csv").read_text().splitlines()[1:]
    path = _bad_reports(tmp_path, good + ["c0,0,10101010,", "c0,0,,0"])
    assert main(_google_args(path, tmp_path, "--remove-bad-rows")) == 0
    assert "removed 2 row(s) with a blank value; 5000 left" in capsys.readouterr().err
    assert json.loads((tmp_path / "assoc-metrics.json").read_text())["num_reports"] == 5000


def test_only_bad_rows_exit_with_status_9(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # decode_assoc.R quits with status 9 when nothing is left to analyse.
    path = _bad_reports(tmp_path, ["c0,0,10101010,", "c0,0,,0"])
    assert main(_google_args(path, tmp_path, "--remove-bad-rows")) == 9
    assert f"rappor: error: {path}: no reports to analyse (2 removed with a blank value)" in capsys.readouterr().err
    header_only = _bad_reports(tmp_path, [])
    assert main(_google_args(header_only, tmp_path)) == 9  # the file is named (it was not)
    assert f"rappor: error: {header_only}: no reports to analyse (a header and no row)" in capsys.readouterr().err


def test_missing_column_and_map_of_other_params(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "reports.csv"
    path.write_text("client,cohort,domain\nc0,0,10101010\n")
    assert main(_google_args(path, tmp_path)) == 1
    assert "reports.csv:1: expected a column 'flag..HTTPS' in the header" in capsys.readouterr().err
    other = rappor.Params(num_bloombits=16, num_hashes=1, num_cohorts=128, prob_p=0.25, prob_q=0.75, prob_f=0.5)
    write_map(rappor.hash_candidates(["a", "b"], other), tmp_path / "map16.csv")
    args = _google_args(GOOGLE / "reports.csv", tmp_path)
    args[args.index("--map1") + 1] = str(tmp_path / "map16.csv")
    assert main(args) == 1
    err = capsys.readouterr().err
    assert "map16.csv:1: expected" in err and "was the map made with other parameters?" in err


def test_schema_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    shutil.copy(GOOGLE / "m_params.csv", tmp_path / "m_params.csv")
    shutil.copy(GOOGLE / "m_params.csv", tmp_path / "n_params.csv")
    (tmp_path / "vars.csv").write_text("metric,var,var_type,params\nm,domain,string,m_params\n"
                                       "m,flag..HTTPS,boolean,n_params\n")
    args = _google_args(GOOGLE / "reports.csv", tmp_path)
    args[args.index("--schema") + 1] = str(tmp_path / "vars.csv")
    assert main(args) == 1
    assert "vars.csv: the variables should have the same params" in capsys.readouterr().err
    args[args.index("--var2") + 1] = "nope"
    assert main(args) == 1
    assert "couldn't find metric 'm', field 'nope'" in capsys.readouterr().err


def test_string_variable_needs_a_map(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["decode-assoc", "--params", str(GOOGLE / "m_params.csv"), "--reports", str(GOOGLE / "reports.csv"),
                 "--var1", "domain", "--var2", "flag..HTTPS", "--bool"])
    assert code == 1
    assert "--map1 (or --candidates1) must be provided" in capsys.readouterr().err


def test_string_by_string_from_written_reports(tmp_path: Path) -> None:
    params = rappor.Params(num_bloombits=16, num_hashes=2, num_cohorts=16, prob_p=0.25, prob_q=0.75, prob_f=0.0)
    joint = np.array([[0.3, 0.05], [0.05, 0.3], [0.15, 0.15]])
    sim = simulate_association(params, joint, [["a", "b", "c"], ["x", "y"]], 20000, names=["s", "t"], rng=2)
    write_assoc_reports(tmp_path / "r.csv", sim.reports, ["s", "t"])
    (tmp_path / "c1.txt").write_text("a\nb\nc\n")
    (tmp_path / "c2.txt").write_text("x\ny\n")
    from rappor.formats import write_params

    write_params(params, tmp_path / "p.csv")
    out = tmp_path / "out.csv"
    assert main(["decode-assoc", "--params", str(tmp_path / "p.csv"), "--reports", str(tmp_path / "r.csv"),
                 "--var1", "s", "--candidates1", str(tmp_path / "c1.txt"), "--var2", "t",
                 "--candidates2", str(tmp_path / "c2.txt"), "--categories", "all", "-o", str(out)]) == 0
    rows = {(r["s"], r["t"]): float(r["proportion"]) for r in _rows(out)}
    assert rows[("a", "x")] == pytest.approx(0.3, abs=0.05) and rows[("b", "y")] == pytest.approx(0.3, abs=0.05)


def test_read_assoc_reports_memory_is_the_packed_reports(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The CSV is read and packed a block at a time: memory is the packed reports and one
    block, not the file's text as Python strings.  100,000 rows (3.4 MB) with blocks of
    64 KiB / 4,096 rows peak at 9 MB (tracemalloc; 3.3 MB of packed reports, joined at the
    end); reading the whole file first peaked at 64 MB.  (1,000,000 rows with the default blocks: 721 -> 167 MB maximum
    RSS.)  The reports are those of the csv module's records."""
    import tracemalloc

    import rappor.formats._association as files

    params = Params(num_bloombits=16, num_hashes=2, num_cohorts=64, prob_p=0.5, prob_q=0.75, prob_f=0.5)
    rng = np.random.default_rng(3)
    n = 100_000
    cohorts = rng.integers(0, 64, n)
    bits = rng.integers(0, 2, (n, 16))
    flags = rng.integers(0, 2, n)
    strings = ["".join(map(str, row)) for row in bits.tolist()]
    (tmp_path / "r.csv").write_text("client,cohort,value,flag\n" + "".join(
        f"client{i},{c},{s},{f}\n" for i, (c, s, f) in enumerate(zip(cohorts.tolist(), strings, flags.tolist()))))
    monkeypatch.setattr(files, "_BLOCK_BYTES", 1 << 16)
    monkeypatch.setattr(files, "_ASSEMBLE_ROWS", 4096)
    tracemalloc.start()
    try:
        data = read_assoc_reports(tmp_path / "r.csv", ["value", "flag"], [params, boolean_params(params)])
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 16 << 20, peak
    assert data.batches[0].cohorts.tolist() == cohorts.tolist()
    assert data.batches[0].bitstrings() == strings
    assert data.batches[1].bitstrings() == [str(f) for f in flags.tolist()]


def test_read_assoc_parquet_memory_is_the_packed_reports(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Parquet reports are converted a batch of rows at a time (the whole table went through
    Python lists: 1,000,000 rows took 414 MB of maximum RSS, now 195 MB).  100,000 rows in
    batches of 4,096 peak at 9 MB (tracemalloc), were 27 MB; a bad row in a
    later batch is named by its row in the file."""
    pytest.importorskip("pyarrow")
    import tracemalloc

    import pyarrow as pa
    import pyarrow.parquet as pq

    import rappor.formats._association as files

    params = Params(num_bloombits=16, num_hashes=2, num_cohorts=64, prob_p=0.5, prob_q=0.75, prob_f=0.5)
    rng = np.random.default_rng(5)
    n = 100_000
    cohorts = rng.integers(0, 64, n)
    words = rng.integers(0, 1 << 16, n).astype(np.uint64)
    flags = rng.integers(0, 2, n).astype(np.uint64)
    batches = [rappor.ReportBatch(params=params, cohorts=cohorts, words=words[:, None]),
               rappor.ReportBatch(params=boolean_params(params), cohorts=cohorts, words=flags[:, None])]
    write_assoc_parquet(tmp_path / "r.parquet", batches, ["value", "flag"])
    monkeypatch.setattr(files, "_ASSEMBLE_ROWS", 4096)
    tracemalloc.start()
    try:
        data = read_assoc_reports(tmp_path / "r.parquet", ["value", "flag"], [params, boolean_params(params)])
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 16 << 20, peak
    assert data.batches[0].cohorts.tolist() == cohorts.tolist()
    assert data.batches[0].words[:, 0].tolist() == words.tolist()
    assert data.batches[1].words[:, 0].tolist() == flags.tolist()
    table = pq.read_table(tmp_path / "r.parquet")
    bad = table.set_column(0, "cohort", pa.array([*(i % 64 for i in range(9_000)), None, *(i % 64 for i in range(n - 9_001))],
                                                 type=pa.int32()))
    pq.write_table(bad, tmp_path / "bad.parquet")
    with pytest.raises(rappor.ReportFormatError, match="row 9001: expected a cohort, found null"):
        read_assoc_reports(tmp_path / "bad.parquet", ["value", "flag"], [params, boolean_params(params)])


def test_three_variables_from_written_reports(tmp_path: Path) -> None:
    # --var3: a string x boolean x boolean table, every cell within 4 standard errors of the
    # clients' realized table (false failure about 6e-5 per cell, 12 cells), summing to 1.
    params = rappor.Params(num_bloombits=16, num_hashes=2, num_cohorts=16, prob_p=0.25, prob_q=0.75, prob_f=0.0)
    joint = np.zeros((3, 2, 2))
    joint[0] = [[0.2, 0.05], [0.05, 0.05]]
    joint[1] = [[0.02, 0.08], [0.08, 0.12]]
    joint[2] = [[0.1, 0.05], [0.1, 0.1]]
    sim = simulate_association(params, joint, [["a", "b", "c"], None, None], 30000, names=["s", "u", "v"], rng=4)
    write_assoc_reports(tmp_path / "r.csv", sim.reports, ["s", "u", "v"])
    (tmp_path / "c1.txt").write_text("a\nb\nc\n")
    rappor.formats.write_params(params, tmp_path / "p.csv")
    out = tmp_path / "out.csv"
    assert main(["decode-assoc", "--params", str(tmp_path / "p.csv"), "--reports", str(tmp_path / "r.csv"),
                 "--var1", "s", "--candidates1", str(tmp_path / "c1.txt"), "--var2", "u", "--bool2", "--var3", "v",
                 "--bool3", "--categories", "all", "--other", "none", "-o", str(out)]) == 0
    rows = _rows(out)
    assert len(rows) == 12 and sum(float(r["proportion"]) for r in rows) == pytest.approx(1.0)
    truth = sim.truth([("a", "b", "c"), ("TRUE", "FALSE"), ("TRUE", "FALSE")])
    for r in rows:
        cell = (("a", "b", "c").index(r["s"]), ("TRUE", "FALSE").index(r["u"]), ("TRUE", "FALSE").index(r["v"]))
        assert abs(float(r["proportion"]) - truth[cell]) < 4 * float(r["std_error"])


def test_unconverged_fit_warns_and_says_so_in_the_metrics(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # decode_assoc.R stops silently at --max-em-iters; we warn on stderr and record it.
    out = tmp_path / "out"
    assert main(_google_args(GOOGLE / "reports.csv", out, "--max-em-iters", "2", "--method", "em")) == 0
    err = capsys.readouterr().err
    assert "rappor: warning: the em fit stopped at its iteration cap after 2 iterations, before converging" in err
    metrics = json.loads((out / "assoc-metrics.json").read_text())
    assert metrics["converged"] is False and metrics["num_em_iters"] == 2 and metrics["log_likelihood_gap"] > 1e-3


_OURS = ["decode-assoc", "--params", str(GOOGLE / "m_params.csv"), "--reports", str(GOOGLE / "reports.csv"),
         "--var1", "domain", "--map1", str(GOOGLE / "domain_map.csv"), "--var2", "flag..HTTPS", "--bool"]


@pytest.mark.parametrize(("extra", "flag"), [
    (["--output-dir", "{tmp}/out"], "--output-dir"),  # the results went to standard output
    (["--metric-name", "m"], "--metric-name"),
    (["--params-dir", str(GOOGLE)], "--params-dir"),
])
def test_options_of_google_form_with_params_are_refused(extra: list[str], flag: str, tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*_OURS, *(e.format(tmp=tmp_path) for e in extra)]) == 1
    captured = capsys.readouterr()
    assert captured.err.startswith(f"rappor: error: {flag} belongs to google/rappor's form"), captured.err
    assert captured.out == "" and not (tmp_path / "out").exists()


@pytest.mark.parametrize(("extra", "message"), [
    (["--params", str(GOOGLE / "m_params.csv")], "--params (our form) cannot be combined with --schema"),
    (["-o", "{tmp}/r.csv"], "-o belongs to our form"),
    (["--summary", "{tmp}/s.json"], "--summary belongs to our form"),
])
def test_options_of_our_form_with_schema_are_refused(extra: list[str], message: str, tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    argv = _google_args(GOOGLE / "reports.csv", tmp_path / "out", *(e.format(tmp=tmp_path) for e in extra))
    assert main(argv) == 1
    assert capsys.readouterr().err.startswith(f"rappor: error: {message}")
    assert not (tmp_path / "out").exists() and not list(tmp_path.glob("*.csv"))


def test_schema_listing_a_variable_twice_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    schema = (GOOGLE / "rappor-vars.csv").read_text()
    first = schema.splitlines()[1]
    (tmp_path / "vars.csv").write_text(schema.rstrip("\n") + "\n" + first + "\n")
    argv = _google_args(GOOGLE / "reports.csv", tmp_path / "out")
    argv[argv.index("--schema") + 1] = str(tmp_path / "vars.csv")
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"rappor: error: {tmp_path / 'vars.csv'}:") and "again (first on line 2)" in err, err


def test_decode_assoc_says_when_the_reports_do_not_fit_the_parameters(tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    """p = 0.25 assumed on p = 0.5 reports was decoded without a word: stderr and the summary now say that the
    reports set far more Bloom bits than k and h allow; the clients' own parameters raise nothing."""
    assert main(["simulate-assoc", "--clients", "5000", "--unique", "10", "--no-report", "--seed", "3",
                 "--out", str(tmp_path / "sim")]) == 0
    sim = tmp_path / "sim"
    wrong = tmp_path / "p25.csv"
    wrong.write_text((sim / "params.csv").read_text().replace(",0.5,0.75,", ",0.25,0.75,"))
    capsys.readouterr()
    for params, fits in ((sim / "params.csv", True), (wrong, False)):
        assert main(["decode-assoc", "--params", str(params), "--reports", str(sim / "reports.csv"), "--var1", "value",
                     "--map1", str(sim / "map1.csv"), "--var2", "flag", "--bool", "--no-independence-test",
                     "-o", str(tmp_path / "r.csv"), "--summary", str(tmp_path / "s.json")]) == 0
        err = capsys.readouterr().err
        check = json.loads((tmp_path / "s.json").read_text())["parameter_check"]["value"]
        assert check["fits"] is fits and ("'value'" in err and "do not fit their parameters" in err) is not fits, err
    assert check["z"] > 5  # the wrong p makes the clients appear to set many more bits


def test_decode_assoc_column_named_like_a_formula_is_neutralised(tmp_path: Path) -> None:
    """A report column named =cmd|x!A0 was echoed raw into the results header."""
    assert main(["simulate-assoc", "--clients", "2000", "--unique", "10", "--no-report", "--seed", "3",
                 "--out", str(tmp_path / "sim")]) == 0
    sim = tmp_path / "sim"
    reports = (sim / "reports.csv").read_text().replace("client,cohort,value,flag", "client,cohort,=cmd|x!A0,flag", 1)
    (tmp_path / "r.csv").write_text(reports)
    assert main(["decode-assoc", "--params", str(sim / "params.csv"), "--reports", str(tmp_path / "r.csv"),
                 "--var1", "=cmd|x!A0", "--map1", str(sim / "map1.csv"), "--var2", "flag", "--bool",
                 "--no-independence-test", "-o", str(tmp_path / "out.csv")]) == 0
    header = _rows(tmp_path / "out.csv")[0]
    assert "'=cmd|x!A0" in header and not [h for h in header if h[:1] in "=+-@"], header


def test_a_client_column_groups_each_client_s_reports(tmp_path: Path) -> None:
    # The 'client' column says whose each row is: equal ids, equal keys, kept rows only.
    path = _bad_reports(tmp_path, ["c7,3,00110000,1", "c8,0,10101010,", "c7,3,00110000,0", " c9 ,1,10000000,1"])
    params = rappor.formats.read_params(GOOGLE / "m_params.csv")
    bparams = boolean_params(params)
    data = read_assoc_reports(path, ["domain", "flag..HTTPS"], [params, bparams], remove_bad_rows=True)
    assert data.removed == 1 and data.clients is not None and data.clients.shape == (3,)
    assert data.clients[0] == data.clients[1] != data.clients[2]
    without = tmp_path / "no-client.csv"
    without.write_text("cohort,domain,flag..HTTPS\n3,00110000,1\n")
    assert read_assoc_reports(without, ["domain", "flag..HTTPS"], [params, bparams]).clients is None


def test_simulated_daily_reports_are_decoded_by_client(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    # simulate-assoc --reports-per-client writes each client's id on each of its rows; decode-assoc
    # reads them and fits each client's reports' exact likelihood (the summary says so and counts
    # the clients).
    # google/rappor's benchmark privacy (p=0.25 q=0.75 f=0.5), where the permanent response's noise
    # is a large share of a report's (the honesty of the errors: tests/analysis/association/test_clusters.py).
    (tmp_path / "p.csv").write_text("k,h,m,p,q,f\n32,2,32,0.25,0.75,0.5\n")
    assert main(["simulate-assoc", "--params", str(tmp_path / "p.csv"), "--clients", "3000", "--reports-per-client",
                 "10", "--unique", "10", "--no-report", "--out", str(tmp_path / "sim")]) == 0
    assert "simulated 3,000 clients x 10 reports" in capsys.readouterr().out
    rows = _rows(tmp_path / "sim" / "reports.csv")
    assert len(rows) == 30000 and rows[0]["client"] == rows[9]["client"] != rows[10]["client"]
    metrics = json.loads((tmp_path / "sim" / "metrics.json").read_text())
    assert metrics["simulation"]["reports per client"] == 10 and metrics["fit"]["likelihood_rows"].startswith("clients")
    args = ["decode-assoc", "--params", str(tmp_path / "sim" / "params.csv"), "--reports",
            str(tmp_path / "sim" / "reports.csv"), "--var1", "value", "--map1", str(tmp_path / "sim" / "map1.csv"),
            "--var2", "flag", "--bool", "-o", str(tmp_path / "r.csv"), "--summary", str(tmp_path / "s.json"), "--quiet"]
    assert main(args) == 0
    summary = json.loads((tmp_path / "s.json").read_text())
    assert summary["clients"] == 3000 and summary["num_reports"] == 30000
    assert summary["likelihood_rows"].startswith("clients")  # each client's reports' exact likelihood
    # The same rows without their ids: every row its own client, and a warning.
    (tmp_path / "anon.csv").write_text("\n".join(line.split(",", 1)[1] for line in
                                                 (tmp_path / "sim" / "reports.csv").read_text().splitlines()) + "\n")
    args[args.index(str(tmp_path / "sim" / "reports.csv"))] = str(tmp_path / "anon.csv")
    args[args.index(str(tmp_path / "s.json"))] = str(tmp_path / "s2.json")
    args[args.index(str(tmp_path / "r.csv"))] = str(tmp_path / "r2.csv")
    capsys.readouterr()
    assert main(args) == 0
    assert "look like repeated reports" in capsys.readouterr().err  # the counts' dispersion says so
    anon = json.loads((tmp_path / "s2.json").read_text())
    assert anon["clients"] is None and anon["likelihood_rows"] == "report patterns"


def test_parquet_reports_keep_their_client_column(tmp_path: Path) -> None:
    pytest.importorskip("pyarrow")
    params = rappor.formats.read_params(GOOGLE / "m_params.csv")
    names = ["domain", "flag..HTTPS"]
    data = read_assoc_reports(GOOGLE / "reports.csv", names, [params, boolean_params(params)])
    cohorts = data.batches[0].cohorts
    rank = np.zeros(cohorts.size, dtype=np.int64)  # each row's place among its cohort's rows
    order = np.argsort(cohorts, kind="stable")
    starts = np.searchsorted(cohorts[order], cohorts[order])
    rank[order] = np.arange(cohorts.size) - starts
    ids = [f"u{c}-{r // 5}" for c, r in zip(cohorts.tolist(), rank.tolist())]  # five rows a client, one cohort
    write_assoc_parquet(tmp_path / "r.parquet", data.batches, names, ids)
    back = read_assoc_reports(tmp_path / "r.parquet", names, [b.params for b in data.batches])
    assert back.clients is not None
    _, first, inverse = np.unique(np.array(ids), return_index=True, return_inverse=True)
    assert (back.clients == back.clients[first][inverse.reshape(-1)]).all()  # equal ids, equal keys
    assert np.unique(back.clients).size == len(set(ids)) < len(ids)


def test_a_client_in_two_cohorts_is_found_across_blocks_and_files(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    # The reader checks every client once the file is read, whatever block or file each row came from,
    # and names the row's file and line (Parquet: row) and where the client's other cohort was seen.
    import rappor.formats._association as assoc_io

    monkeypatch.setattr(assoc_io, "_ASSEMBLE_ROWS", 7)  # many blocks
    params = rappor.formats.read_params(GOOGLE / "m_params.csv")
    names = ["domain", "flag..HTTPS"]
    both = [params, boolean_params(params)]
    rows = [f"u{i % 10},{i % 10},10101010,1" for i in range(40)]  # client u<j> always in cohort j
    path = _bad_reports(tmp_path, rows + ["u3,5,10101010,0"] + rows)
    with pytest.raises(rappor.ReportFormatError) as caught:
        read_assoc_reports(path, names, both)
    assert caught.value.line == 42 and caught.value.path is not None and caught.value.path.endswith("reports.csv")
    assert "cohort 5 and one in cohort 3 (line 5)" in str(caught.value)
    # Blank rows left out keep the lines of the rest.
    blank = _bad_reports(tmp_path, ["u3,3,,1", "u3,3,10101010,1", "u3,4,10101010,1"])
    with pytest.raises(rappor.ReportFormatError, match=r"reports.csv:4: .*cohort 4 and one in cohort 3 \(line 3\)"):
        read_assoc_reports(blank, names, both, remove_bad_rows=True)
    assert read_assoc_reports(_bad_reports(tmp_path, rows), names, both).clients is not None  # consistent: read

    pytest.importorskip("pyarrow")
    data = read_assoc_reports(_bad_reports(tmp_path, rows), names, both)
    folder = tmp_path / "parts"
    folder.mkdir()
    write_assoc_parquet(folder / "a.parquet", data.batches, names, [f"u{i % 10}" for i in range(40)])
    moved = read_assoc_reports(_bad_reports(tmp_path, ["u0,9,10101010,1"]), names, both)
    write_assoc_parquet(folder / "b.parquet", moved.batches, names, ["u0"])
    with pytest.raises(rappor.ReportFormatError,
                       match=r"b.parquet: row 1: .*cohort 9 and one in cohort 0 \(row 1 of .*a.parquet\)"):
        read_assoc_reports(folder, names, both)


def test_a_client_in_two_cohorts_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # A client belongs to one cohort for good: an id whose rows are in two cohorts names two clients.
    good = (GOOGLE / "reports.csv").read_text().splitlines()[1:]
    path = _bad_reports(tmp_path, good + ["c0,7,10101010,1"])  # c0's first row is in cohort 41
    assert main(_google_args(path, tmp_path)) == 1
    err = capsys.readouterr().err
    # The file and line of the row, and where the client's other cohort was seen.
    assert "Traceback" not in err and "reports.csv:5002: this row's client has a report in cohort 7 and one in " \
        "cohort 41 (line 2)" in err, err
    assert not (tmp_path / "assoc-results.csv").exists()


def test_one_column_named_twice_is_refused_before_reading(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Found by a tester: with --bool the error was about a bit string's length, read with two layouts.
    out = tmp_path / "r.csv"
    code = main(["decode-assoc", "--params", str(GOOGLE / "m_params.csv"), "--reports", str(GOOGLE / "reports.csv"),
                 "--var1", "domain", "--map1", str(GOOGLE / "domain_map.csv"), "--var2", "domain", "--bool",
                 "-o", str(out)])
    assert code == 1 and not out.exists()
    assert "--var1 and --var2 name the same column 'domain': the variables must differ" in capsys.readouterr().err


def test_strings_outside_the_list_are_said(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Found by a tester: against a list holding none of the clients' strings, decode-assoc said nothing
    # (rappor decode notes the unexplained mass).  One candidate of the shared sample's domains, yahoo.com:
    # the rest of the reports are outside it (the marginal decode says 0.66, SE 0.10; with google.com, half, its marginal
    # decode's unexplained mass is 3.5 of its SEs at 5,000 reports, under the note's 4).
    second = (GOOGLE / "domain_map.csv").read_text().splitlines()[1]
    one = tmp_path / "one_map.csv"
    one.write_text(second + "\n")
    out = tmp_path / "r.csv"
    base = ["decode-assoc", "--params", str(GOOGLE / "m_params.csv"), "--reports", str(GOOGLE / "reports.csv"),
            "--var2", "flag..HTTPS", "--bool", "-o", str(out)]
    assert main([*base, "--var1", "domain", "--map1", str(one)]) == 0
    err = capsys.readouterr().err
    assert "of the reports of 'domain' come from strings outside its candidate list" in err
    assert main([*base, "--var1", "domain", "--map1", str(GOOGLE / "domain_map.csv")]) == 0
    assert "outside its candidate list" not in capsys.readouterr().err
