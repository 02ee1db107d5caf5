"""The package's version, in one place for ``rappor.__version__`` and ``rappor --version``."""

from __future__ import annotations

__all__ = ["__version__"]

__version__ = "0.1.0"
