"""Plumbing shared by several stages (private): nothing here is part of the public API.

In the order a run meets them: ``validation`` (the parameter checks and their one message
template), ``lazy`` (optional and slow imports on first use), ``memory`` (refusing a
table before it is allocated), ``pages`` (the largest arrays in pages of their own), ``paths`` (display names, the same-file check), ``inputs``
(reading a path or ``-``), ``outputs`` (atomic output), ``csv_text`` (CSV fields people may
open in a spreadsheet), ``excerpt`` and ``keyfile`` (what an error may quote of a line, never a key),
``csv_blocks`` and ``bits`` (CSV rows and bit strings parsed in blocks), ``clients`` (a
client id in two cohorts found, for the reports' reader and the association decoder), ``rejects``
(rows set aside with ``--on-error``), ``workers`` and ``interrupt`` (worker processes,
signals), ``terminal`` and ``progress`` (text shown on a terminal, progress bars),
``results`` and ``table`` (small result records and labelled tables shared by several
stages), ``tails`` (normal and chi-square tail functions without importing
``scipy.stats``) and ``version``.
"""
