"""Old import path of :mod:`rappor.formats.parquet` (Parquet reports): ``rappor.parquet`` *is* that module.

Every file format has its own module under :mod:`rappor.formats` (issue 15).
"""

from __future__ import annotations

from ._moved import alias_module
from .formats.parquet import *  # noqa: F403  (what type checkers see)
from .formats.parquet import __all__ as __all__

__getattr__ = alias_module(__name__, "rappor.formats.parquet")
