"""found.csv: :func:`write_found` writes a discovery's values, :func:`read_found` and the candidate reader read them back."""

from __future__ import annotations

import io
import re
from pathlib import Path

import numpy as np
import pytest

from rappor.analysis.discovery import DiscoveryResult, DiscoverySpec
from rappor.exceptions import ReportFormatError
from rappor.formats import is_found_file, read_candidates, read_found, read_found_shares, write_found
from rappor.formats._found import FOUND_HEADER
from rappor.params import Params

#: Values a client can hold: a comma, quotes, a line break, an edge space, non-UTF-8 bytes.
VALUES = (b"alpha.com", b'comma,"quote"', b"evil\nline", b" edge", b"bad\xff")


def _result(significant: list[bool]) -> DiscoveryResult:
    n = len(VALUES)
    spec = DiscoverySpec(params=Params(num_bloombits=16, num_hashes=2, num_cohorts=4, prob_p=0.25, prob_q=0.75,
                                       prob_f=0.5), max_length=8, segment=2)
    return DiscoveryResult(values=VALUES, proportion=np.linspace(0.3, 0.1, n) / 3, prop_std_error=np.full(n, 0.01),
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
    # The candidate reader takes the significant values as the file shows them.
    assert read_candidates(path) == [s for s, keep in zip(result.strings, result.significant) if keep]


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
])
def test_read_found_refuses_bad_rows(tmp_path: Path, text: str, message: str) -> None:
    bad = tmp_path / "found.csv"
    bad.write_text(text)
    with pytest.raises(ReportFormatError, match=re.escape(message.split(":", 2)[2].strip())):
        read_found(bad)
