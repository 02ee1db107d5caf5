"""Subcommands of the ``rappor`` command, one module each (discovered by :mod:`rappor.cli`).

A command module defines ``NAME``, ``HELP``, optionally ``ORDER`` (its place in the
help listing), ``configure(parser)`` and ``run(args) -> int``.  It imports heavy
dependencies (scikit-learn, pyarrow, matplotlib) inside ``run`` so that the command
starts quickly, and it does no statistics itself: it parses, calls one public
function and writes the result.
"""
