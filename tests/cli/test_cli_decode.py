"""Tests of ``rappor decode``."""

from __future__ import annotations

import json

import pytest

from rappor.cli._main import main
from rappor.formats._params import params_text


def _args(interop_dir, tmp_path, *extra):
    return ["decode", "--params", str(interop_dir / "params.csv"), "--counts", str(interop_dir / "counts.csv"),
            "-o", str(tmp_path / "results.csv"), *extra]


def test_cli_decode_map_writes_results_and_summary(interop_dir, tmp_path):
    rc = main(_args(interop_dir, tmp_path, "--map", str(interop_dir / "map.csv"),
                    "--summary", str(tmp_path / "s.json")))
    assert rc == 0
    lines = (tmp_path / "results.csv").read_text().splitlines()
    # Two products: a row per candidate with a positive share, and the test's detected column.
    # fitted_proportion: the test's least-squares share, which std_error, the interval and pvalue are about.
    assert lines[0] == ("string,estimate,std_error,proportion,fitted_proportion,prop_std_error,prop_low_95,"
                        "prop_high_95,pvalue,detected")
    assert lines[1].startswith("v1,")
    summary = json.loads((tmp_path / "s.json").read_text())
    assert summary["rows"] == len(lines) - 1 and summary["shares"] == "all"
    assert summary["detected"] == sum(line.endswith(",true") for line in lines[1:]) > 0
    assert summary["allocated_mass"] == pytest.approx(sum(float(line.split(",")[3]) for line in lines[1:]))
    assert summary["candidates"] == 40 and summary["reports"] == 20000
    assert summary["null"]["law"] == "random-strings" and summary["null"]["sd"] > 0


def test_cli_decode_shares_detected_writes_google_rappor_layout(interop_dir, tmp_path):
    """--shares detected: the detected strings only, google/rappor's columns (the decoder before issue 14)."""
    rc = main(_args(interop_dir, tmp_path, "--map", str(interop_dir / "map.csv"), "--shares", "detected",
                    "--summary", str(tmp_path / "s.json")))
    assert rc == 0
    lines = (tmp_path / "results.csv").read_text().splitlines()
    assert lines[0] == "string,estimate,std_error,proportion,prop_std_error,prop_low_95,prop_high_95,pvalue"
    assert lines[1].startswith("v1,")
    summary = json.loads((tmp_path / "s.json").read_text())
    assert summary["detected"] == summary["rows"] == len(lines) - 1 and summary["shares"] == "detected"


@pytest.mark.parametrize("options", [("--correction", "bonferroni", "--level", "0.01"),
                                     ("--null", "normal", "--correction", "storey")])
def test_cli_decode_all_lists_every_candidate(interop_dir, tmp_path, options):
    rc = main(_args(interop_dir, tmp_path, "--map", str(interop_dir / "map.csv"), "--all", *options))
    assert rc == 0
    lines = (tmp_path / "results.csv").read_text().splitlines()
    assert lines[0].endswith(",pvalue,detected") and len(lines) == 41


def test_cli_decode_candidates_file(interop_dir, tmp_path):
    assert main(_args(interop_dir, tmp_path, "--candidates", str(interop_dir / "candidates.txt"))) == 0
    assert (tmp_path / "results.csv").read_text().startswith("string,")


def test_cli_decode_bad_counts_is_error(interop_dir, tmp_path, capsys):
    bad = tmp_path / "counts.csv"
    bad.write_text("1,2,3\n")
    rc = main(["decode", "--params", str(interop_dir / "params.csv"), "--counts", str(bad),
               "--map", str(interop_dir / "map.csv"), "-o", str(tmp_path / "r.csv")])
    assert rc == 1
    assert "rappor: error:" in capsys.readouterr().err
    assert not (tmp_path / "r.csv").exists()


def test_cli_decode_counts_without_reports_name_the_file(interop_dir, tmp_path, capsys):
    """Every cohort with 0 reports: an error naming the counts file (the decoder's own message named none)."""
    params = (interop_dir / "params.csv").read_text().splitlines()[1].split(",")
    k, m = int(params[0]), int(params[2])
    empty = tmp_path / "counts.csv"
    empty.write_text(("0," * k + "0\n") * m)
    rc = main(["decode", "--params", str(interop_dir / "params.csv"), "--counts", str(empty),
               "--map", str(interop_dir / "map.csv"), "-o", str(tmp_path / "r.csv")])
    assert rc == 1
    err = capsys.readouterr().err
    assert f"rappor: error: {empty}: expected at least one report" in err and "Traceback" not in err
    assert not (tmp_path / "r.csv").exists()


