"""Tests for rappor._util.progress: bars only on a terminal, never with quiet, on stderr only."""

from __future__ import annotations

import sys

import pytest

from rappor._util.progress import enabled, progress, steps


def _terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    """Standard error (capsys's stream, which the tests read) is a terminal."""
    pytest.importorskip("tqdm")
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)


def test_progress_disabled_when_stderr_is_not_a_terminal(capsys):
    assert not enabled()
    with progress(10, desc="work") as advance:
        assert advance is None
    with steps(["a", "b"], desc="work") as step:
        step.start("a")
        step.start("b")
    assert capsys.readouterr().err == ""


def test_progress_quiet_on_a_terminal(monkeypatch, capsys):
    _terminal(monkeypatch)
    assert enabled() and not enabled(quiet=True)
    with progress(10, desc="work", quiet=True) as advance:
        assert advance is None
    with steps(["a"], desc="work", quiet=True) as step:
        step.start("a")
    assert capsys.readouterr().err == ""


def test_progress_draws_on_stderr_on_a_terminal(monkeypatch, capsys):
    _terminal(monkeypatch)
    with progress(4, desc="work", unit="B") as advance:
        assert advance is not None
        advance(4)
    with steps(["read", "decode"], desc="cmd") as step:
        step.start("read")
        step.start("decode")
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "work" in captured.err and "cmd: decode (step 1/2" in captured.err


def test_progress_without_tqdm_draws_nothing(monkeypatch, capsys):
    _terminal(monkeypatch)
    monkeypatch.setitem(sys.modules, "tqdm", None)  # `import tqdm` fails
    assert not enabled()
    with steps(["a"], desc="work") as step:
        step.start("a")
    assert capsys.readouterr().err == ""
