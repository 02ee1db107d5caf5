"""Every script in examples/ runs (quickly) and prints something."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = sorted((Path(__file__).parent.parent / "examples").glob("*.py"))


def test_examples_exist():
    assert {p.name for p in EXAMPLES} >= {"encode_on_device.py", "decode_collection.py"}


# Scripts that write files take the output directory as their only argument.
_WRITES_FILES = {"privacy_curves.py"}


@pytest.mark.parametrize("script", EXAMPLES, ids=lambda p: p.name)
def test_example_runs_from_any_directory_and_writes_nothing_there(script, tmp_path):
    if script.name == "decode_collection.py":
        pytest.importorskip("rappor.analysis.decoder")
    cwd, out = tmp_path / "cwd", tmp_path / "out"
    cwd.mkdir()
    args = [str(out)] if script.name in _WRITES_FILES else []
    done = subprocess.run([sys.executable, str(script), *args], capture_output=True, text=True, timeout=60, cwd=cwd)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip(), f"{script.name} printed nothing"
    assert list(cwd.iterdir()) == [], f"{script.name} wrote into the current directory"


def test_privacy_curves_writes_its_figures_into_the_given_directory(tmp_path):
    pytest.importorskip("matplotlib")
    script = next(p for p in EXAMPLES if p.name == "privacy_curves.py")
    out = tmp_path / "figs" / "nested"
    done = subprocess.run([sys.executable, str(script), str(out)], capture_output=True, text=True, timeout=60,
                          cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    names = sorted(p.name for p in out.iterdir())
    assert names == ["privacy_composition.png", "privacy_epsilon_vs_lying.png", "privacy_zcdp.png"]
    assert all((out / n).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for n in names)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["figs"]


def test_encode_on_device_reproduces_what_the_secret_fixes_and_no_more(tmp_path):
    """Its docstring's claim: cohort, Bloom and PRR repeat across runs (fixed secret); the IRR is fresh
    CSPRNG noise.  Two runs' 4 IRRs of 16 bits (each bit 1 w.p. 0.5 or 0.75) all agree w.p. < 1e-12."""
    script = next(p for p in EXAMPLES if p.name == "encode_on_device.py")
    runs = [subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60, cwd=tmp_path,
                           check=True).stdout.splitlines() for _ in range(2)]
    fixed = [[line.split()[:3] for line in run[2:5]] + [run[0]] for run in runs]
    sent = [[line.split()[3] for line in run[2:5]] + [run[5]] for run in runs]
    assert fixed[0] == fixed[1]
    assert sent[0] != sent[1]
