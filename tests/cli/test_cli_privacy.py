"""CLI tests for ``rappor privacy`` and ``rappor plan``."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from rappor import Params
from rappor.cli._main import main


@pytest.fixture
def params_csv(tmp_path: Path) -> Path:
    path = tmp_path / "params.csv"
    path.write_text("k,h,m,p,q,f\n16,2,8,0.5,0.75,0.5\n")
    return path


def test_privacy_table(params_csv: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["privacy", "--params", str(params_csv)]) == 0
    out = capsys.readouterr().out
    assert "epsilon_inf" in out and "rho_zcdp_prr" in out


def test_privacy_json_has_required_keys(params_csv: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["privacy", "--params", str(params_csv), "--reports", "10", "--delta", "1e-5", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    params = Params(num_bloombits=16, num_hashes=2, num_cohorts=8, prob_p=0.5, prob_q=0.75, prob_f=0.5)
    assert data["epsilon_one"] == pytest.approx(params.epsilon_one)
    assert data["epsilon_inf"] == pytest.approx(params.epsilon_inf)
    assert data["rho_zcdp_prr"] == pytest.approx(2 * 2 * math.log(3) * 0.5)  # 2h e tanh(e/2), e = ln 3
    assert data["reports"] == 10 and data["delta"] == 1e-5
    assert 0 < data["epsilon_delta"] <= 10 * params.epsilon_one


def test_privacy_json_infinite_epsilon_is_valid_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "p.csv"
    path.write_text("k,h,m,p,q,f\n16,2,8,0.25,0.75,0\n")
    assert main(["privacy", "--params", str(path), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["epsilon_inf"] == "Infinity"


def test_privacy_bad_delta_is_a_usage_error(params_csv: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["privacy", "--params", str(params_csv), "--delta", "2"])
    assert exc.value.code == 2
    assert "argument --delta: expected a number in (0, 1), got '2'" in capsys.readouterr().err


def test_privacy_missing_params_file_exits_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["privacy", "--params", str(tmp_path / "none.csv")]) == 1


def test_plan_text_and_params_out(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out_params = tmp_path / "planned.csv"
    assert main(["plan", "--reports", "50000", "--candidates", "40", "--epsilon-inf", "3",
                 "--epsilon-one", "1", "--params-out", str(out_params)]) == 0
    assert "recommended:" in capsys.readouterr().out
    from rappor.formats import read_params
    planned = read_params(out_params)
    assert planned.epsilon_inf == pytest.approx(3.0)
    assert planned.epsilon_one == pytest.approx(1.0, rel=1e-6)


def test_plan_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", "--reports", "20000", "--candidates", "30", "--json", "--top", "2"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["recommended"]["detection_frequency"] > 0
    assert len(data["alternatives"]) == 2


def test_plan_default_has_instantaneous_noise(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out_params = tmp_path / "planned.csv"
    assert main(["plan", "--reports", "2000", "--candidates", "10", "--epsilon-inf", "4",
                 "--params-out", str(out_params)]) == 0
    from rappor.formats import read_params
    planned = read_params(out_params)
    assert 0.0 < planned.p < planned.q < 1.0
    assert planned.epsilon_one == pytest.approx(1.0, rel=1e-6)  # epsilon_inf / 4


def test_plan_no_irr_flag(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out_params = tmp_path / "planned.csv"
    assert main(["plan", "--reports", "2000", "--candidates", "10", "--no-irr",
                 "--params-out", str(out_params)]) == 0
    from rappor.formats import read_params
    planned = read_params(out_params)
    assert (planned.p, planned.q) == (0.0, 1.0)


def test_plan_no_irr_with_epsilon_one_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["plan", "--reports", "20000", "--candidates", "30", "--no-irr", "--epsilon-one", "1"])
    assert exc.value.code == 2
    assert "not allowed with" in capsys.readouterr().err


def test_plan_impossible_exits_1(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", "--reports", "200", "--candidates", "100000"]) == 1
    assert "rappor: error:" in capsys.readouterr().err


def test_plan_says_when_the_detectable_share_is_large(capsys: pytest.CaptureFixture[str]) -> None:
    """High privacy / few reports: detect>= above 1 or 0.05 gets a plain note; the usual case none (issue 14)."""
    assert main(["plan", "--reports", "1000", "--candidates", "100", "--epsilon-inf", "0.5", "--top", "0"]) == 0
    out = capsys.readouterr().out
    assert "# note: No string can be detected with 1,000 reports" in out
    assert main(["plan", "--reports", "100000", "--candidates", "200", "--epsilon-inf", "1", "--top", "0"]) == 0
    out = " ".join(capsys.readouterr().out.replace("#", " ").split())
    assert "note: The smallest detectable share is large" in out and "strings can be that frequent" in out
    assert main(["plan", "--reports", "100000", "--candidates", "200", "--top", "0"]) == 0
    assert "# note:" not in capsys.readouterr().out
