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
    assert lines[0] == "string,estimate,std_error,proportion,prop_std_error,prop_low_95,prop_high_95,pvalue,detected"
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
    """Issue 13 item 6: one report decoded against more candidates than bits gave an OverflowError traceback.

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
    assert json.loads((tmp_path / "s.json").read_text())["reports"] == 1
