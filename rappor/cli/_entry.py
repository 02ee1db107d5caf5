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
import sys

__all__ = ["run"]


def run() -> int:
    """Run the ``rappor`` command line (one BLAS thread unless ``OPENBLAS_NUM_THREADS`` says otherwise)."""
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    try:
        from ._main import main
    except KeyboardInterrupt:  # Ctrl-C while the modules load (the first few tenths of a second)
        return _interrupted_while_loading()
    except ImportError as exc:
        # An interrupt inside an extension's import surfaces as that module's ImportError
        # (NumPy's says the installation is broken): it is the interrupt, not the install.
        if isinstance(exc.__context__, KeyboardInterrupt) or isinstance(exc.__cause__, KeyboardInterrupt):
            return _interrupted_while_loading()
        raise
    return main()


def _interrupted_while_loading() -> int:
    sys.stderr.write("rappor: interrupted\n")
    return 130
