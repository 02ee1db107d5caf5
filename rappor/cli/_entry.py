"""The ``rappor`` program's entry point: the console script and ``python -m rappor`` call :func:`run`.

Before NumPy loads, it asks OpenBLAS for one thread unless the user set
``OPENBLAS_NUM_THREADS``: OpenBLAS starts a thread per core when it loads, and those
threads spin while the process imports and while it does its small dense products (a
decode's are support-sized; the association and planning fits limit themselves to one
thread already).  On 2 cores they cost a 10,000-candidate ``rappor decode`` about 0.13 s
of its 0.95 s CPU, before any work.  Only the program does this; importing
:mod:`rappor.cli` leaves the environment alone.
"""

from __future__ import annotations

import os

__all__ = ["run"]


def run() -> int:
    """Run the ``rappor`` command line (one BLAS thread unless ``OPENBLAS_NUM_THREADS`` says otherwise)."""
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    from ._main import main

    return main()
