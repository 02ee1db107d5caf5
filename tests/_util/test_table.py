"""Tests for rappor._util.table: results print as labelled tables, with or without pandas."""

from __future__ import annotations

from html.parser import HTMLParser

import numpy as np
import pytest

import rappor
from rappor._util import table as table_module
from rappor._util.table import TextTable, labelled_table


def _decoded() -> rappor.DecodeResult:
    params = rappor.Params(k=16, h=2, m=64, p=0.5, q=0.75, f=0.5)
    sim = rappor.simulate(params, rappor.Population.zipf(30), 20_000, rng=0)
    return rappor.Decoder().decode(sim.aggregate, rappor.hash_candidates([f"v{i}" for i in range(1, 31)], params))


@pytest.fixture(scope="module")
def result() -> rappor.DecodeResult:
    return _decoded()


@pytest.fixture
def no_pandas(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(table_module, "has_module", lambda name: name != "pandas")


def test_table_is_a_data_frame_where_pandas_is_installed(result):
    pd = pytest.importorskip("pandas")
    frame = result.table()
    assert isinstance(frame, pd.DataFrame)
    assert list(frame.columns) == list(result.table_array().dtype.names)
    assert frame["string"].tolist() == list(result.strings)


def test_table_without_pandas_prints_aligned_with_column_names(result, no_pandas):
    t = result.table()
    assert isinstance(t, TextTable)
    lines = str(t).splitlines()
    assert lines[0].split() == list(result.table_array().dtype.names)
    # 30 rows: the first 10, "...", the last 5, then the size.
    assert len(lines) == 1 + 10 + 1 + 5 + 1 and lines[11] == "..." and lines[-1] == "[30 rows x 12 columns]"
    # Aligned: every column of a row ends (numbers) or starts (strings) where its header does.
    header = lines[0]
    end = header.index("proportion") + len("proportion")
    for line in lines[1:11]:
        assert line[end - 1] != " " and (len(line) == end or line[end] == " ")
    assert lines[1].startswith("v1 ")


def test_text_table_indexes_like_the_array(result, no_pandas):
    t = result.table()
    np.testing.assert_array_equal(t["proportion"], result.proportion)
    detected = t[t["detected"]]
    assert isinstance(detected, TextTable) and detected["string"].tolist() == [
        s for s, d in zip(result.strings, result.detected) if d]
    assert len(t[result.ranking()]) == len(result.ranking())
    assert t.to_numpy().dtype == result.table_array().dtype


def test_text_table_rejects_a_plain_array():
    with pytest.raises(TypeError, match="structured array"):
        TextTable(np.zeros(3))


def test_labelled_table_small_shows_every_row_and_nan(no_pandas):
    arr = np.array([("a", 0.5, True), ("bb", np.nan, False)], dtype=[("s", "U2"), ("x", "f8"), ("ok", "?")])
    assert str(labelled_table(arr)) == (
        "s     x     ok\n"
        "a   0.5   True\n"
        "bb  NaN  False\n"
        "[2 rows x 3 columns]")


class _Cells(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.th: list[str] = []
        self.td = 0
        self._tag = ""

    def handle_starttag(self, tag, attrs):
        self._tag = tag
        if tag == "td":
            self.td += 1

    def handle_data(self, data):
        if self._tag == "th" and data.strip():
            self.th.append(data)


def test_results_show_as_html_tables_in_notebooks(result):
    cells = _Cells()
    cells.feed(result._repr_html_())
    assert cells.th == list(result.table_array().dtype.names)
    assert "DecodeResult(30 candidates" in result._repr_html_()
    rows = len(result.ranking())
    shown = rows if rows <= 20 else 15
    assert cells.td >= shown * len(cells.th)


def test_association_result_prints_as_a_labelled_table(no_pandas):
    from rappor.analysis.association import AssociationDecoder, simulate_association

    params = rappor.Params(k=16, h=2, m=16, p=0.25, q=0.75, f=0.0)
    joint = np.array([[0.3, 0.1], [0.1, 0.2], [0.2, 0.1]])
    sim = simulate_association(params, joint, [["a", "b", "c"], None], 5_000, rng=0)
    res = AssociationDecoder(candidates="all", other="none").decode(sim.reports, sim.variables)
    t = res.table()
    assert isinstance(t, TextTable) and str(t).splitlines()[0].split()[:3] == [*res.variables, "proportion"]
    assert len(str(t).splitlines()) == 1 + 6 + 1
    assert "<th>proportion</th>" in res._repr_html_()