def test_cli_decode_level_and_its_deprecated_alias(interop_dir, tmp_path, capsys):
    """--level sets the significance level; --alpha still does, with a warning naming the new flag."""
    import json

    for flag in ("--level", "--alpha"):
        summary = tmp_path / f"{flag}.json"
        assert main(_args(interop_dir, tmp_path, "--map", str(interop_dir / "map.csv"), flag, "0.01",
                          "--summary", str(summary))) == 0
        assert json.loads(summary.read_text())["significance_level"] == 0.01
        err = capsys.readouterr().err
        assert ("--alpha is deprecated; use --level" in err) == (flag == "--alpha")



@pytest.mark.parametrize("value", ["cv", "0.01"])
def test_cli_decode_lasso_alpha(interop_dir, tmp_path, value):
    rc = main(_args(interop_dir, tmp_path, "--map", str(interop_dir / "map.csv"), "--lasso-alpha", value))
    assert rc == 0


@pytest.mark.parametrize("value", ["0", "-1", "nan", "abc", "bic"])
def test_cli_decode_bad_lasso_alpha_is_usage_error(interop_dir, tmp_path, value, capsys):
    with pytest.raises(SystemExit) as exc:
        main(_args(interop_dir, tmp_path, "--map", str(interop_dir / "map.csv"), "--lasso-alpha", value))
    assert exc.value.code == 2 and "--lasso-alpha" in capsys.readouterr().err
    assert not (tmp_path / "results.csv").exists()


def test_cli_decode_notes_p_values_tied_at_the_null_floor(tmp_path, capsys):
    """data/sample (4 cohorts): v1 and v2 share the smallest p-value the random-string null gives; stderr says
    so and why, and --help explains it."""
    from pathlib import Path

    sample = Path(__file__).parents[2] / "data" / "sample"
    assert main(["decode", "--params", str(sample / "params.csv"), "--counts", str(sample / "counts.csv"),
                 "--candidates", str(sample / "candidates.txt"), "-o", str(tmp_path / "r.csv")]) == 0
    err = capsys.readouterr().err
    assert err.startswith("rappor: note: v1, v2 share the p-value ") and "floor of the random-string null" in err
    rows = [line.split(",") for line in (tmp_path / "r.csv").read_text().splitlines()[1:3]]
    assert rows[0][-1] == rows[1][-1]  # the tied p-values themselves
    with pytest.raises(SystemExit):
        main(["decode", "--help"])
    assert "the strongest strings all sit at the floor and tie" in " ".join(capsys.readouterr().out.split())


def test_cli_decode_one_report_writes_infinite_standard_errors(tmp_path, one_report):
    """Issue 13 item 6: a decode against more candidates than bits gave an OverflowError traceback.

    results.csv now holds ``Inf`` where a standard error is infinite.
    """
    params, counts, candidates = one_report
    (tmp_path / "params.csv").write_text(params_text(params))
    (tmp_path / "counts.csv").write_text("".join(",".join(map(str, row)) + "\n" for row in counts))
    (tmp_path / "candidates.txt").write_text("\n".join(candidates) + "\n")
    rc = main(["decode", "--params", str(tmp_path / "params.csv"), "--counts", str(tmp_path / "counts.csv"),
               "--candidates", str(tmp_path / "candidates.txt"), "-o", str(tmp_path / "results.csv"), "--all",
               "--summary", str(tmp_path / "s.json")])
    assert rc == 0
    lines = (tmp_path / "results.csv").read_text().splitlines()
    assert len(lines) == len(candidates) + 1
    assert any(line.split(",")[2] == "Inf" for line in lines[1:])
    assert json.loads((tmp_path / "s.json").read_text())["reports"] == sum(row[0] for row in counts)


def test_cli_decode_says_in_one_line_what_it_wrote(interop_dir, tmp_path, capsys):
    rc = main(_args(interop_dir, tmp_path, "--map", str(interop_dir / "map.csv"), "--summary", str(tmp_path / "s.json")))
    assert rc == 0
    summary = json.loads((tmp_path / "s.json").read_text())
    err = capsys.readouterr().err
    assert err == (f"rappor: decoded {summary['reports']:,} reports against {summary['candidates']} candidates, "
                   f"{summary['detected']} detected; wrote {tmp_path / 'results.csv'} ({summary['rows']} rows), "
                   f"{tmp_path / 's.json'}\n")


