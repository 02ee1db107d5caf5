"""The README's Python quick start runs as written, and its two commands are the ones CI uses."""

from __future__ import annotations

import os
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
        # The figures its comments quote are what it computes.
        import rappor

        truth = namespace["sim"].truth  # type: ignore[attr-defined]
        ((tv, detected),) = re.findall(r"total_variation +# ([0-9.]+) here, ([0-9]+) strings detected", code)
        assert float(tv) == round(rappor.metrics.evaluate_result(result, truth).total_variation, len(tv) - 2)
        assert int(detected) == int(result.detected.sum())  # type: ignore[attr-defined]
        ((frequency, expected),) = re.findall(r"# ([0-9.]+) here: smallest share .*; ([0-9.]+) expected", code)
        outlook = namespace["outlook"]
        assert float(frequency) == round(outlook.frequency, len(frequency) - 2)  # type: ignore[attr-defined]
        assert float(expected) == round(outlook.expected, len(expected) - 2)  # type: ignore[attr-defined]


def _sh_blocks() -> list[str]:
    return re.findall(r"```sh\n(.*?)```", README.read_text(encoding="utf-8"), flags=re.S)


def test_readme_test_command_is_what_ci_runs() -> None:
    """.ci/run runs the README's test command byte for byte: no extra the user would not install."""
    commands = [line for block in _sh_blocks() for line in block.splitlines() if "-m pytest" in line]
    assert len(commands) == 1, commands
    ci_lines = (Path(__file__).parent.parent / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert commands[0] in ci_lines
    assert sum("pip install" in line for line in ci_lines) == 1


def _cli_quick_start() -> str:
    (block,) = [block for block in _sh_blocks() if "rappor keygen" in block]
    return block


def test_readme_cli_quick_start_runs_line_by_line_from_a_clone(tmp_path: Path) -> None:
    """The `rappor` quick start as written, in a directory laid out like a fresh clone after the README's two
    commands: `.venv/bin/activate` puts a `rappor` that runs this interpreter on the PATH, and data/quickstart/
    holds the files the lines use (copied from the repository, as a clone has them)."""
    import shutil
    import subprocess
    import sys

    block = _cli_quick_start()
    repo = Path(__file__).parent.parent
    shutil.copytree(repo / "data" / "quickstart", tmp_path / "data" / "quickstart")
    bin_dir = tmp_path / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    (bin_dir / "rappor").write_text(f'#!/bin/sh\nexec "{sys.executable}" -m rappor "$@"\n')
    (bin_dir / "rappor").chmod(0o755)
    (bin_dir / "activate").write_text(f'PATH="{bin_dir}:$PATH"\nexport PATH\n')
    env = {key: value for key, value in os.environ.items() if key not in ("VIRTUAL_ENV", "PYTHONPATH")}
    env["PATH"] = "/usr/bin:/bin"  # no other rappor to find
    done = subprocess.run(["bash", "-euo", "pipefail", "-c", block], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    work = tmp_path / "try"
    results = (work / "results.csv").read_text().splitlines()
    assert results[0].startswith("string,estimate,") and {"v1", "v2", "v3"} <= {r.split(",")[0] for r in results}
    assert "recommended:" in done.stdout and "epsilon_inf" in done.stdout
    assert (work / "summary.json").is_file() and (work / "demo" / "report.html").is_file()


def test_readme_every_measured_figure_names_its_command() -> None:
    """Each row of 'What you get, measured' with a figure names the script that reproduces it, and the script
    exists under benchmarks/."""
    text = README.read_text(encoding="utf-8")
    section = text[text.index("## What you get, measured"):]
    section = section[:section.index("\n## ", 4)]
    rows = [line for line in section.splitlines() if line.startswith("| ") and not line.startswith("|---")][1:]
    assert len(rows) >= 10
    benchmarks = Path(__file__).parent.parent / "benchmarks"
    for row in rows:
        label, ours = row.split(" | ")[:2]
        if not re.search(r"\d", ours):
            continue  # a yes/no row
        scripts = re.findall(r"([a-z_0-9]+\.py)", label + ours)
        assert scripts, row
        assert all((benchmarks / script).is_file() for script in scripts), scripts
