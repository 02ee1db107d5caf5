"""``python -m rappor``: the same as the ``rappor`` command."""

from __future__ import annotations

from .cli._entry import run

raise SystemExit(run())