def test_cli_decode_quiet_says_nothing(interop_dir, tmp_path, capsys):
    assert main(_args(interop_dir, tmp_path, "--map", str(interop_dir / "map.csv"), "--quiet")) == 0
    assert capsys.readouterr().err == ""


def test_cli_decode_progress_on_a_terminal_only(interop_dir, tmp_path, capsys, monkeypatch):
    import sys

    pytest.importorskip("tqdm")
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    assert main(_args(interop_dir, tmp_path, "--map", str(interop_dir / "map.csv"))) == 0
    err = capsys.readouterr().err
    assert "decode: read counts" in err and "decode: write" in err  # the step bar, on stderr
    assert main(_args(interop_dir, tmp_path, "--map", str(interop_dir / "map.csv"), "-q")) == 0
    assert capsys.readouterr().err == ""


def test_cli_decode_tie_note_escapes_client_strings(tmp_path, capsys):
    """The tie note names candidates; one that holds ESC or U+202E is shown escaped on stderr (it reached the
    terminal raw), while results.csv keeps the exact strings."""
    from pathlib import Path

    sample = Path(__file__).parents[2] / "data" / "sample"
    names = (sample / "candidates.txt").read_text().splitlines()
    renamed = {"v1": "\u202ev1", "v2": "\x1b[31mv2"}
    (tmp_path / "cand.txt").write_text("\n".join(renamed.get(s, s) for s in names) + "\n", encoding="utf-8")
    # The sample's counts were made with v1, v2: the renamed strings hash elsewhere, so hash the sample's
    # strings and relabel the map rather than the counts.
    from rappor import hash_candidates
    from rappor.formats import read_params
    from rappor.collect import CandidateMap
    from rappor.formats import write_map

    params = read_params(sample / "params.csv")
    cmap = hash_candidates(names, params)
    write_map(CandidateMap(params=params, strings=tuple(renamed.get(s, s) for s in names), matrix=cmap.matrix),
              tmp_path / "map.csv")
    assert main(["decode", "--params", str(sample / "params.csv"), "--counts", str(sample / "counts.csv"),
                 "--map", str(tmp_path / "map.csv"), "-o", str(tmp_path / "r.csv")]) == 0
    err = capsys.readouterr().err
    assert err.startswith("rappor: note: \\u202ev1, \\x1b[31mv2 share the p-value "), err
    assert "\x1b" not in err and "\u202e" not in err
    assert "\u202ev1" in (tmp_path / "r.csv").read_text(encoding="utf-8")


FORMULAS = ["=cmd|' /C calc'!A0", "+SUM(1+1)", "-2+3", "@SUM(A1)", "\tx", "'=x"]


def test_cli_formula_strings_are_neutralised_in_every_written_csv(tmp_path, capsys):
    """OWASP CSV injection: candidates that start a formula get a leading quote in map.csv, results.csv and
    candidates lists, and our readers give back the exact strings."""
    import csv
    from pathlib import Path

    from rappor.formats import read_map, read_params
    from rappor.formats import read_candidates, write_candidates

    sample = Path(__file__).parents[2] / "data" / "sample"
    names = (sample / "candidates.txt").read_text().splitlines()
    strings = FORMULAS + names[len(FORMULAS):]
    write_candidates(strings, tmp_path / "cand.txt")
    lines = (tmp_path / "cand.txt").read_text().split("\n")[:-1]
    assert lines[:6] == ["'=cmd|' /C calc'!A0", "'+SUM(1+1)", "'-2+3", "'@SUM(A1)", "'\tx", "''=x"]
    assert read_candidates(tmp_path / "cand.txt") == strings
    assert main(["hash-candidates", "--params", str(sample / "params.csv"), str(tmp_path / "cand.txt"), "-o",
                 str(tmp_path / "map.csv")]) == 0
    assert list(read_map(tmp_path / "map.csv", read_params(sample / "params.csv")).strings) == strings
    assert main(["decode", "--params", str(sample / "params.csv"), "--counts", str(sample / "counts.csv"),
                 "--map", str(tmp_path / "map.csv"), "--all", "-o", str(tmp_path / "r.csv")]) == 0
    capsys.readouterr()
    for name in ("map.csv", "r.csv"):
        with open(tmp_path / name, newline="") as fh:
            first = [row[0] for row in csv.reader(fh)]
        assert not [c for c in first if c[:1] in ("=", "+", "-", "@", "\t", "\r")], (name, first)
        assert {"'=cmd|' /C calc'!A0", "'-2+3", "''=x"} <= set(first)
    from rappor.formats._results import read_results

    assert set(read_results(tmp_path / "r.csv")["string"]) == set(strings)  # our reader undoes the quote


