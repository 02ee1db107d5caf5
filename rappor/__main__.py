"""``python -m rappor``: the same as the ``rappor`` command."""

from __future__ import annotations

from .cli._main import main

raise SystemExit(main())
