"""found.csv: :func:`write_found` writes a discovery's values, :func:`read_found` and the candidate reader read them back."""

from __future__ import annotations

import io
import re
from pathlib import Path

import numpy as np
import pytest

from rappor.analysis.discovery import DiscoveryResult, DiscoverySpec
from rappor.exceptions import RapporWarning, ReportFormatError
from rappor.formats import is_found_file, read_candidates, read_found, read_found_rows, read_found_shares, write_found
from rappor.formats._found import FOUND_HEADER, FOUND_HEADER_WITHOUT_UTF8
from rappor.params import Params

#: Values a client can hold: a comma, quotes, a line break, an edge space, non-UTF-8 bytes.
VALUES = (b"alpha.com", b'comma,"quote"', b"evil\nline", b" edge", b"bad\xff")


def _result(significant: list[bool], values: tuple[bytes, ...] = VALUES) -> DiscoveryResult:
    n = len(values)
    spec = DiscoverySpec(params=Params(num_bloombits=16, num_hashes=2, num_cohorts=4, prob_p=0.25, prob_q=0.75,
                                       prob_f=0.5), max_length=8, segment=2)
    return DiscoveryResult(values=values, proportion=np.linspace(0.3, 0.1, n) / 3, prop_std_error=np.full(n, 0.01),
                           zscore=np.full(n, 9.0), pvalue=np.full(n, 1e-9), first_slot=np.arange(n, dtype=np.int64),
                           slots=np.ones(n, dtype=np.int64), found_zscore=np.full(n, 9.0),
                           significant=np.array(significant), n_tested=n, n_reports=1000, spec=spec,
                           significance_level=0.05)


def test_write_found_round_trips_every_value(tmp_path: Path) -> None:
    result = _result([True, True, True, False, True])
    path = tmp_path / "found.csv"
    write_found(result, path)
    assert path.read_text(encoding="utf-8").splitlines()[0] == FOUND_HEADER
    assert is_found_file(path)
    assert read_found(path) == list(zip(result.strings, [True, True, True, False, True]))
    shares = read_found_shares(path)
    assert [s for s, _ in shares] == [s for s, keep in zip(result.strings, result.significant) if keep]
    assert [share for _, share in shares] == [float(result.proportion[i]) for i in (0, 1, 2, 4)]  # full precision
    assert result.strings[4] == "bad\\xff"  # not UTF-8: shown with an escape
    assert [row.value for row in read_found_rows(path)] == list(VALUES)  # the bytes, exactly
    assert [row.text is None for row in read_found_rows(path)] == [False] * 4 + [True]
    # The candidate reader takes the significant values that are text, and says which it left out.
    with pytest.warns(RapporWarning, match=r"left out 1 significant value\(s\) that are not UTF-8 text \(line 7: "):
        assert read_candidates(path) == [s for s, keep in zip(result.strings[:4], result.significant) if keep]


def test_found_tells_literal_escapes_from_bytes_that_are_not_utf8(tmp_path: Path) -> None:
    """A literal ``\\xe6`` in valid text is text, and a candidate; ``\\xe6`` the byte is not.
    Before the ``utf8`` column both were written ``\\xe6`` and both read back as the text."""
    values = (b"lit\\xe6.com", b"raw\xe6.com", b"both\\x41\xe6\\")
    path = tmp_path / "found.csv"
    write_found(_result([True] * 3, values), path)
    rows = read_found_rows(path)
    assert [row.value for row in rows] == list(values)
    assert [row.text for row in rows] == ["lit\\xe6.com", None, None]
    # its two literal backslashes doubled, the byte 0xE6 escaped
    assert path.read_text(encoding="utf-8").splitlines()[3].startswith(r"both\\x41\xe6\\,")
    with pytest.warns(RapporWarning, match="left out 2 significant value"):
        assert read_candidates(path) == ["lit\\xe6.com"]


def test_found_of_the_layout_without_utf8_reads_as_text(tmp_path: Path) -> None:
    path = tmp_path / "found.csv"
    path.write_text(FOUND_HEADER_WITHOUT_UTF8 + "\nab\\xe6,0.5,0.01,9,1e-9,true,0,1\n'=x,0.2,0.01,9,1e-9,true,0,1\n")
    assert is_found_file(path)
    assert read_found_rows(path) == [(b"ab\\xe6", "ab\\xe6", True, 0.5, 2), (b"=x", "=x", True, 0.2, 3)]
    assert read_candidates(path) == ["ab\\xe6", "=x"]  # the spreadsheet quote removed, as on a candidate list


def test_write_found_to_an_open_file_writes_the_same(tmp_path: Path) -> None:
    result = _result([True] * len(VALUES))
    write_found(result, tmp_path / "found.csv")
    out = io.StringIO(newline="")
    write_found(result, out)
    assert out.getvalue().encode("utf-8") == (tmp_path / "found.csv").read_bytes()


def test_a_counts_file_is_not_a_found_file(tmp_path: Path) -> None:
    counts = tmp_path / "counts.csv"
    counts.write_text("10,1,2,3\n")
    assert not is_found_file(counts)


@pytest.mark.parametrize(("text", "message"), [
    ("string,proportion,prop_std_error,zscore,pvalue,significant,first_slot,slots\nx,1,2\n",
     "found.csv:2: expected 8 comma-separated fields, found 3"),
    ("string,proportion,prop_std_error,zscore,pvalue,significant,first_slot,slots\n\"a\nb\",1,1,1,1,yes,1,1\n",
     "found.csv:2: expected 'true' or 'false' in the significant column, found 'yes'"),
    (FOUND_HEADER + "\nx,1,1,1,1,true,1,1\n", "found.csv:2: expected 9 comma-separated fields, found 8"),
    (FOUND_HEADER + "\nx,1,1,1,1,true,1,1,maybe\n", "found.csv:2: expected 'true' or 'false' in the utf8 column"),
    (FOUND_HEADER + "\nx,0.5,1,1,1,true,1,1,false\ny\\q,1,1,1,1,true,1,1,false\n",
     "found.csv:3: expected only \\\\ and \\xNN escapes in a value whose utf8 column is false, found"),
])
def test_read_found_refuses_bad_rows(tmp_path: Path, text: str, message: str) -> None:
    bad = tmp_path / "found.csv"
    bad.write_text(text)
    with pytest.raises(ReportFormatError, match=re.escape(message.split(":", 2)[2].strip())):
        read_found(bad)