def test_cli_decode_explains_a_dispersion_from_repeated_reports(tmp_path, capsys):
    """100,000 clients x 10 reports of one value under one PRR: the residual dispersion (~1.4) is
    explained on stderr as repeated reports and in the summary's residual.explanation; with every
    client reporting once there is no such note (tests/analysis/decoder/test_dispersion.py checks
    the three causes)."""
    import rappor
    from rappor.formats import write_counts, write_params
    from rappor.simulation import Population, simulate

    params = rappor.Params(num_bloombits=16, num_hashes=2, num_cohorts=32, prob_p=0.5, prob_q=0.75, prob_f=0.5)
    pop = Population.zipf(50)
    (tmp_path / "candidates.txt").write_text("\n".join(pop.strings) + "\n")
    write_params(params, tmp_path / "params.csv")
    for reports, noted in ((10, True), (1, False)):
        write_counts(simulate(params, pop, 100_000, reports_per_client=reports, rng=0).aggregate,
                     tmp_path / "counts.csv")
        assert main(["decode", "--params", str(tmp_path / "params.csv"), "--counts", str(tmp_path / "counts.csv"),
                     "--candidates", str(tmp_path / "candidates.txt"), "-o", str(tmp_path / "r.csv"),
                     "--summary", str(tmp_path / "s.json")]) == 0
        err = " ".join(capsys.readouterr().err.split())
        explanation = json.loads((tmp_path / "s.json").read_text())["residual"].get("explanation")
        assert ("Repeated reports are the likely cause" in err) is noted
        assert (explanation is not None and explanation["cause"] == "repeated reports") is noted


def test_counts_of_other_parameters_are_warned_of_even_when_the_fit_looks_fine(tmp_path, capsys):
    """Found by a tester: h=1 counts decoded with h=2 fitted with dispersion 1.1 and said nothing,
    while every share came out at about half its truth.  The bit count check (-16.7 SE there) now
    runs on every decode; with the clients' own parameters it passes (z = -0.8 on this collection)."""
    import rappor

    h1 = rappor.Params(num_bloombits=16, num_hashes=1, num_cohorts=64, prob_p=0.5, prob_q=0.75, prob_f=0.5)
    sim = rappor.simulate(h1, rappor.Population.zipf(100), 100_000, rng=3)
    (tmp_path / "counts.csv").write_text("".join(",".join(map(str, row)) + "\n" for row in sim.aggregate.counts))
    (tmp_path / "candidates.txt").write_text("".join(f"v{i}\n" for i in range(1, 101)))
    for h, warned in ((2, True), (1, False)):
        (tmp_path / "params.csv").write_text(f"k,h,m,p,q,f\n16,{h},64,0.5,0.75,0.5\n")
        assert main(["decode", "--params", str(tmp_path / "params.csv"), "--counts", str(tmp_path / "counts.csv"),
                     "--candidates", str(tmp_path / "candidates.txt"), "-o", str(tmp_path / "r.csv"),
                     "--summary", str(tmp_path / "s.json")]) == 0
        err = capsys.readouterr().err
        assert ("do not fit their parameters" in err) is warned
        assert json.loads((tmp_path / "s.json").read_text())["parameter_check"]["fits"] is not warned


@pytest.mark.parametrize("shares", ["all", "detected"])
def test_summary_rows_and_mass_are_the_files_with_all(interop_dir, tmp_path, shares):
    """Found by a tester: with --all the summary counted the rows (and their mass) of a decode without it."""
    import csv

    assert main(_args(interop_dir, tmp_path, "--map", str(interop_dir / "map.csv"), "--all", "--shares", shares,
                      "--summary", str(tmp_path / "s.json"))) == 0
    summary = json.loads((tmp_path / "s.json").read_text())
    with (tmp_path / "results.csv").open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert summary["rows"] == len(rows) == summary["candidates"]
    assert summary["allocated_mass"] == pytest.approx(sum(float(r["proportion"]) for r in rows), abs=1e-9)
