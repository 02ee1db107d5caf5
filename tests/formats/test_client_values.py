"""rappor.formats._client_values: the ``client,value`` input of the encoder, read in blocks and written back.

The reader's rows equal the csv module's on every input (``tests/test_fuzz.py``,
``test_fuzz_encode_input_equals_csv_module``); ``rappor encode`` is tested in
``tests/cli/test_cli_encode.py`` and :func:`rappor.encode_file` in ``tests/engines/test_file_encoder.py``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import rappor.formats._client_values as client_values
from rappor import InvalidParameterError, ReportFormatError
from rappor.formats import read_client_values, write_client_values


def test_client_values_parser_fuzz(tmp_path: Path) -> None:
    # Any bytes give either rows or a ReportFormatError naming the file: never another exception.
    hypothesis = pytest.importorskip("hypothesis")
    from hypothesis import strategies as st

    alphabet = st.sampled_from([b"client,value\n", b"a,b\n", b",", b'"', b"\r\n", b"\n", b"x", b" ", b"\xff",
                                b"\xef\xbb\xbf", b"\xc3\xa9", b"\x00"])
    path = tmp_path / "fuzz.csv"

    @hypothesis.settings(max_examples=300, deadline=None, database=None,
                         suppress_health_check=[hypothesis.HealthCheck.function_scoped_fixture])
    @hypothesis.given(st.lists(alphabet, max_size=12).map(b"".join))
    def check(data: bytes) -> None:
        path.write_bytes(data)
        try:
            rows = list(client_values.iter_rows(path))
        except ReportFormatError as exc:
            assert str(exc).startswith(str(path))
        else:
            assert all(client and isinstance(value, str) for _, client, value in rows)

    check()

def test_client_values_plain_blocks_take_the_fast_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Quote-free blocks are split at C speed (_plain_columns); the differential test in
    # tests/test_fuzz.py checks that this gives the csv module's rows on every input.
    taken: list[bool] = []
    real = client_values._plain_columns

    def spy(block, *width):  # type: ignore[no-untyped-def]
        result = real(block, *width)
        taken.append(result is not None)
        return result

    monkeypatch.setattr(client_values, "_plain_columns", spy)
    monkeypatch.setattr(client_values, "BLOCK_BYTES", 64)
    path = tmp_path / "in.csv"
    path.write_bytes(b"client,value\r\n" + b"".join(b"c%d,v%d\r\n" % (i, i) for i in range(100)))
    rows = list(client_values.iter_rows(path))
    assert rows == [(i + 2, f"c{i}", f"v{i}") for i in range(100)]
    assert len(taken) > 10 and all(taken)
    taken.clear()
    path.write_bytes(b'client,value\n"a",b\nc,\xff\nd,e,f\n,x\n\ng,h\n')  # each line a special case
    with pytest.raises(ReportFormatError):
        list(client_values.iter_rows(path))
    assert not any(taken)


def test_client_values_memory_is_bounded_by_the_block(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Issue 13, item 7: rappor encode held its whole input (about 230 bytes a row; 69 MB
    # of Python objects for these 200,000 rows).  Read in 64 KiB blocks and 4,096-row
    # chunks, the peak stays near 2 MB whatever the number of rows (tracemalloc counts
    # Python and numpy allocations).
    import tracemalloc

    monkeypatch.setattr(client_values, "BLOCK_BYTES", 1 << 16)
    peaks = []
    for n in (50_000, 200_000):
        path = tmp_path / f"in{n}.csv"
        with path.open("w") as fh:
            fh.write("client,value\n")
            fh.writelines(f"client-{i:08d},https://example.com/page/{i % 1000}\n" for i in range(n))
        tracemalloc.start()
        try:
            rows = sum(len(clients) for clients, _ in client_values.iter_client_values(path, chunk_size=4096))
            peaks.append(tracemalloc.get_traced_memory()[1])
        finally:
            tracemalloc.stop()
        assert rows == n
    assert peaks[1] < 8 * 2**20, peaks  # the file is 9 MB; the old reader needed 69 MB
    assert peaks[1] < 1.5 * peaks[0], peaks  # independent of the input's size


def test_client_values_write_then_read_round_trip(tmp_path: Path) -> None:
    # Fields that need quoting (a comma, a quote, line breaks, a lone CR, spaces at an
    # edge, an empty value) come back exactly; chunks keep file order.
    clients = ["a", "b,c", 'say "hi"', "line\nbreak", " padded ", "cr\ronly", "a"]
    values = ["x", "", "y, z", "\r\n", " v ", "é", "x"]
    path = tmp_path / "in.csv"
    write_client_values(path, clients, values)
    assert read_client_values(path) == (clients, values)
    chunks = list(client_values.iter_client_values(path, chunk_size=3))
    assert [len(c) for c, _ in chunks] == [3, 3, 1]
    assert sum((c for c, _ in chunks), []) == clients


def test_client_values_round_trip_fuzz(tmp_path: Path) -> None:
    hypothesis = pytest.importorskip("hypothesis")
    from hypothesis import strategies as st

    text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=8)
    path = tmp_path / "fuzz.csv"

    @hypothesis.settings(max_examples=200, deadline=None, database=None,
                         suppress_health_check=[hypothesis.HealthCheck.function_scoped_fixture])
    @hypothesis.given(st.lists(st.tuples(text.filter(bool), text), max_size=6))
    def check(rows: list[tuple[str, str]]) -> None:
        clients, values = [c for c, _ in rows], [v for _, v in rows]
        write_client_values(path, clients, values)
        assert read_client_values(path) == (clients, values)

    check()


@pytest.mark.parametrize(("clients", "values", "message"), [
    (["a", ""], ["x", "y"], "'clients' parameter of write_client_values must hold a non-empty str. Got '' at index 1"),
    (["a"], ["x", "y"], "must have the length of clients \\(1\\). Got 2"),
    (["a"], [3], "'values' parameter of write_client_values must hold a str. Got 3 at index 0"),
    (["a\ud800"], ["x"], "must hold text encodable as UTF-8"),
])
def test_client_values_write_fail_unreadable_rows(tmp_path: Path, clients: list[object], values: list[object],
                                                  message: str) -> None:
    with pytest.raises(InvalidParameterError, match=message):
        write_client_values(tmp_path / "out.csv", clients, values)  # type: ignore[arg-type]
    assert not (tmp_path / "out.csv").exists()


def test_client_values_skip_collects_bad_rows(tmp_path: Path) -> None:
    path = tmp_path / "in.csv"
    path.write_bytes(b"client,value\na,1\nbad\n,2\nb,3\n")
    with pytest.raises(ReportFormatError, match="in.csv:3: expected 2 comma-separated fields"):
        read_client_values(path)
    rejects: list[object] = []
    assert read_client_values(path, on_error="skip", rejects=rejects) == (["a", "b"], ["1", "3"])
    assert [r.line for r in rejects] == [3, 4]  # type: ignore[attr-defined]
    with pytest.raises(InvalidParameterError, match="'rejects' parameter of iter_client_values"):
        read_client_values(path, on_error="skip")
