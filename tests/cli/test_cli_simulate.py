"""Tests for `rappor simulate`: every file written, parseable and consistent."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from rappor.formats._counts import read_counts
from rappor.cli._main import main
from rappor.formats._params import read_params

FILES = ("params.csv", "counts.csv", "map.csv", "candidates.txt", "truth.csv", "results.csv", "metrics.json",
         "report.html")


def _run(tmp_path, *extra):
    out = tmp_path / "out"
    status = main(["simulate", "--clients", "3000", "--unique", "10", "--seed", "1", "--out", str(out), *extra])
    return status, out


def test_simulate_writes_every_file(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    status, out = _run(tmp_path, "--decoys", "3", "--remove-every", "5")
    assert status == 0
    for name in FILES:
        assert (out / name).is_file(), name
    assert not list(out.glob(".*.tmp"))  # no temporary files left behind
    params = read_params(out / "params.csv")
    assert params.k == 16 and params.m == 64
    assert read_counts(out / "counts.csv", params).total_reports == 3000
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["metrics"]["n_candidates"] == 10 - 2 + 3
    assert metrics["metrics"]["missing_candidates"] == 2  # v5 and v10 removed
    assert metrics["metrics"]["true_unexplained_mass"] > 0
    with open(out / "truth.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert sum(int(r["count"]) for r in rows) == 3000
    printed = capsys.readouterr().out
    assert "total variation" in printed and "detected" in printed
    # The "wrote" line names every file written, and only those.
    (wrote,) = [line for line in printed.splitlines() if line.startswith("wrote ")]
    assert wrote.startswith(f"wrote {out}/: ")
    assert sorted(wrote.split(": ", 1)[1].split(", ")) == sorted(p.name for p in out.iterdir()) == sorted(FILES)


def test_simulate_printout_agrees_with_metrics_json(tmp_path, capsys):
    """Masses and times: the same names and numbers in the printout and metrics.json."""
    import re

    status, out = _run(tmp_path, "--remove-every", "3", "--no-report")
    assert status == 0
    printed = capsys.readouterr().out
    saved = json.loads((out / "metrics.json").read_text())
    metrics, details = saved["metrics"], saved["simulation"]

    def value(label):
        (match,) = re.findall(rf"^{label} +(-?[0-9.]+)", printed, flags=re.M)
        return float(match)

    for label, key in (("allocated mass", "allocated_mass"), ("unallocated mass", "unallocated_mass"),
                       ("unexplained mass", "unexplained_mass"), ("true unexplained mass", "true_unexplained_mass")):
        assert value(label) == pytest.approx(metrics[key], abs=5e-5), label
    assert metrics["unallocated_mass"] == pytest.approx(1 - metrics["allocated_mass"])
    assert f"± {metrics['unexplained_std_error']:.4f} (SE)" in printed
    assert "estimated_unexplained_mass" not in metrics
    head = printed.split("simulated ", 1)[1].splitlines()[0]
    assert f"simulation {details['simulation seconds']:.3f} s, decode {details['decode seconds']:.3f} s" in head
    assert "whole command" in head


def test_simulate_params_file_and_no_report(tmp_path):
    pfile = tmp_path / "p.csv"
    pfile.write_text("k,h,m,p,q,f\n32,2,8,0.25,0.75,0.25\n")
    status, out = _run(tmp_path, "--params", str(pfile), "--dist", "exponential", "--reports-per-client", "2",
                       "--no-report")
    assert status == 0
    assert read_params(out / "params.csv") == read_params(pfile)
    assert not (out / "report.html").exists()
    assert json.loads((out / "metrics.json").read_text())["simulation"]["reports"] == 6000


def test_simulate_population_file(tmp_path):
    pop = tmp_path / "pop.csv"
    pop.write_text("string,count\nalpha,70\nbeta,30\n")
    status, out = _run(tmp_path, "--population", str(pop), "--no-report")
    assert status == 0
    assert (out / "truth.csv").read_text().splitlines()[1].startswith("alpha,")


def test_simulate_bad_population_file_is_a_clean_error(tmp_path, capsys):
    pop = tmp_path / "pop.csv"
    pop.write_text("alpha,70\nbeta,x\n")
    status, out = _run(tmp_path, "--population", str(pop))
    assert status == 1
    err = capsys.readouterr().err
    assert err.startswith("rappor: error: ") and f"{pop}:2:" in err
    assert not out.exists() or not any(out.iterdir())


def test_simulate_bad_clients_is_a_usage_error_naming_the_flag(tmp_path, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["simulate", "--clients", "0", "--out", str(tmp_path / "o")])
    assert exc.value.code == 2
    assert "argument --clients: expected an integer >= 1, got '0'" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


def test_demo_says_what_a_decode_of_its_size_can_find(tmp_path, capsys):
    """The README's first command: the planner's smallest detectable share next to what was found.

    The printed figures must be the planner's (rappor.privacy.detection_outlook on the true
    candidates' shares; checked against an exact GLS computation in tests/privacy/test_detection.py),
    and the same in metrics.json and report.html.
    """
    import re

    import numpy as np

    from rappor import Params
    from rappor.privacy._detection import detection_frequency, detection_outlook

    pytest.importorskip("matplotlib")
    out = tmp_path / "demo"
    assert main(["simulate", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    saved = json.loads((out / "metrics.json").read_text())
    outlook = saved["detection_outlook"]
    params = Params(num_bloombits=16, num_hashes=2, num_cohorts=64, prob_p=0.5, prob_q=0.75, prob_f=0.5)
    assert outlook["detectable_share"] == detection_frequency(params, 100_000, 100).frequency
    with open(out / "truth.csv", newline="") as fh:
        truth = {r["string"]: int(r["count"]) for r in csv.DictReader(fh)}
    shares = np.array([truth.get(f"v{i}", 0) for i in range(1, 101)]) / 100_000
    assert outlook["expected_detections"] == pytest.approx(detection_outlook(params, 100_000, shares).expected)

    def value(label):
        (match,) = re.findall(rf"^{label} +(-?[0-9.]+)", printed, flags=re.M)
        return float(match)

    assert value("smallest detectable") == pytest.approx(outlook["detectable_share"], abs=5e-5)
    assert value("expected detected") == pytest.approx(outlook["expected_detections"], abs=0.05)
    lines = printed.splitlines()
    detectable = next(i for i, line in enumerate(lines) if line.startswith("smallest detectable"))
    assert lines[detectable + 1].startswith("smallest detected")  # side by side
    found = saved["metrics"]["n_detected"]
    assert f"found {found}." in " ".join(printed.split())
    assert "detects a string with probability 1/2 when its share is" in " ".join(printed.split())
    page = (out / "report.html").read_text()
    assert "What a decode of this size can find" in page and f"{outlook['detectable_share']:.4g}" in page
    assert "smallest detectable share is large" not in printed  # no high-privacy note here


def test_high_privacy_demo_says_its_detectable_share_is_large(tmp_path, capsys):
    """f = 0.75: the printout says the smallest detectable share is large and what that means."""
    pfile = tmp_path / "p.csv"
    pfile.write_text("k,h,m,p,q,f\n16,2,64,0.5,0.75,0.75\n")
    assert main(["simulate", "--params", str(pfile), "--unique", "200", "--out", str(tmp_path / "hp"),
                 "--no-report"]) == 0
    printed = " ".join(capsys.readouterr().out.split())
    outlook = json.loads((tmp_path / "hp" / "metrics.json").read_text())["detection_outlook"]
    assert outlook["large"] and outlook["detectable_share"] > 0.05
    assert "The smallest detectable share is large" in printed
    assert f"at most {outlook['at_most_detectable']} strings can be that frequent" in printed


def test_simulate_table_marks_which_rows_are_detected(tmp_path, capsys):
    """The printed table lists results.csv's rows (every candidate with a share), each marked
    detected or not, and the count of detected rows agrees with results.csv and the summary."""
    status, out = _run(tmp_path, "--no-report")
    assert status == 0
    printed = capsys.readouterr().out
    lines = printed.splitlines()
    header = next(line for line in lines if line.startswith("string"))
    assert header.split()[-1] == "detected"
    start = lines.index(header) + 2
    rows = []
    for line in lines[start:]:
        if not line.startswith("v"):
            break
        rows.append(line.split())
    with open(out / "results.csv", newline="") as fh:
        saved = list(csv.DictReader(fh))
    assert [r[0] for r in rows] == [r["string"] for r in saved][:len(rows)]
    marks = {r[0]: r[-1] for r in rows}
    assert all(marks[r["string"]] == ("yes" if r["detected"].lower() == "true" else "no")
               for r in saved[:len(rows)])
    (count,) = [line for line in lines if line.startswith("detected ")]
    assert int(count.split()[1]) == sum(r["detected"].lower() == "true" for r in saved)


@pytest.mark.parametrize(("extra", "message"), [
    (["--method", "client"], "--method client does not go with --discover"),
    (["--reports-per-client", "3"], "--reports-per-client 3 does not go with --discover"),
    (["--values-per-client", "2"], "--values-per-client 2 does not go with --discover"),
    (["--dist", "uniform"], "--dist uniform does not go with --discover"),
])
def test_simulate_discover_refuses_what_it_cannot_honour(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                         extra: list[str], message: str) -> None:
    assert main(["simulate", "--discover", "--clients", "1000", "--out", str(tmp_path / "run"), *extra]) == 1
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_simulate_discover_truth_and_remove_every_zero(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "run"
    assert main(["simulate", "--discover", "--clients", "20000", "--unique", "50", "--max-length", "14",
                 "--alphabet", "printable", "--remove-every", "0", "--seed", "3", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    with open(out / "truth.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert list(rows[0]) == ["string", "clients", "full_string_clients"]
    clients = sum(int(r["clients"]) for r in rows)
    assert clients == 20_000  # every client, not only the full-string reporters
    full = sum(int(r["full_string_clients"]) for r in rows)
    assert f"{full:,} full-string" in printed
    # --remove-every 0 keeps every true string in the candidate list (it was turned into 2).
    candidates = (out / "candidates.txt").read_text(encoding="utf-8").splitlines()
    assert {r["string"] for r in rows} <= set(candidates)


def test_simulate_discover_defaults_to_a_stale_list(tmp_path: Path) -> None:
    """Without --remove-every, --discover leaves every other true string out of the list (docs/discovery.md,
    section 5: a stale list), so the runs with and without the discovered values differ; 0 keeps all."""
    out = tmp_path / "run"
    assert main(["simulate", "--discover", "--clients", "20000", "--unique", "50", "--max-length", "14",
                 "--alphabet", "printable", "--seed", "3", "--quiet", "--out", str(out)]) == 0
    with open(out / "truth.csv", newline="") as fh:
        by_share = [r["string"] for r in sorted(csv.DictReader(fh), key=lambda r: -int(r["clients"]))]
    candidates = set((out / "candidates.txt").read_text(encoding="utf-8").splitlines())
    assert by_share[0] in candidates and by_share[1] not in candidates  # the 2nd, 4th, ... left out


def test_simulate_refuses_remove_every_one(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """1 would leave no candidate: refused at the option, naming it (it failed inside the planner's outlook)."""
    with pytest.raises(SystemExit) as exc:
        main(["simulate", "--clients", "1000", "--remove-every", "1", "--out", str(tmp_path / "run")])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "--remove-every" in err and "it would leave no candidate" in err and not (tmp_path / "run").exists()
