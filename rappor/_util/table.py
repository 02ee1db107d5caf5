"""Labelled tables of results (private): a pandas data frame where pandas is installed, else a text table.

A result's ``table()`` (:class:`~rappor.analysis.decoder.DecodeResult`,
:class:`~rappor.analysis.association.AssociationResult`) passes its numpy structured array
to :func:`labelled_table`, which gives what prints and displays well: a
:class:`pandas.DataFrame` when pandas can be imported (rappor does not install it), else a
:class:`TextTable` -- the same columns, printed as an aligned text table, shown as an HTML
table in notebooks (``_repr_html_``), indexed like the array (``t["string"]``,
``t[t["detected"]]``).  The structured array itself stays available from each result
(``table_array()``).
"""

from __future__ import annotations

import html
import math
from typing import Any

import numpy as np
import numpy.typing as npt

from .lazy import has_module, import_optional

__all__ = ["TextTable", "format_cell", "labelled_table"]

#: Rows shown by ``str``/``repr`` and ``_repr_html_`` (the first ``HEAD`` and the last ``TAIL`` beyond it).
MAX_ROWS = 20
HEAD = 10
TAIL = 5


def labelled_table(array: npt.NDArray[Any]) -> Any:
    """``array`` (a structured array) as a :class:`pandas.DataFrame` if pandas is installed, else a :class:`TextTable`."""
    if has_module("pandas"):
        return import_optional("pandas", "a data frame").DataFrame(array)
    return TextTable(array)


def format_cell(value: Any) -> str:
    """A cell as the text table shows it: numbers to 4 significant digits, ``nan`` as ``NaN``, bools as is."""
    if isinstance(value, (bool, np.bool_)):
        return str(bool(value))
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    if isinstance(value, (float, np.floating)):
        x = float(value)
        if math.isnan(x):
            return "NaN"
        return f"{x:.4g}"
    return str(value)


class TextTable:
    """A structured array with column names that prints as an aligned table.

    Indexing is the array's: a column name gives the column (an ndarray), anything else
    (a mask, indices, a slice) a :class:`TextTable` of those rows.

    Parameters
    ----------
    array : ndarray with named fields
    """

    __slots__ = ("_array",)

    def __init__(self, array: npt.NDArray[Any]) -> None:
        if array.dtype.names is None:
            msg = "The 'array' parameter of TextTable must be a structured array (named columns)."
            raise TypeError(msg)
        self._array = array

    @property
    def columns(self) -> tuple[str, ...]:
        """The column names."""
        return tuple(self._array.dtype.names or ())

    def to_numpy(self) -> npt.NDArray[Any]:
        """The structured array."""
        return self._array

    def __len__(self) -> int:
        return len(self._array)

    def __getitem__(self, key: Any) -> Any:
        if isinstance(key, str):
            return self._array[key]
        return TextTable(np.atleast_1d(self._array[key]))

    def __iter__(self) -> Any:
        return iter(self._array)

    def _shown(self) -> tuple[list[int], bool]:
        n = len(self._array)
        if n <= MAX_ROWS:
            return list(range(n)), False
        return [*range(HEAD), *range(n - TAIL, n)], True

    def __str__(self) -> str:
        rows, cut = self._shown()
        names = self.columns
        cells = [[format_cell(self._array[name][i]) for name in names] for i in rows]
        text = [self._array.dtype[name].kind in "US" for name in names]
        widths = [max([len(name)] + [len(row[j]) for row in cells]) for j, name in enumerate(names)]

        def line(values: list[str]) -> str:
            return "  ".join(v.ljust(w) if t else v.rjust(w) for v, w, t in zip(values, widths, text)).rstrip()

        out = [line(list(names))]
        for k, row in enumerate(cells):
            if cut and k == HEAD:
                out.append("...")
            out.append(line(row))
        out.append(f"[{len(self._array)} rows x {len(names)} columns]")
        return "\n".join(out)

    def __repr__(self) -> str:
        return str(self)

    def _repr_html_(self) -> str:
        rows, cut = self._shown()
        names = self.columns
        out = ["<table>", "<thead><tr>" + "".join(f"<th>{html.escape(n)}</th>" for n in names) + "</tr></thead>",
               "<tbody>"]
        for k, i in enumerate(rows):
            if cut and k == HEAD:
                out.append(f'<tr><td colspan="{len(names)}">...</td></tr>')
            out.append("<tr>" + "".join(f"<td>{html.escape(format_cell(self._array[n][i]))}</td>" for n in names)
                       + "</tr>")
        out += ["</tbody>", "</table>", f"<p>{len(self._array)} rows x {len(names)} columns</p>"]
        return "\n".join(out)
