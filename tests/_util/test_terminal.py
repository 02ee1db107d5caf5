"""Terminal output (rappor._util.terminal): control and bidirectional characters never reach a terminal raw."""

from __future__ import annotations

import io
import os
import pty
import subprocess
import sys
from pathlib import Path

import pytest

from rappor._util.terminal import TerminalStream, terminal_text


@pytest.mark.parametrize(("raw", "shown"), [
    ("\x1b[31mred", "\\x1b[31mred"), ("bell\x07", "bell\\x07"), ("exe.\u202etxt", "exe.\\u202etxt"),
    ("\u2066a\u2069\u200f", "\\u2066a\\u2069\\u200f"), ("nul\x00\x7f\x9b", "nul\\x00\\x7f\\x9b"),
    ("a\tb\n", "a\tb\n"), ("caf\u00e9 \u65e5\u672c", "caf\u00e9 \u65e5\u672c"),
])
def test_terminal_text_escapes_controls_and_bidi_only(raw: str, shown: str) -> None:
    assert terminal_text(raw) == shown


def test_terminal_stream_escapes_everything_written() -> None:
    buffer = io.StringIO()
    stream = TerminalStream(buffer)
    stream.write("note: \u202eab\x1b]0;title\x07\n")
    assert buffer.getvalue() == "note: \\u202eab\\x1b]0;title\\x07\n"


def _decode_to_stdout(tmp_path: Path, stdout: int) -> subprocess.Popen[bytes]:
    (tmp_path / "params.csv").write_text("k,h,m,p,q,f\n8,2,4,0.5,0.75,0.5\n")
    (tmp_path / "counts.csv").write_text("".join("10," + ",".join(["5"] * 8) + "\n" for _ in range(4)))
    (tmp_path / "cand.txt").write_text("\x1b[31mred\nexe.\u202etxt\n", encoding="utf-8")
    argv = [sys.executable, "-m", "rappor", "decode", "--params", str(tmp_path / "params.csv"), "--counts",
            str(tmp_path / "counts.csv"), "--candidates", str(tmp_path / "cand.txt"), "--all"]
    return subprocess.Popen(argv, stdout=stdout, stderr=subprocess.DEVNULL)


def test_cli_results_on_a_terminal_are_escaped_and_exact_in_a_pipe(tmp_path: Path) -> None:
    """results.csv written to a terminal shows ESC and U+202E as escapes; piped, the exact values."""
    master, slave = pty.openpty()
    proc = _decode_to_stdout(tmp_path, slave)
    os.close(slave)
    shown = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # the other end closed (EIO on Linux)
            break
        if not chunk:
            break
        shown += chunk
    os.close(master)
    assert proc.wait() == 0
    text = shown.decode("utf-8")
    assert "\x1b" not in text and "\u202e" not in text, text
    assert "\\x1b[31mred" in text and "exe.\\u202etxt" in text
    piped = _decode_to_stdout(tmp_path, subprocess.PIPE)
    out = piped.communicate()[0].decode("utf-8")
    assert piped.returncode == 0
    assert "\x1b[31mred" in out and "exe.\u202etxt" in out
