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


def test_readme_test_command_is_what_ci_runs() -> None:
    text = README.read_text(encoding="utf-8")
    ci = (Path(__file__).parent.parent / ".ci" / "run").read_text(encoding="utf-8")
    assert "pip install -e '.[test,all]'" in text and "-m pytest" in text
    assert '-e ".[test,all' in ci and "-m pytest" in ci
