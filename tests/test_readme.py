"""The README's Python quick start runs as written, and its two commands are the ones CI uses."""

from __future__ import annotations

import re
from pathlib import Path

README = Path(__file__).parent.parent / "README.md"


def _python_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), flags=re.S)


def test_readme_python_quick_start_runs() -> None:
    blocks = _python_blocks()
    assert blocks, "README has no python block"
    for code in blocks:
        namespace: dict[str, object] = {}
        exec(compile(code, str(README), "exec"), namespace)  # noqa: S102
        result = namespace["result"]
        # The quick start decodes a Zipf population: the top string must be found.
        assert "v1" in set(result.table()["string"])  # type: ignore[attr-defined]


def _sh_blocks() -> list[str]:
    return re.findall(r"```sh\n(.*?)```", README.read_text(encoding="utf-8"), flags=re.S)


def test_readme_test_command_is_what_ci_runs() -> None:
    """.ci/run runs the README's test command byte for byte: no extra the user would not install."""
    commands = [line for block in _sh_blocks() for line in block.splitlines() if "-m pytest" in line]
    assert len(commands) == 1, commands
    ci_lines = (Path(__file__).parent.parent / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert commands[0] in ci_lines
    assert sum("pip install" in line for line in ci_lines) == 1
