"""Property-based fuzzing of every parser and of Aggregate.merge (Hypothesis).

* Arbitrary bytes, and valid files with a few corrupted bytes, never raise anything but
  a :class:`~rappor.RapporError` (with the file named) from the params, reports,
  counts, map, candidates, key-file, population and ``rappor encode`` input readers.
* Valid generated files round-trip exactly.
* ``Aggregate.merge`` is associative, commutative, has ``Aggregate.empty`` as identity
  and is exact (equal to the sum in Python integers).

Runs are derandomized (a fixed sequence of examples) so CI is deterministic.
"""

from __future__ import annotations

import contextlib
import csv
import io
import os
import re
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rappor import (
    Aggregate,
    IncompatibleParamsError,
    Params,
    RapporError,
    ReportBatch,
    ReportFormatError,
    hash_candidates,
)
from rappor.formats import read_candidates, read_counts, read_map, read_params, read_reports, write_candidates, write_counts, write_map, write_params, write_reports
from rappor.formats import read_key_file, write_found
from rappor.formats._client_values import iter_rows as _encode_rows
from rappor.formats._population import read_population
from rappor.formats._params import params_text

sys.path.insert(0, str(Path(__file__).parent))
import strategies  # noqa: E402

FUZZ = settings(max_examples=60, derandomize=True, deadline=None, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
SMALL = Params(num_bloombits=8, num_hashes=2, num_cohorts=4, prob_p=0.5, prob_q=0.75, prob_f=0.5)


@pytest.fixture(scope="module")
def scratch() -> Iterator[Path]:
    with tempfile.TemporaryDirectory() as d:
        yield Path(d)


def _write(directory: Path, data: bytes) -> Path:
    path = directory / "input"
    path.write_bytes(data)
    os.chmod(path, 0o600)
    return path


def _only_rappor_errors(read: Callable[[Path], Any], path: Path) -> None:
    try:
        read(path)
    except ReportFormatError as exc:
        assert exc.path == str(path), exc  # the file is always named
    except RapporError:
        pass


_VALID_FILES = {
    "params": params_text(SMALL).encode(),
    "reports": b"client,cohort,irr\nc1,0,00000001\nc2,3,10101010\n\"c,3\",1,11111111\n",
    "google": b"client,cohort,bloom,prr,irr\nc1,0,00000001,00000011,00000111\n",
    "counts": b"2,1,0,0,0,0,0,0,2\n0,0,0,0,0,0,0,0,0\n5,5,5,5,5,5,5,5,5\n1,0,0,0,0,0,0,0,1\n",
    "candidates": b"apple\nbanana split\n\"quoted\",x\n",
    "key": b"00112233445566778899aabbccddeeff\n",
    "population": b"string,count\napple,70\n\"b,c\",30\n",
    "encode-input": b"client,value\nc1,apple\nc2,\"b,c\"\nc3,x\r\n",
}
_READERS: dict[str, Callable[[Path], Any]] = {
    "params": read_params,
    "reports": lambda p: read_reports(p, SMALL, chunk_size=2),
    "google": lambda p: read_reports(p, SMALL),
    "counts": lambda p: read_counts(p, SMALL),
    "candidates": read_candidates,
    "key": read_key_file,
    "population": read_population,
    "encode-input": lambda p: list(_encode_rows(p)),  # rappor encode's client,value reader
}


def _map_bytes() -> bytes:
    with tempfile.TemporaryDirectory() as d:
        write_map(hash_candidates(["a", "b,c", 'd"e'], SMALL), Path(d) / "map.csv")
        return (Path(d) / "map.csv").read_bytes()


_VALID_FILES["map"] = _map_bytes()
_READERS["map"] = lambda p: read_map(p, SMALL)


@pytest.mark.parametrize("kind", sorted(_READERS))
def test_fuzz_valid_seed_files_are_valid(kind: str, scratch: Path) -> None:
    _READERS[kind](_write(scratch, _VALID_FILES[kind]))


@pytest.mark.parametrize("kind", sorted(_READERS))
@FUZZ
@given(data=st.binary(max_size=200))
def test_fuzz_arbitrary_bytes(kind: str, data: bytes, scratch: Path) -> None:
    _only_rappor_errors(_READERS[kind], _write(scratch, data))


@pytest.mark.parametrize("kind", sorted(_READERS))
@FUZZ
@given(data=st.data())
def test_fuzz_corrupted_valid_files(kind: str, data: st.DataObject, scratch: Path) -> None:
    corrupted = data.draw(strategies.mutated(_VALID_FILES[kind]))
    _only_rappor_errors(_READERS[kind], _write(scratch, corrupted))


def _read_map_outcome(path: Path) -> tuple[Any, ...]:
    try:
        cmap = read_map(path, SMALL)
    except ReportFormatError as exc:
        return ("error", exc.line, exc.message)
    return ("map", cmap.strings, cmap.matrix.toarray().tolist())


_MAP_CELLS = st.one_of(st.integers(1, 32).map(str), st.integers(0, 40).map(str),
                       st.sampled_from(["", "x", "-3", "2.0", "²", "007", "99999999999999999999999", " 5", '"5"']))


@FUZZ
@given(rows=st.lists(st.tuples(st.text(alphabet='ab,"\r \t²é', max_size=6),
                               st.lists(_MAP_CELLS, min_size=6, max_size=10)), max_size=5))
def test_fuzz_map_fast_path_equals_csv_path(rows: list[tuple[str, list[str]]], scratch: Path) -> None:
    """read_map's string-method fast path gives exactly what the csv module path gives.

    Same map, or the same error on the same line with the same message, on rows that are
    valid, nearly valid (cells off by one, odd strings) or not at all.
    """
    import rappor.formats._map

    text = "".join(f"{name},{','.join(cells)}\n" for name, cells in rows).encode()
    path = _write(scratch, text)
    fast = _read_map_outcome(path)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(rappor.formats._map, "_split_row", lambda text, width: None)
        slow = _read_map_outcome(path)
    assert fast == slow


# ------------------------------------------------------------------ CSV readers = the csv module
#
# The reports reader (rappor.formats._reports_csv) and rappor encode's client,value reader read their
# input in blocks, with a fast path for quote-free lines.  Whatever the bytes and the
# block size, they must give exactly what the csv module gives on the whole file
# (csv.reader(open(path, newline="")), default dialect, no field size limit): same
# rows, same rejects, or the same first error at the line where its record starts.

_CSV_TOKENS = [b",", b'"', b'""', b"\r", b"\n", b"\r\n", b"0", b"1", b"01010101", b"3", b"c", b" ", b"\x00",
               b"\xc3\xa9", b"\xff", b"\xef\xbb\xbf"]


@contextlib.contextmanager
def _no_field_limit() -> Iterator[None]:
    old = csv.field_size_limit(2**31 - 1)
    try:
        yield
    finally:
        csv.field_size_limit(old)


def _csv_module_records(data: bytes, *, strict: bool = False, errors: str = "replace",
                        ) -> Iterator[tuple[int, list[str] | None, str | None, str]]:
    """``(start line, fields, csv error, record text)`` of each record, by the csv module on the whole text.

    The record text keeps its line breaks; undecodable bytes are decoded with ``errors``.
    """
    text = data.decode("utf-8", errors=errors).removeprefix("\ufeff")
    consumed: list[str] = []

    def lines() -> Iterator[str]:
        for physical in io.StringIO(text, newline=""):
            consumed.append(physical)
            yield physical

    reader = csv.reader(lines(), strict=strict)
    line = 1
    while True:
        consumed.clear()
        try:
            fields: list[str] | None = next(reader)
            error = None
        except StopIteration:
            return
        except csv.Error as exc:
            fields, error = None, str(exc)
        yield line, fields, error, "".join(consumed)
        line += len(consumed)


def _reports_by_csv_module(data: bytes, skip: bool) -> tuple[Any, ...]:
    from rappor._util.excerpt import clip, excerpt
    from rappor.formats._reports_csv import _check_cells

    cohorts: list[int] = []
    irrs: list[str] = []
    rejects: list[tuple[int, str, str]] = []
    records = _csv_module_records(data)
    next(records)  # the header (the generated files always have a good one)
    for line, fields, error, record in records:
        text = record.rstrip("\r\n")
        if fields == []:
            continue
        try:
            if error is not None:
                raise ReportFormatError(f"expected a CSV row, found {excerpt(text)} ({error})", path="f", line=line)
            cohort, irr = _check_cells(fields or [], SMALL, 3, "f", line)
        except ReportFormatError as exc:
            if not skip:
                return ("error", line, exc.message)
            rejects.append((line, exc.message, clip(text)))
            continue
        cohorts.append(cohort)
        irrs.append(irr)
    return ("rows", cohorts, irrs, rejects)


def _reports_by_reader(path: Path, skip: bool) -> tuple[Any, ...]:
    sink: list[Any] = []
    try:
        batch = read_reports(path, SMALL, on_error="skip" if skip else "raise", rejects=sink if skip else None)
    except ReportFormatError as exc:
        return ("error", exc.line, exc.message)
    return ("rows", batch.cohorts.tolist(), batch.bitstrings() if len(batch) else [],
            [(r.line, r.reason, r.text) for r in sink])


_REPORT_ROWS = st.one_of(
    st.builds(lambda c, b: b"c,%d,%s\n" % (c, b), st.integers(0, 5), st.sampled_from([b"01010101", b"0101010", b"11"])),
    st.builds(lambda i, c: b'"%s",%d,11110000\n' % (i, c),  # quoted ids: line breaks, commas, quotes, CRs
              st.lists(st.sampled_from([b"x", b"\n", b"\r", b"\r\n", b",", b'""', b"mallory,7,11111111"]),
                       max_size=4).map(b"".join), st.integers(0, 4)),
    st.lists(st.sampled_from(_CSV_TOKENS), max_size=8).map(b"".join),
)


@settings(max_examples=300, derandomize=True, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(rows=st.lists(_REPORT_ROWS, max_size=10), block=st.integers(1, 48), skip=st.booleans())
def test_fuzz_reports_reader_equals_csv_module(rows: list[bytes], block: int, skip: bool, scratch: Path) -> None:
    """Quoted line breaks, quotes, commas, CRs, NULs and bad bytes, at any block size."""
    import rappor.formats._reports_csv

    data = b"client,cohort,irr\n" + b"".join(rows)
    path = _write(scratch, data)
    expected = _reports_by_csv_module(data, skip)
    with pytest.MonkeyPatch.context() as patch, _no_field_limit():
        patch.setattr(rappor.formats._reports_csv, "_BLOCK_BYTES", block)
        assert _reports_by_reader(path, skip) == expected


def _encode_input_by_csv_module(data: bytes, skip: bool) -> tuple[Any, ...]:
    """What rappor encode's reader must give: strict csv module, blank rows skipped, rows checked."""
    from rappor._util.excerpt import clip

    rows: list[tuple[int, str, str]] = []
    rejects: list[tuple[int, str, str]] = []
    header_seen = False
    for start, fields, error, record in _csv_module_records(data, strict=True, errors="surrogateescape"):
        reason = None if error is None else f"malformed CSV: {error}"
        where = start
        if fields is not None:
            if fields in ([], [""]):
                continue
            bad = next((i for i, ch in enumerate(record) if "\udc80" <= ch <= "\udcff"), None)
            if bad is not None:
                where = start + len(re.findall("\r\n|\r|\n", record[:bad]))
                reason = f"expected UTF-8 text, found the byte 0x{ord(record[bad]) - 0xDC00:02x}"
            elif not header_seen:
                if [f.strip().strip('"') for f in fields] != ["client", "value"]:
                    return ("error", start, "header")
                header_seen = True
                continue
            elif len(fields) != 2:
                reason = f"expected 2 comma-separated fields (client,value), found {len(fields)}"
            elif not fields[0]:
                reason = "expected a client id, found an empty field"
            else:
                rows.append((start, fields[0], fields[1]))
                continue
        if not skip or not header_seen:
            return ("error", where, reason if header_seen else "header")
        raw = record.encode("utf-8", errors="surrogateescape").decode("utf-8", errors="replace")
        rejects.append((where, reason, clip(raw.rstrip("\r\n"))))
    if not header_seen:
        return ("error", None, "header")
    return ("rows", rows, rejects)


def _encode_input_by_reader(path: Path, skip: bool) -> tuple[Any, ...]:
    sink: list[Any] = []
    try:
        rows = list(_encode_rows(path, sink if skip else None))
    except ReportFormatError as exc:
        header = exc.message.startswith("expected the header") or "looks like a key file" in exc.message
        return ("error", exc.line, "header" if header else exc.message)
    return ("rows", rows, [(r.line, r.reason, r.text) for r in sink])


_ENCODE_ROWS = st.one_of(
    st.sampled_from([b"a,x\n", b"b,y\r\n", b"c,\n", b"\n", b",v\n", b"d,e,f\n", b"g,\xff\n", b"h,\x00\n"]),
    st.builds(lambda c, v: b'"%s",%s\n' % (c, v),
              st.lists(st.sampled_from([b"x", b"\n", b"\r", b",", b'""']), max_size=3).map(b"".join),
              st.sampled_from([b"v", b'"w\nx"', b'"y"z', b'"open'])),
    st.lists(st.sampled_from(_CSV_TOKENS), max_size=8).map(b"".join),
)


@settings(max_examples=300, derandomize=True, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(header=st.sampled_from([b"client,value\n", b"client, value\r\n", b'"client","value"\n', b"\n\nclient,value\n"]),
       rows=st.lists(_ENCODE_ROWS, max_size=10), block=st.integers(1, 48), skip=st.booleans())
def test_fuzz_encode_input_equals_csv_module(header: bytes, rows: list[bytes], block: int, skip: bool,
                                             scratch: Path) -> None:
    import rappor.formats._client_values as encode_input

    data = header + b"".join(rows)
    path = _write(scratch, data)
    expected = _encode_input_by_csv_module(data, skip)
    with pytest.MonkeyPatch.context() as patch, _no_field_limit():
        patch.setattr(encode_input, "BLOCK_BYTES", block)
        assert _encode_input_by_reader(path, skip) == expected


_CLIENT_IDS = st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"),
                      min_size=1, max_size=12)


@FUZZ
@given(data=st.data())
def test_fuzz_client_ids_round_trip(data: st.DataObject, scratch: Path) -> None:
    """Any text client id (line breaks, quotes, commas, CRs, leading spaces) is written so that it reads back.

    write_reports and rappor encode: the csv module reads every id back exactly, and
    read_reports finds exactly the reports written (none split, none forged).
    """
    from rappor.cli._main import main
    from rappor.formats import write_key_file

    ids = data.draw(st.lists(st.one_of(_CLIENT_IDS, st.sampled_from([" lead", "a\rb", "\r", "x\n7,11111111\ny",
                                                                    '"', "a,b", "\r\n"])), min_size=1, max_size=8))
    batch = data.draw(strategies.report_batches(SMALL, max_n=len(ids)).filter(lambda b: len(b) == len(ids)))
    write_reports(scratch / "r.csv", batch, client_ids=ids)
    with open(scratch / "r.csv", newline="", encoding="utf-8") as fh:
        assert [row[0] for row in csv.reader(fh)][1:] == ids
    back = read_reports(scratch / "r.csv", SMALL)
    assert back.cohorts.tolist() == batch.cohorts.tolist() and back.bitstrings() == batch.bitstrings()

    (scratch / "params.csv").write_bytes(params_text(SMALL).encode())
    if not (scratch / "key").exists():
        write_key_file(scratch / "key", bytes(range(32)))
    with open(scratch / "values.csv", "w", newline="", encoding="utf-8") as fh:
        # QUOTE_ALL: csv.writer's QUOTE_MINIMAL leaves a lone CR bare (which rappor._util.csv_text.csv_field does not).
        csv.writer(fh, lineterminator="\n", quoting=csv.QUOTE_ALL).writerows([("client", "value"),
                                                                             *[(i, "v") for i in ids]])
    assert main(["encode", "--params", str(scratch / "params.csv"), "--key-file", str(scratch / "key"),
                 str(scratch / "values.csv"), "-o", str(scratch / "enc.csv"), "--seed", "1"]) == 0
    with open(scratch / "enc.csv", newline="", encoding="utf-8") as fh:
        assert [row[0] for row in csv.reader(fh)][1:] == ids
    assert len(read_reports(scratch / "enc.csv", SMALL)) == len(ids)


@FUZZ
@given(params=strategies.params())
def test_fuzz_params_round_trip(params: Params, scratch: Path) -> None:
    write_params(params, scratch / "params.csv")
    assert read_params(scratch / "params.csv") == params


@FUZZ
@given(data=st.data())
def test_fuzz_reports_round_trip(data: st.DataObject, scratch: Path) -> None:
    params = data.draw(strategies.params())
    batch = data.draw(strategies.report_batches(params))
    write_reports(scratch / "r.csv", batch, client_ids=[f"id,{i}" for i in range(len(batch))])
    back = read_reports(scratch / "r.csv", params, chunk_size=data.draw(st.integers(1, 50)))
    assert np.array_equal(back.cohorts, batch.cohorts) and np.array_equal(back.words, batch.words)


@FUZZ
@given(data=st.data())
def test_fuzz_counts_round_trip(data: st.DataObject, scratch: Path) -> None:
    params = data.draw(strategies.params(max_k=20))
    agg = data.draw(strategies.aggregates(params))
    write_counts(agg, scratch / "c.csv")
    assert np.array_equal(read_counts(scratch / "c.csv", params).counts, agg.counts)


@FUZZ
@given(strings=strategies.candidate_lists())
def test_fuzz_candidates_and_map_round_trip(strings: list[str], scratch: Path) -> None:
    write_candidates(strings, scratch / "cands.txt")
    assert read_candidates(scratch / "cands.txt") == strings
    cmap = hash_candidates(strings, SMALL)
    write_map(cmap, scratch / "map.csv")
    back = read_map(scratch / "map.csv", SMALL)
    assert list(back.strings) == strings
    assert (back.matrix != cmap.matrix).nnz == 0


#: Any text a client may have sent (no lone surrogates, which UTF-8 cannot hold), with the
#: characters that matter to CSV and line splitting drawn often.
_ANY_CANDIDATE = st.one_of(
    st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=10),
    st.text(alphabet='\r\n",\ufeff a\x00\t\x85\u2028\x0b\x1c', max_size=8),
)


@FUZZ
@given(strings=st.lists(_ANY_CANDIDATE, min_size=1, max_size=8, unique=True))
def test_fuzz_map_round_trip_any_strings(strings: list[str], scratch: Path) -> None:
    """write_map then read_map gives back every candidate string exactly: CR, LF, quotes, commas,
    a leading BOM, NUL, Unicode line separators, the empty string (a bare CR made unreadable files)."""
    cmap = hash_candidates(strings, SMALL)
    write_map(cmap, scratch / "map.csv")
    back = read_map(scratch / "map.csv", SMALL)
    assert list(back.strings) == strings
    assert (back.matrix != cmap.matrix).nnz == 0


# ------------------------------------------------------------------ Aggregate.merge, a commutative monoid

def _python_sum(*aggs: Aggregate) -> list[list[int]]:
    rows = [a.counts.tolist() for a in aggs]
    return [[sum(r[i][j] for r in rows) for j in range(len(rows[0][0]))] for i in range(len(rows[0]))]


@FUZZ
@given(trio=strategies.same_params_aggregates())
def test_fuzz_merge_associative_and_exact(trio: tuple[Aggregate, Aggregate, Aggregate]) -> None:
    a, b, c = trio
    left, right = a.merge(b).merge(c), a.merge(b.merge(c))
    assert np.array_equal(left.counts, right.counts)
    assert left.counts.tolist() == _python_sum(a, b, c)  # exact: no float, no overflow


@FUZZ
@given(trio=strategies.same_params_aggregates(count=2))
def test_fuzz_merge_commutative_with_identity(trio: tuple[Aggregate, Aggregate]) -> None:
    a, b = trio
    assert np.array_equal(a.merge(b).counts, b.merge(a).counts)
    empty = Aggregate.empty(a.params)
    assert np.array_equal(a.merge(empty).counts, a.counts)
    assert np.array_equal(empty.merge(a).counts, a.counts)
    assert a.merge(b).total_reports == a.total_reports + b.total_reports


@FUZZ
@given(data=st.data())
def test_fuzz_merge_equals_counting_the_union(data: st.DataObject) -> None:
    params = data.draw(strategies.params(max_k=70))
    x = data.draw(strategies.report_batches(params))
    y = data.draw(strategies.report_batches(params))
    union = Aggregate.from_reports(x).merge(Aggregate.from_reports(y))
    bits = np.concatenate([x.bits(), y.bits()]).astype(np.int64)
    cohorts = np.concatenate([x.cohorts, y.cohorts])
    expected = np.zeros((params.num_cohorts, params.num_bloombits + 1), dtype=np.int64)
    np.add.at(expected[:, 0], cohorts, 1)
    np.add.at(expected[:, 1:], cohorts, bits)
    assert np.array_equal(union.counts, expected)


@FUZZ
@given(pair=st.tuples(strategies.params(max_k=8), strategies.params(max_k=8)))
def test_fuzz_merge_refuses_other_params(pair: tuple[Params, Params]) -> None:
    p1, p2 = pair
    if p1 == p2:
        return
    with pytest.raises(IncompatibleParamsError):
        Aggregate.empty(p1).merge(Aggregate.empty(p2))


@FUZZ
@given(data=st.data())
def test_fuzz_decoder_never_crashes(data: st.DataObject) -> None:
    """Any counts and candidates: decoding returns a sane result or a DecodeError, never anything else.

    Invariants of the result: p-values lie in [0, 1]; with ``shares="all"`` (the
    empirical-Bayes regression) the shares are >= 0 and sum to at most 1 (one per group
    of indistinguishable candidates; ``rappor.analysis.decoder._shares``).
    """
    import warnings

    from rappor import DecodeError, Decoder

    p = data.draw(strategies.params(max_k=16, max_m=4))
    agg = data.draw(strategies.aggregates(p, max_reports=10**7))
    n_cands = data.draw(st.integers(1, 40))
    cmap = hash_candidates([f"c{i}" for i in range(n_cands)], p)
    shares = data.draw(st.sampled_from(["all", "detected"]))
    correction = data.draw(st.sampled_from(["fdr", "lfdr", "bonferroni"]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # indistinguishable candidates are expected with small k
        try:
            res = Decoder(shares=shares, correction=correction).decode(agg, cmap)
        except DecodeError:  # no reports, or parameters with (almost) no signal
            assert agg.total_reports == 0 or abs(p.p11 - p.p01) < 0.5 / 2**31.5
            return
    pv = res.pvalue[np.isfinite(res.pvalue)]
    assert np.all((pv >= 0) & (pv <= 1))
    if shares == "all":
        share = np.nan_to_num(res.proportion, posinf=0.0)
        first = res.group == np.arange(len(res))
        assert np.all(share >= 0) and float(share[first].sum()) <= 1.0 + 1e-9


@FUZZ
@given(data=st.data())
def test_fuzz_corrupted_parquet(data: st.DataObject, scratch: Path) -> None:
    """A Parquet report file with a few bytes changed or cut short: only RapporError, file named.

    (Fuzzing found pyarrow's OSError for corrupt pages and a UnicodeDecodeError for a bad
    footer escaping as tracebacks.)
    """
    pytest.importorskip("pyarrow")
    from rappor.formats._parquet import aggregate_parquet, read_parquet_reports, write_parquet_reports

    valid = scratch / "valid.parquet"
    if not valid.exists():
        rng = np.random.default_rng(0)
        batch = ReportBatch.from_bits(SMALL, rng.integers(0, 4, 50), rng.integers(0, 2, (50, 8)))
        write_parquet_reports(valid, batch)
    raw = bytearray(valid.read_bytes())
    if data.draw(st.booleans()):
        for _ in range(data.draw(st.integers(1, 4))):
            raw[data.draw(st.integers(0, len(raw) - 1))] = data.draw(st.integers(0, 255))
    else:
        raw = raw[: data.draw(st.integers(0, len(raw) - 1))]
    path = scratch / "input.parquet"
    path.write_bytes(bytes(raw))
    for read in (lambda p: read_parquet_reports(p, SMALL), lambda p: aggregate_parquet(p, SMALL)):
        _only_rappor_errors(read, path)


@settings(max_examples=200, derandomize=True, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(rows=st.lists(st.lists(st.sampled_from(["a", "b c", "", "x,y", 'q"r', "1", "true"]), min_size=1, max_size=4),
                     max_size=12),
       block=st.integers(1, 48))
def test_fuzz_encode_variables_input_equals_csv_module(rows: list[list[str]], block: int, scratch: Path) -> None:
    # client,NAME1,NAME2 (several variables per client): the same rows as the csv module,
    # whatever the block size (fast path, line by line, quoted records); bad rows rejected.
    import csv
    import io

    import rappor.formats._client_values as encode_input
    from rappor._util.csv_text import csv_field

    data = ("client,u,v\n" + "".join(",".join(csv_field(f) for f in row) + "\n" for row in rows)).encode()
    path = _write(scratch, data)
    parsed = [r for r in csv.reader(io.StringIO(data.decode(), newline=""), strict=True)][1:]
    good = [r for r in parsed if r not in ([], [""]) and len(r) == 3 and r[0]]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(encode_input, "BLOCK_BYTES", block)
        header: list[str] = []
        sink: list[Any] = []
        got = [(c, u, v) for clients, (us, vs) in encode_input.iter_client_variables(path, header, rejects=sink,
                                                                                    on_error="skip", chunk_size=5)
               for c, u, v in zip(clients, us, vs)]
    assert header == ["u", "v"]
    assert got == [tuple(r) for r in good]
    assert len(sink) == sum(1 for r in parsed if r not in ([], [""])) - len(good)


# ------------------------------------------------------------------ writers: exact back, nothing executable out

#: Client-sent text with the characters that matter to spreadsheets (formula triggers, a
#: leading quote), CSV (comma, quote, line breaks) and terminals (ESC, BEL, U+202E) drawn often.
_HOSTILE = st.one_of(
    st.text(alphabet=st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=10),
    st.text(alphabet="'=+-@\t\r\n\",a \x1b\x07\u202e|!", min_size=1, max_size=8),
    st.sampled_from(["=cmd|' /C calc'!A0", "+SUM(1+1)", "-2+3", "@SUM(A1)", "'=x", "''-1", "'tis", "\tx", "\rx"]),
)


def _cells_of(path: Path, column: int = 0) -> list[str]:
    """The cells of ``column`` as a spreadsheet's CSV import sees them (the csv module)."""
    with open(path, newline="", encoding="utf-8") as fh:
        return [row[column] for row in list(csv.reader(fh))[1:]]


def _assert_not_a_formula(cells: list[str]) -> None:
    starts = [c for c in cells if c and c[0] in "=+-@\t\r"]
    assert not starts, starts  # OWASP: no cell starts with a formula trigger


@FUZZ
@given(strings=st.lists(_HOSTILE, min_size=1, max_size=8, unique=True))
def test_fuzz_writers_give_back_any_string_and_no_formula(strings: list[str], scratch: Path) -> None:
    """Any string through write_map, write_candidates and the found values CSV (rappor discover -o):
    our readers give it back exactly, and no written cell or line starts a spreadsheet formula."""
    from rappor.analysis.discovery import DiscoveryResult, DiscoverySpec

    cmap = hash_candidates(strings, SMALL)
    write_map(cmap, scratch / "map.csv")
    assert list(read_map(scratch / "map.csv", SMALL).strings) == strings
    with open(scratch / "map.csv", newline="", encoding="utf-8") as fh:
        _assert_not_a_formula([row[0] for row in csv.reader(fh)])

    n = len(strings)
    found = DiscoveryResult(values=tuple(s.encode() for s in strings), proportion=np.full(n, 0.1),
                            prop_std_error=np.full(n, 0.01), zscore=np.full(n, 9.0), pvalue=np.full(n, 1e-9),
                            first_slot=np.zeros(n, dtype=np.int64), slots=np.ones(n, dtype=np.int64),
                            found_zscore=np.full(n, 9.0), significant=np.ones(n, dtype=bool), n_tested=n,
                            n_reports=1000, spec=DiscoverySpec(params=SMALL, max_length=8, segment=2),
                            significance_level=0.05)
    write_found(found, scratch / "found.csv")
    assert read_candidates(scratch / "found.csv") == strings  # line breaks, quotes, CR: all exact
    _assert_not_a_formula(_cells_of(scratch / "found.csv"))

    listable = [s for s in strings if s.strip() and "\n" not in s and "\r" not in s]
    if listable:
        write_candidates(listable, scratch / "cands.txt")
        assert read_candidates(scratch / "cands.txt") == listable
        _assert_not_a_formula((scratch / "cands.txt").read_bytes().decode().split("\n"))
