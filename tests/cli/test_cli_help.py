"""Every subcommand's --help: plain text (no reST markup), wrapped to the terminal, defaults stated alike."""

from __future__ import annotations

import argparse
import re

import pytest

from rappor.cli._main import build_parser


def _subparsers() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    (sub,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]  # noqa: SLF001
    return {"": parser, **sub.choices}


COMMANDS = sorted(_subparsers())


@pytest.mark.parametrize("width", [80, 120])
@pytest.mark.parametrize("command", COMMANDS)
def test_help_is_plain_text_within_the_terminal(command: str, width: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", str(width))
    text = _subparsers()[command].format_help()
    assert "``" not in text and not re.search(r":(mod|func|class|meth|attr):`", text), "reST markup in --help"
    long_lines = [line for line in text.splitlines() if len(line) > width]
    assert long_lines == []


@pytest.mark.parametrize("command", COMMANDS)
def test_every_option_with_a_value_states_its_default(command: str) -> None:
    """'[default: ...]' on every optional argument that takes a value; no '[100000]' or '(default)' variants."""
    missing, odd = [], []
    parser = _subparsers()[command]
    one_required = {a for g in parser._mutually_exclusive_groups if g.required for a in g._group_actions}  # noqa: SLF001
    for action in parser._actions:  # noqa: SLF001
        if action.help in (None, argparse.SUPPRESS) or isinstance(action, (argparse._HelpAction,  # noqa: SLF001
                                                                          argparse._VersionAction,  # noqa: SLF001
                                                                          argparse._SubParsersAction)):  # noqa: SLF001
            continue
        name = "/".join(action.option_strings) or action.dest
        takes_value = action.nargs != 0
        optional = (not action.required and action not in one_required
                    and (action.option_strings or action.nargs in ("?", "*")))
        if takes_value and optional and "[default: " not in action.help:
            missing.append(name)
        if "(default)" in action.help or re.search(r"\[(?!default: )[^\]]*\]$", action.help):
            odd.append(name)
    assert missing == [] and odd == []
