"""Text as one field of a CSV file that people may open in a spreadsheet (private).

* :func:`csv_field` quotes a field only when it must, so the csv module and R read it back exactly;
* :func:`spreadsheet_text` neutralises a leading formula character (OWASP's CSV-injection
  guidance) and :func:`restore_text` undoes it; :func:`csv_text_field` does both steps of a write.
"""

from __future__ import annotations

__all__ = ["FORMULA_TRIGGERS", "csv_field", "csv_text_field", "restore_text", "spreadsheet_text"]


def csv_field(text: str) -> str:
    """``text`` as one field of a written CSV row (``results.csv``, ``truth.csv``).

    Quoted, with quotes doubled, when it holds a comma, a quote or a line break (``\r``
    or ``\n``), or starts or ends with white space (which some readers strip); bare
    otherwise.  The csv module and R's ``read.csv`` read it back exactly.
    """
    if any(ch in text for ch in ',"\n\r') or text != text.strip():
        return '"' + text.replace('"', '""') + '"'
    return text


#: First characters that make a spreadsheet take a cell for a formula (OWASP, "CSV Injection"):
#: ``= + - @``, tab and carriage return.
FORMULA_TRIGGERS = frozenset("=+-@\t\r")


def spreadsheet_text(text: str) -> str:
    """``text`` as a cell a spreadsheet shows as text: ``'`` prepended when it could start a formula.

    Following OWASP's CSV-injection guidance, a value that starts with a formula trigger
    (:data:`FORMULA_TRIGGERS`) gets a leading single quote, so ``=cmd|' /C calc'!A0`` is
    written ``'=cmd|' /C calc'!A0``.  So that every value reads back exactly
    (:func:`restore_text`), a value that starts with one or more quotes followed by a
    trigger gets one quote more; every other value is written as it is (google/rappor's
    files read the same).

    Examples
    --------
    >>> spreadsheet_text("=SUM(A1)"), spreadsheet_text("'=x"), spreadsheet_text("it's")
    ("'=SUM(A1)", "''=x", "it's")
    """
    rest = text.lstrip("'")
    return "'" + text if rest and rest[0] in FORMULA_TRIGGERS else text


def restore_text(cell: str) -> str:
    """The value :func:`spreadsheet_text` wrote as ``cell``: one leading quote before ``'*`` and a trigger removed.

    Examples
    --------
    >>> restore_text("'=SUM(A1)"), restore_text("''=x"), restore_text("'tis"), restore_text("-1")
    ('=SUM(A1)', "'=x", "'tis", '-1')
    """
    rest = cell.lstrip("'")
    return cell[1:] if cell.startswith("'") and rest and rest[0] in FORMULA_TRIGGERS else cell


def csv_text_field(text: str) -> str:
    """A client-controlled string (a candidate, a discovered value) as one CSV field people may open.

    :func:`spreadsheet_text`, then :func:`csv_field`; our readers undo it with :func:`restore_text`.
    """
    return csv_field(spreadsheet_text(text))
