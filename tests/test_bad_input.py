"""Malformed input, table-driven: every file format through every subcommand.

Each case writes some files into ``tmp_path``, runs ``rappor.cli.main`` in-process and
asserts one of two outcomes:

* **accepted**: exit 0 and output equal to what an independent computation gives
  (BOM + CRLF inputs must land here);
* **rejected**: exit 1, standard error starting with ``rappor: error: FILE:`` (plus
  ``LINE:`` where the problem has a line) and a fragment saying what was expected.

Never a traceback, never exit 0 with wrong output, and never a partial or leftover
temporary file: the output directory is listed after every run.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest

from rappor import Params, hash_candidates
from rappor.formats import read_map
from rappor.cli._main import build_parser, main
from rappor.formats._keys import write_key_file
from rappor.formats._params import params_text

PARAMS = Params(num_bloombits=8, num_hashes=2, num_cohorts=4, prob_p=0.5, prob_q=0.75, prob_f=0.5)
K, M = PARAMS.num_bloombits, PARAMS.num_cohorts
PARAMS_CSV = b"k,h,m,p,q,f\n8,2,4,0.5,0.75,0.5\n"
OTHER_PARAMS_CSV = b"k,h,m,p,q,f\n16,2,4,0.5,0.75,0.5\n"

_rng = np.random.default_rng(8)
#: 40 reports (client, cohort, irr bit string), drawn once with a fixed seed.
ROWS = [(f"c{i}", int(c), "".join("01"[b] for b in bits))
        for i, (c, bits) in enumerate(zip(_rng.integers(0, M, 40), _rng.integers(0, 2, (40, K))))]
GOOD_REPORTS = ("client,cohort,irr\n" + "".join(f"{a},{c},{s}\n" for a, c, s in ROWS)).encode()
GOOD_GOOGLE_REPORTS = ("client,cohort,bloom,prr,irr\n"
                       + "".join(f"{a},{c},{'0' * K},{'1' * K},{s}\n" for a, c, s in ROWS)).encode()


def _counts_by_hand(rows: list[tuple[str, int, str]]) -> str:
    """counts.csv of ``rows`` computed with plain Python (character 0 of a bit string is bit k-1)."""
    table = [[0] * (K + 1) for _ in range(M)]
    for _, c, s in rows:
        table[c][0] += 1
        for j in range(K):
            table[c][1 + j] += s[K - 1 - j] == "1"
    return "".join(",".join(map(str, r)) + "\n" for r in table)


GOOD_COUNTS = _counts_by_hand(ROWS).encode()
GOOD_CANDIDATES = b"apple\nbanana\ncherry\n"
KEY = bytes(range(100, 132))
#: A key file as rappor keygen writes it, for the cases that pass one in the wrong place.
KEY_FILE = (KEY.hex() + "\n").encode()

#: The issue's forged report: a client id with line breaks that spell a fourth report
#: (all ones, cohort 3); the file holds 3 real reports, quoted as rappor encode quotes.
FORGED_REPORTS = ('client,cohort,irr\nalice,1,00000001\n"x\nmallory,3,11111111\ny",2,00000010\n'
                  'bob,1,00000100\n').encode()


def crlf_bom(data: bytes) -> bytes:
    return b"\xef\xbb\xbf" + data.replace(b"\n", b"\r\n")


@dataclass
class Case:
    """One malformed (or tricky but valid) input and the expected outcome.

    ``files`` maps names to contents (``None``: make a directory).  ``argv`` may use
    ``{d}`` (the case directory) and ``{out}`` (``{d}/out/result``).  A rejected case
    gives ``bad`` (the file the message must name), ``line`` and ``expected``; an
    accepted case gives ``check(out_dir, stdout)`` and the files it must leave in
    ``out/``.
    """

    id: str
    files: dict[str, bytes | None]
    argv: list[str]
    bad: str | None = None
    line: int | None = None
    expected: str = ""
    check: Callable[[Path, str], None] | None = None
    outputs: list[str] = field(default_factory=lambda: ["result"])


def _base(**extra: bytes | None) -> dict[str, bytes | None]:
    files: dict[str, bytes | None] = {"params.csv": PARAMS_CSV, "reports.csv": GOOD_REPORTS,
                                      "counts.csv": GOOD_COUNTS, "cand.txt": GOOD_CANDIDATES}
    files.update(extra)
    return files


def _sum(bad: str, content: bytes | None, line: int | None, expected: str, name: str = "bad.csv") -> Case:
    return Case(f"sum-bits/{bad}", _base(**{name: content}),
                ["sum-bits", "--params", "{d}/params.csv", "{d}/" + name, "-o", "{out}"],
                bad=name, line=line, expected=expected)


def _params(bad: str, content: bytes | None, line: int | None, expected: str, command: str = "sum-bits") -> Case:
    inputs = {"sum-bits": ["{d}/reports.csv"], "merge-counts": ["{d}/counts.csv"],
              "hash-candidates": ["{d}/cand.txt"]}[command]
    return Case(f"{command}/params-{bad}", _base(**{"p.csv": content}),
                [command, "--params", "{d}/p.csv", *inputs, "-o", "{out}"], bad="p.csv", line=line,
                expected=expected)


def _merge(bad: str, content: bytes | None, line: int | None, expected: str) -> Case:
    return Case(f"merge-counts/{bad}", _base(**{"bad.csv": content}),
                ["merge-counts", "--params", "{d}/params.csv", "{d}/counts.csv", "{d}/bad.csv", "-o", "{out}"],
                bad="bad.csv", line=line, expected=expected)


def _cands(bad: str, content: bytes | None, line: int | None, expected: str) -> Case:
    return Case(f"hash-candidates/{bad}", _base(**{"bad.txt": content}),
                ["hash-candidates", "--params", "{d}/params.csv", "{d}/bad.txt", "-o", "{out}"],
                bad="bad.txt", line=line, expected=expected)


def _encode(bad: str, files: dict[str, bytes | None], bad_name: str, line: int | None, expected: str,
            extra: tuple[str, ...] = ()) -> Case:
    inputs: dict[str, bytes | None] = {"params.csv": PARAMS_CSV, "in.csv": b"client,value\na,x\nb,y\n"}
    inputs.update(files)
    return Case(f"encode/{bad}", inputs,
                ["encode", "--params", "{d}/params.csv", "--key-file", "{d}/key", "{d}/in.csv", "-o", "{out}",
                 *extra], bad=bad_name, line=line, expected=expected)


OTHER_M_PARAMS = Params(num_bloombits=8, num_hashes=2, num_cohorts=8, prob_p=0.5, prob_q=0.75, prob_f=0.5)
OTHER_K_PARAMS = Params(num_bloombits=16, num_hashes=2, num_cohorts=4, prob_p=0.5, prob_q=0.75, prob_f=0.5)


def _map_bytes(candidates: bytes, params: Params = PARAMS) -> bytes:
    import io

    from rappor.formats import write_map

    buffer = io.StringIO()
    strings = candidates.decode().splitlines()
    with contextlib.redirect_stdout(buffer):
        write_map(hash_candidates(strings, params), "-")
    return buffer.getvalue().encode()


def _sorted_map_bytes(candidates: bytes) -> bytes:
    """The map in the layout google/rappor ships with its analysis app: quoted candidate, distinct
    indices ascending, an empty field for each index saved where hashes coincide."""
    cmap = hash_candidates(candidates.decode().splitlines(), PARAMS)
    width = PARAMS.num_hashes * PARAMS.num_cohorts
    rows = []
    for j, string in enumerate(cmap.strings):
        cells = [str(i + 1) for i in np.flatnonzero(cmap.matrix[:, j].toarray().ravel())]
        rows.append(",".join([f'"{string}"', *cells, *[""] * (width - len(cells))]) + "\n")
    return "".join(rows).encode()


SORTED_MAP = _sorted_map_bytes(GOOD_CANDIDATES)
assert SORTED_MAP.count(b",\n") >= 1  # some hashes coincide: rows with fewer than h * m indices
HUGE_PARAMS_CSV = b"k,h,m,p,q,f\n4294967296,2,4294967296,0.5,0.75,0.5\n"  # k = m = 2**32
TWO_62 = b"4611686018427387904"  # 2**62: two cohorts of it make 2**63 reports, one more than int64 holds


def _decode(bad: str, files: dict[str, bytes | None], bad_name: str | None, line: int | None, expected: str, *,
            params: str = "params.csv", cands: str | None = None, extra: tuple[str, ...] = ()) -> Case:
    inputs = _base(**{"map.csv": _map_bytes(GOOD_CANDIDATES)})
    inputs.update(files)
    source = ["--candidates", "{d}/" + cands] if cands else ["--map", "{d}/map.csv"]
    return Case(f"decode/{bad}", inputs, ["decode", "--params", "{d}/" + params, "--counts", "{d}/counts.csv",
                                          *source, "-o", "{out}", *extra], bad=bad_name, line=line, expected=expected)


def _expect_same_decode(out: Path, stdout: str) -> None:
    d = out.parent
    assert main(["decode", "--params", str(d / "params.csv"), "--counts", str(d / "counts.csv"), "--map",
                 str(d / "plain.csv"), "--all", "-o", str(d / "plain.out")]) == 0
    assert (out / "result").read_bytes() == (d / "plain.out").read_bytes()
    assert b"apple" in (out / "result").read_bytes()


def _expect_text(expected: bytes) -> Callable[[Path, str], None]:
    def check(out: Path, stdout: str) -> None:
        assert (out / "result").read_bytes() == expected

    return check


def _expect_map(strings: list[str]) -> Callable[[Path, str], None]:
    def check(out: Path, stdout: str) -> None:
        cmap = read_map(out / "result", PARAMS)
        assert list(cmap.strings) == strings
        assert (cmap.matrix != hash_candidates(strings, PARAMS).matrix).nnz == 0

    return check


def _expect_same_encoding(out: Path, stdout: str) -> None:
    # Same key, same seed: a CRLF/BOM input must give exactly the LF input's reports.
    assert main(["encode", "--params", str(out.parent / "params.csv"), "--key-file", str(out.parent / "key"),
                 str(out.parent / "plain.csv"), "-o", str(out.parent / "plain.out"), "--seed", "3"]) == 0
    assert (out / "result").read_bytes() == (out.parent / "plain.out").read_bytes()


def _expect_same_as_plain_key(out: Path, stdout: str) -> None:
    # A key file with a BOM and CRLF holds the same key as keygen's file: same reports.
    d = out.parent
    write_key_file(d / "plain.key", KEY)
    assert main(["encode", "--params", str(d / "params.csv"), "--key-file", str(d / "plain.key"),
                 str(d / "in.csv"), "-o", str(d / "plain.out"), "--seed", "3"]) == 0
    assert (out / "result").read_bytes() == (d / "plain.out").read_bytes()


NAN_PARAMS = b"k,h,m,p,q,f\n8,2,4,nan,0.75,0.5\n"
CASES: list[Case] = [
    # ---------------------------------------------------------------- params.csv
    _params("stray-cr", b"\r,h,m,p,q,f\n8,2,4,0.5,0.75,0.5\n", 1, "expected a CSV row"),  # fuzzing: was a csv.Error
    _params("empty", b"", None, "found an empty file"),
    _params("header-only", b"k,h,m,p,q,f\n", 2, "expected one data row"),
    _params("semicolons", b"k;h;m;p;q;f\n8;2;4;0.5;0.75;0.5\n", 1, "expected the header 'k,h,m,p,q,f'"),
    _params("tabs", b"k\th\tm\tp\tq\tf\n8\t2\t4\t0.5\t0.75\t0.5\n", 1, "expected the header"),
    _params("truncated-row", b"k,h,m,p,q,f\n8,2,4,0.5,0.7", 2, "expected 6 comma-separated values"),
    _params("nan", NAN_PARAMS, 2, "expected a finite number for 'p'"),
    _params("inf", b"k,h,m,p,q,f\n8,2,4,0.5,inf,0.5\n", 2, "expected a finite number for 'q'"),
    _params("neg-inf", b"k,h,m,p,q,f\n8,2,4,0.5,0.75,-inf\n", 2, "expected a finite number for 'f'",
            command="merge-counts"),
    _params("huge-k", b"k,h,m,p,q,f\n" + b"9" * 30 + b",2,4,0.5,0.75,0.5\n", 2,
            "column k: expected an int in the range"),
    _params("huge-m", b"k,h,m,p,q,f\n8,2," + b"9" * 30 + b",0.5,0.75,0.5\n", 2,
            "column m: expected an int in the range",
            command="hash-candidates"),
    _params("fractional-k", b"k,h,m,p,q,f\n8.5,2,4,0.5,0.75,0.5\n", 2, "expected an integer for 'k'"),
    _params("p-above-one", b"k,h,m,p,q,f\n8,2,4,1.5,0.75,0.5\n", 2,
            "column p: expected a float in the range [0, 1], found 1.5"),
    _params("no-information", b"k,h,m,p,q,f\n8,2,4,0.5,0.75,1.0\n", 2, "Cannot decode"),
    _params("non-utf8", b"k,h,m,p,q,f\n8,2,4,0.5,0.75,0.5\xff\n", 2, "expected UTF-8 text"),
    _params("directory", None, None, "is a directory, expected a file"),
    _params("missing", b"", None, "no such file", command="hash-candidates"),  # file removed below
    _params("two-rows", PARAMS_CSV + b"8,2,4,0.5,0.75,0.5\n", 3, "expected exactly one data row"),
    Case("sum-bits/params-bom-crlf", _base(**{"p.csv": crlf_bom(PARAMS_CSV)}),
         ["sum-bits", "--params", "{d}/p.csv", "{d}/reports.csv", "-o", "{out}"], check=_expect_text(GOOD_COUNTS)),
    # ---------------------------------------------------------------- reports CSV (both layouts)
    Case("sum-bits/reports-bom-crlf", _base(**{"r.csv": crlf_bom(GOOD_REPORTS)}),
         ["sum-bits", "--params", "{d}/params.csv", "{d}/r.csv", "-o", "{out}"], check=_expect_text(GOOD_COUNTS)),
    Case("sum-bits/google-bom-crlf", _base(**{"r.csv": crlf_bom(GOOD_GOOGLE_REPORTS)}),
         ["sum-bits", "--params", "{d}/params.csv", "{d}/r.csv", "-o", "{out}"], check=_expect_text(GOOD_COUNTS)),
    Case("sum-bits/header-only", _base(**{"r.csv": b"client,cohort,irr\n"}),
         ["sum-bits", "--params", "{d}/params.csv", "{d}/r.csv", "-o", "{out}"],
         check=_expect_text(b"0,0,0,0,0,0,0,0,0\n" * M)),
    _sum("empty", b"", None, "found an empty file"),
    _sum("truncated", GOOD_REPORTS[:-4], 41, "expected an irr bit string of k = 8 characters"),
    _sum("truncated-google", GOOD_GOOGLE_REPORTS[:-12], 41, "expected 5 comma-separated columns"),
    _sum("tabs", GOOD_REPORTS.replace(b",", b"\t"), 1, "expected the header 'client,cohort,irr'"),
    _sum("semicolon-rows", b"client,cohort,irr\nc1;0;00000001\n", 2, "expected 3 comma-separated columns"),
    _sum("non-utf8-header", b"client,coh\xf6rt,irr\n", 1, "expected UTF-8 text"),
    _sum("non-utf8-irr", b"client,cohort,irr\nc1,0,0000000\xff\n", 2, "expected only '0' and '1'"),
    _sum("cohort-too-big", b"client,cohort,irr\nc1,4,00000001\n", 2, "expected a cohort, an integer in [0, 3]"),
    _sum("cohort-huge", b"client,cohort,irr\nc1," + b"9" * 40 + b",00000001\n", 2, "expected a cohort"),
    _sum("cohort-negative", b"client,cohort,irr\nc1,-1,00000001\n", 2, "expected a cohort"),
    _sum("cohort-float", b"client,cohort,irr\nc1,1.0,00000001\n", 2, "expected a cohort"),
    _sum("other-k", b"client,cohort,irr\nc1,0,0000000100000001\n", 2, "made with other parameters"),
    _sum("bit-two", b"client,cohort,irr\nc1,0,00000002\n", 2, "expected only '0' and '1'"),
    _sum("extra-column", b"client,cohort,irr\nc1,0,00000001,x\n", 2, "expected 3 comma-separated columns"),
    _sum("open-quote", b'client,cohort,irr\n"c1,0,00000001\n', 2, "expected"),
    _sum("nul-bytes", b"\0" * 64, 1, "expected the header"),
    _sum("directory", None, None, "is a directory, expected a file"),
    Case("sum-bits/forged-report-in-quoted-id", _base(**{"r.csv": FORGED_REPORTS}),
         ["sum-bits", "--params", "{d}/params.csv", "{d}/r.csv", "-o", "{out}"],
         check=_expect_text(_counts_by_hand([("alice", 1, "00000001"), ("x", 2, "00000010"),
                                             ("bob", 1, "00000100")]).encode())),
    Case("sum-bits/forged-report-in-quoted-id-skip", _base(**{"r.csv": FORGED_REPORTS}),
         ["sum-bits", "--params", "{d}/params.csv", "{d}/r.csv", "-o", "{out}", "--on-error", "skip"],
         check=_expect_text(_counts_by_hand([("alice", 1, "00000001"), ("x", 2, "00000010"),
                                             ("bob", 1, "00000100")]).encode()),
         outputs=["result", "result.rejects.csv"]),
    _sum("unclosed-quote-swallows-the-rest", b'client,cohort,irr\n"c1,0,00000001\nc2,1,00000001\n', 2,
         "expected 3 comma-separated columns (client,cohort,irr), found 1"),
    Case("sum-bits/params-k-m-2-32", _base(**{"p.csv": HUGE_PARAMS_CSV}),
         ["sum-bits", "--params", "{d}/p.csv", "{d}/reports.csv", "-o", "{out}"],
         expected="needs about 256 EiB of memory"),  # was ValueError: array is too big
    # ---------------------------------------------------------------- counts.csv
    Case("merge-counts/bom-crlf", _base(**{"c2.csv": crlf_bom(GOOD_COUNTS)}),
         ["merge-counts", "--params", "{d}/params.csv", "{d}/c2.csv", "-o", "{out}"],
         check=_expect_text(GOOD_COUNTS)),
    _merge("negative", b"0,0,0,0,0,0,0,0,0\n-1,0,0,0,0,0,0,0,0\n" + b"0,0,0,0,0,0,0,0,0\n" * 2, 2, "negative"),
    _merge("fraction", b"1.5,0,0,0,0,0,0,0,0\n" + b"0,0,0,0,0,0,0,0,0\n" * 3, 1, "found '1.5'"),
    _merge("bits-above-n", b"1,2,0,0,0,0,0,0,0\n" + b"0,0,0,0,0,0,0,0,0\n" * 3, 1, "at most the cohort's 1 reports"),
    _merge("huge", b"9" * 25 + b",0,0,0,0,0,0,0,0\n" + b"0,0,0,0,0,0,0,0,0\n" * 3, 1, "at most 2**63 - 1"),
    _merge("too-few-rows", b"0,0,0,0,0,0,0,0,0\n" * 3, 3, "expected 4 rows"),
    _merge("too-many-rows", b"0,0,0,0,0,0,0,0,0\n" * 5, 5, "expected 4 rows"),
    _merge("other-k", b"0" + b",0" * 16 + b"\n", 1, "expected 9 comma-separated counts"),
    _merge("semicolons", b"0;0;0;0;0;0;0;0;0\n" * 4, 1, "expected 9 comma-separated counts"),
    _merge("non-utf8", b"0,0,0,0,0,0,0,0,\xe9\n", 1, "expected UTF-8 text"),
    _merge("empty", b"", None, "found an empty file"),
    _merge("missing", b"", None, "no such file"),  # file removed below
    _merge("total-overflows-int64", TWO_62 + b",0" * 8 + b"\n" + TWO_62 + b",0" * 8 + b"\n" + b"0,0,0,0,0,0,0,0,0\n" * 2,
           2, "expected at most 2**63 - 1 reports in all cohorts together"),
    Case("merge-counts/params-k-m-2-32", _base(**{"p.csv": HUGE_PARAMS_CSV}),
         ["merge-counts", "--params", "{d}/p.csv", "{d}/counts.csv", "-o", "{out}"],
         expected="a counts table of m = 4294967296 cohorts x (k + 1) = 4294967297 counts needs about 256 EiB"),
    Case("merge-counts/sum-overflows-int64",
         _base(**{"big.csv": b"4611686018427387904" + b",0" * 8 + b"\n" + b"0,0,0,0,0,0,0,0,0\n" * 3,
                  "big2.csv": b"4611686018427387904" + b",0" * 8 + b"\n" + b"0,0,0,0,0,0,0,0,0\n" * 3}),
         ["merge-counts", "--params", "{d}/params.csv", "{d}/big.csv", "{d}/big2.csv", "-o", "{out}"],
         bad="big2.csv", expected="a total number of reports above 2**63 - 1"),
    # ---------------------------------------------------------------- candidates
    Case("hash-candidates/bom-crlf", _base(**{"c.txt": crlf_bom(GOOD_CANDIDATES)}),
         ["hash-candidates", "--params", "{d}/params.csv", "{d}/c.txt", "-o", "{out}"],
         check=_expect_map(["apple", "banana", "cherry"])),
    _cands("duplicate", b"apple\nbanana\napple\n", 3, "expected distinct candidates"),
    _cands("empty", b"", None, "expected at least one candidate"),
    _cands("blank-line", b"apple\n\nbanana\n", 2, "blank line"),
    _cands("non-utf8", b"apple\nbanan\xe1\n", 2, "expected UTF-8 text"),
    _cands("directory", None, None, "is a directory"),
    _cands("lone-cr-line-endings", b"apple\rbanana\rcherry\r", 1, "found a carriage return inside the line"),
    _cands("cr-inside-a-candidate", b"apple\r\nba\rnana\r\n", 2, "found a carriage return inside the line"),
    _cands("found-csv-utf8-column", b"string,proportion,prop_std_error,zscore,pvalue,significant,first_slot,slots,utf8\n"
           b"apple,0.5,0.01,9,1e-9,true,0,1,yes\n", 2, "expected 'true' or 'false' in the utf8 column"),
    _cands("found-csv-stray-backslash", b"string,proportion,prop_std_error,zscore,pvalue,significant,first_slot,slots,"
           b"utf8\napple,0.5,0.01,9,1e-9,true,0,1,true\nx\\q\xc3\xa6,0.2,0.01,9,1e-9,true,0,1,false\n", 3,
           "expected only \\\\ and \\xNN escapes"),
    # ---------------------------------------------------------------- encode: input and key file
    Case("encode/bom-crlf", {"params.csv": PARAMS_CSV, "in.csv": crlf_bom(b"client,value\na,x\nb,y\n"),
                             "plain.csv": b"client,value\na,x\nb,y\n"},
         ["encode", "--params", "{d}/params.csv", "--key-file", "{d}/key", "{d}/in.csv", "-o", "{out}",
          "--seed", "3"], check=_expect_same_encoding),
    _encode("no-header", {"in.csv": b"a,x\n"}, "in.csv", 1, "expected the header 'client,value'"),
    _encode("three-fields", {"in.csv": b"client,value\na,x,y\n"}, "in.csv", 2, "expected 2 comma-separated"),
    _encode("non-utf8", {"in.csv": b"client,value\na,x\nb,\xff\n"}, "in.csv", 3, "expected UTF-8 text"),
    _encode("empty-client", {"in.csv": b"client,value\n,x\n"}, "in.csv", 2, "expected a client id"),
    Case("encode/key-bom-crlf", {"params.csv": PARAMS_CSV, "in.csv": b"client,value\na,x\nb,y\n",
                                 "key": crlf_bom(KEY.hex().encode() + b"\n")},
         ["encode", "--params", "{d}/params.csv", "--key-file", "{d}/key", "{d}/in.csv", "-o", "{out}",
          "--seed", "3"], check=_expect_same_as_plain_key),
    _encode("key-not-hex", {"key": b"this is not a key at all, not hex\n"}, "key", None, "expected a key as hex"),
    _encode("key-short", {"key": b"00112233\n"}, "key", None, "expected a key of at least 16 bytes"),
    _encode("key-directory", {"key": None}, "key", None, "is a directory"),
    _encode("params-other-k-ok-but-nan", {"params.csv": NAN_PARAMS}, "params.csv", 2, "finite"),
    # ---------------------------------------------------------------- decode: counts, map, candidates together
    Case("decode/map-bom-crlf", _base(**{"map.csv": crlf_bom(_map_bytes(GOOD_CANDIDATES)),
                                         "plain.csv": _map_bytes(GOOD_CANDIDATES)}),
         ["decode", "--params", "{d}/params.csv", "--counts", "{d}/counts.csv", "--map", "{d}/map.csv", "--all",
          "-o", "{out}"], check=_expect_same_decode),
    _decode("map-other-m", {"map.csv": _map_bytes(GOOD_CANDIDATES, OTHER_M_PARAMS)}, "map.csv", 1,
            "expected a candidate and h * m = 8 row indices"),
    _decode("map-other-k", {"map.csv": _map_bytes(GOOD_CANDIDATES, OTHER_K_PARAMS)}, "map.csv", 1,
            "was the map made with other parameters?"),
    _decode("counts-other-m", {"p.csv": params_text(OTHER_M_PARAMS).encode(),
                               "map.csv": _map_bytes(GOOD_CANDIDATES, OTHER_M_PARAMS)}, "counts.csv", 4,
            "expected 8 rows", params="p.csv"),
    _decode("counts-more-ones-than-n", {"counts.csv": b"1,0,0,0,0,0,0,0,0\n2,3,0,0,0,0,0,0,0\n" * 2},
            "counts.csv", 2, "at most the cohort's 2 reports"),
    _decode("counts-no-reports", {"counts.csv": b"0,0,0,0,0,0,0,0,0\n" * 4}, None, None, "no reports"),
    _decode("map-directory", {"map.csv": None}, "map.csv", None, "is a directory"),
    _decode("map-empty", {"map.csv": b""}, "map.csv", None, "expected at least one candidate row"),
    _decode("candidates-empty", {"c.txt": b""}, "c.txt", None, "expected at least one candidate", cands="c.txt"),
    _decode("candidates-duplicate", {"c.txt": b"a\nb\na\n"}, "c.txt", 3, "expected distinct", cands="c.txt"),
    _decode("summary-is-a-directory", {"sumdir": None}, "sumdir", None, "cannot write file: is a directory",
            extra=("--summary", "{d}/sumdir")),
    # Bad option values are usage errors naming the flag (tests/cli/test_cli_flags.py); a value that only
    # conflicts with another flag is an error naming both.
    Case("plan/epsilon-one-not-below-inf", {}, ["plan", "--reports", "1000", "--candidates", "10", "--epsilon-inf",
                                                 "4", "--epsilon-one", "5", "-o", "{out}"],
         expected="--epsilon-one 5 must be below --epsilon-inf 4"),
    Case("decode/map-google-sorted-layout", _base(**{"map.csv": SORTED_MAP, "plain.csv": _map_bytes(GOOD_CANDIDATES)}),
         ["decode", "--params", "{d}/params.csv", "--counts", "{d}/counts.csv", "--map", "{d}/map.csv", "--all",
          "-o", "{out}"], check=_expect_same_decode),
    _decode("map-index-outside-every-cohort", {"map.csv": b"apple,1,2,9,10,17,18,25,33\n"}, "map.csv", 1,
            "found 33 in column 9, outside every cohort"),
    _decode("map-cohort-without-index", {"map.csv": b"apple,1,2,3,10,17,18,,\n"}, "map.csv", 1,
            "expected 1 to h = 2 distinct indices of cohort 0 in [1, 8]"),
    _decode("candidates-lone-cr", {"c.txt": b"apple\rbanana\r"}, "c.txt", 1, "found a carriage return",
            cands="c.txt"),
    _decode("counts-total-overflows-int64",
            {"counts.csv": TWO_62 + b",0" * 8 + b"\n" + TWO_62 + b",0" * 8 + b"\n" + b"0,0,0,0,0,0,0,0,0\n" * 2},
            "counts.csv", 2, "expected at most 2**63 - 1 reports in all cohorts together"),
    Case("decode/params-k-m-2-32", _base(**{"p.csv": HUGE_PARAMS_CSV}),
         ["decode", "--params", "{d}/p.csv", "--counts", "{d}/counts.csv", "--candidates", "{d}/cand.txt",
          "-o", "{out}"], expected="needs about 256 EiB of memory"),
    # ------------------------------------- discover (2 slots + the confirmation slot, x 4 cohorts)
    Case("discover/counts-wrong-rows", _base(), ["discover", "--params", "{d}/params.csv", "--counts",
                                                 "{d}/counts.csv", "--max-length", "4", "-o", "{out}"],
         bad="counts.csv", line=4, expected="expected 12 rows"),
    Case("discover/list-is-a-directory", _base(**{"dc.csv": b"10,1,2,3,4,5,6,7,8\n" * 24, "listdir": None,
                                                   "dp.csv": b"k,h,m,p,q,f\n8,2,8,0.5,0.75,0.5\n"}),
         ["discover", "--params", "{d}/dp.csv", "--counts", "{d}/dc.csv", "--max-length", "4", "-o", "{out}",
          "--list", "{d}/listdir"], bad="listdir", expected="cannot write file: is a directory"),
    # ---------------------------------------------------------------- simulate and keygen
    Case("simulate/params-nan", {"p.csv": NAN_PARAMS}, ["simulate", "--params", "{d}/p.csv", "--out", "{d}/out",
                                                       "--no-report"], bad="p.csv", line=2, expected="finite"),
    Case("simulate/population-stray-cr", {"pop.csv": b"string,count\na\rb,1\n"},
         ["simulate", "--population", "{d}/pop.csv", "--out", "{d}/out", "--no-report", "--clients", "100"],
         bad="pop.csv", line=2, expected="expected 'string,count'"),  # found by fuzzing: was a csv.Error
    Case("simulate/population-bad", {"pop.csv": b"string,count\na,1\nb,many\n"},
         ["simulate", "--population", "{d}/pop.csv", "--out", "{d}/out", "--no-report", "--clients", "100"],
         bad="pop.csv", line=3, expected="expected"),
    Case("simulate/population-blank-string", {"pop.csv": b'string,count\n"",5\nb,3\n'},
         ["simulate", "--population", "{d}/pop.csv", "--out", "{d}/out", "--no-report", "--clients", "100"],
         bad="pop.csv", line=2, expected="non-blank string"),  # found by a tester: failed after simulating
    Case("simulate/out-is-a-file", {"file": b"x"}, ["simulate", "--out", "{d}/file", "--no-report"],
         bad="file", expected="not a directory"),
    Case("keygen/exists", {}, ["keygen", "-o", "{d}/key"], bad="key", expected="already exists"),
    # ---------------------------------------------------------------- a key file where another file belongs
    *[Case(f"key-as-{where}", {**_base(**{"map.csv": _map_bytes(GOOD_CANDIDATES)}), "k.key": KEY_FILE,
                               "in.csv": b"client,value\na,x\n", "key": KEY_FILE},
           argv, bad="k.key", expected=f"this looks like a key file (written by rappor keygen), not {what}")
      for where, what, argv in [
          ("privacy-params", "a params file", ["privacy", "--params", "{d}/k.key"]),
          ("sum-bits-params", "a params file", ["sum-bits", "--params", "{d}/k.key", "{d}/reports.csv"]),
          ("sum-bits-reports", "a reports file", ["sum-bits", "--params", "{d}/params.csv", "{d}/k.key",
                                                  "-o", "{out}"]),
          ("sum-bits-reports-skip", "a reports file", ["sum-bits", "--params", "{d}/params.csv", "{d}/k.key",
                                                       "-o", "{out}", "--on-error", "skip"]),
          ("merge-counts", "a counts file", ["merge-counts", "--params", "{d}/params.csv", "{d}/k.key"]),
          ("hash-candidates", "a candidates file", ["hash-candidates", "--params", "{d}/params.csv",
                                                    "{d}/k.key", "-o", "{out}"]),
          ("decode-counts", "a counts file", ["decode", "--params", "{d}/params.csv", "--counts", "{d}/k.key",
                                              "--map", "{d}/map.csv", "-o", "{out}"]),
          ("decode-map", "a map file", ["decode", "--params", "{d}/params.csv", "--counts", "{d}/counts.csv",
                                        "--map", "{d}/k.key", "-o", "{out}"]),
          ("decode-candidates", "a candidates file", ["decode", "--params", "{d}/params.csv", "--counts",
                                                      "{d}/counts.csv", "--candidates", "{d}/k.key",
                                                      "-o", "{out}", "--summary", "{out}.json", "--all"]),
          ("encode-input", "a 'client,value' input file", ["encode", "--params", "{d}/params.csv", "--key-file",
                                                          "{d}/key", "{d}/k.key", "-o", "{out}"]),
          ("encode-params", "a params file", ["encode", "--params", "{d}/k.key", "--key-file", "{d}/key",
                                              "{d}/in.csv", "-o", "{out}"]),
          ("simulate-params", "a params file", ["simulate", "--params", "{d}/k.key", "--out", "{d}/out",
                                                "--no-report"]),
          ("simulate-population", "a population file", ["simulate", "--population", "{d}/k.key", "--out",
                                                        "{d}/out", "--no-report", "--clients", "100"]),
          ("simulate-discovery-params", "a params file", ["simulate", "--discover", "--discovery-params",
                                                          "{d}/k.key", "--out", "{d}/out", "--no-report"]),
          ("simulate-assoc-params", "a params file", ["simulate-assoc", "--params", "{d}/k.key", "--out", "{d}/out",
                                                      "--no-report"]),
          ("discover-params", "a params file", ["discover", "--params", "{d}/k.key", "--counts", "{d}/counts.csv"]),
          ("discover-counts", "a counts file", ["discover", "--params", "{d}/params.csv", "--counts", "{d}/k.key"]),
          ("assoc-params", "a params file", ["decode-assoc", "--params", "{d}/k.key", "--reports", "{d}/reports.csv",
                                             "--var1", "s", "--map1", "{d}/map.csv", "--var2", "b", "--bool"]),
          # the reports and the schema were quoted whole as the header "found"
          ("assoc-reports", "a reports file", ["decode-assoc", "--params", "{d}/params.csv", "--reports",
                                               "{d}/k.key", "--var1", "s", "--map1", "{d}/map.csv", "--var2", "b",
                                               "--bool", "-o", "{out}"]),
          ("assoc-schema", "a schema file", ["decode-assoc", "--metric-name", "m", "--schema", "{d}/k.key",
                                             "--params-dir", "{d}", "--reports", "{d}/reports.csv", "--var1", "s",
                                             "--var2", "b", "--map1", "{d}/map.csv", "--output-dir", "{d}/out"]),
          ("assoc-map", "a map file", ["decode-assoc", "--params", "{d}/params.csv", "--reports", "{d}/reports.csv",
                                       "--var1", "s", "--map1", "{d}/k.key", "--var2", "b", "--bool"]),
          ("assoc-candidates", "a candidates file", ["decode-assoc", "--params", "{d}/params.csv", "--reports",
                                                     "{d}/reports.csv", "--var1", "s", "--candidates1", "{d}/k.key",
                                                     "--var2", "b", "--bool"]),
      ]],
    Case("keygen/no-such-dir", {}, ["keygen", "-o", "{d}/nope/key"], bad="nope/key", expected="cannot write file"),
]

_ENCODE = ["encode", "--params", "{d}/params.csv", "--key-file", "{d}/key", "{d}/in.csv"]
_SUM = ["sum-bits", "--params", "{d}/params.csv", "{d}/reports.csv"]
_DECODE = ["decode", "--params", "{d}/params.csv", "--counts", "{d}/counts.csv", "--map", "{d}/map.csv"]
_OVERWRITE = "refusing to overwrite an input"
_SHARED = "two outputs cannot share a file"


def _same(name: str, argv: list[str], first: str, second: str, why: str, **extra: bytes | None) -> Case:
    """Two paths of one command are the same file: refused before anything is read or written.

    ``first`` and ``second`` are the two paths as the message must name them (``{d}`` expanded).
    """
    files = _base(**{"in.csv": b"client,value\na,x\nb,y\n", "map.csv": _map_bytes(GOOD_CANDIDATES)})
    files.update(extra)
    return Case(f"{argv[0]}/{name}", files, argv, expected=f"{first} is the same file as {second}: {why}")


#: No output may be an input or another output (compared by device and inode, so spellings
#: with ``.`` and ``..`` are caught), and files that are added up may not repeat.
SAME_FILE_CASES: list[Case] = [
    _same("out-is-the-key", [*_ENCODE, "-o", "{d}/key"], "-o {d}/key", "--key-file {d}/key", _OVERWRITE),
    _same("out-is-the-input", [*_ENCODE, "-o", "{d}/./in.csv"], "-o {d}/./in.csv", "INPUT {d}/in.csv", _OVERWRITE),
    _same("out-is-the-params", [*_ENCODE, "-o", "{d}/out/../params.csv"], "-o {d}/out/../params.csv",
          "--params {d}/params.csv", _OVERWRITE),
    _same("rejects-is-the-output", [*_ENCODE, "-o", "{out}", "--on-error", "skip", "--rejects", "{out}"],
          "--rejects {out}", "-o {out}", _SHARED),
    _same("rejects-is-the-key", [*_ENCODE, "-o", "{out}", "--on-error", "skip", "--rejects", "{d}/key"],
          "--rejects {d}/key", "--key-file {d}/key", _OVERWRITE),
    _same("rejects-and-output-on-stdout", [*_ENCODE, "-o", "-", "--on-error", "skip", "--rejects", "-"],
          "--rejects <stdout>", "-o <stdout>", _SHARED),
    _same("out-is-the-reports", [*_SUM, "-o", "{d}/reports.csv"], "-o {d}/reports.csv", "REPORTS {d}/reports.csv",
          _OVERWRITE),
    _same("out-is-the-params", [*_SUM, "-o", "{d}/params.csv"], "-o {d}/params.csv", "--params {d}/params.csv",
          _OVERWRITE),
    _same("rejects-is-the-output", [*_SUM, "-o", "{out}", "--on-error", "skip", "--rejects", "{out}"],
          "--rejects {out}", "-o {out}", _SHARED),
    _same("default-rejects-is-an-input",
          ["sum-bits", "--params", "{d}/params.csv", "{d}/r.csv.rejects.csv", "-o", "{d}/r.csv", "--on-error", "skip"],
          "--rejects {d}/r.csv.rejects.csv", "REPORTS {d}/r.csv.rejects.csv", _OVERWRITE,
          **{"r.csv.rejects.csv": GOOD_REPORTS}),
    _same("reports-twice", [*_SUM, "{d}/./reports.csv", "-o", "{out}"], "REPORTS {d}/./reports.csv",
          "REPORTS {d}/reports.csv", "it would be counted twice"),
    _same("stdin-twice", ["sum-bits", "--params", "{d}/params.csv", "-", "-", "-o", "{out}"], "REPORTS <stdin>",
          "REPORTS <stdin>", "it would be counted twice"),
    _same("out-is-the-counts", ["merge-counts", "--params", "{d}/params.csv", "{d}/counts.csv", "-o", "{d}/counts.csv"],
          "-o {d}/counts.csv", "COUNTS {d}/counts.csv", _OVERWRITE),
    _same("counts-twice", ["merge-counts", "--params", "{d}/params.csv", "{d}/counts.csv", "{d}/out/../counts.csv",
                           "-o", "{out}"], "COUNTS {d}/out/../counts.csv", "COUNTS {d}/counts.csv",
          "it would be counted twice"),
    _same("out-is-the-counts", [*_DECODE, "-o", "{d}/counts.csv"], "-o {d}/counts.csv", "--counts {d}/counts.csv",
          _OVERWRITE),
    _same("out-is-the-map", [*_DECODE, "-o", "{d}/map.csv"], "-o {d}/map.csv", "--map {d}/map.csv", _OVERWRITE),
    _same("summary-is-the-output", [*_DECODE, "-o", "{out}", "--summary", "{out}"], "--summary {out}", "-o {out}",
          _SHARED),
    _same("summary-is-the-params", [*_DECODE, "-o", "{out}", "--summary", "{d}/params.csv"],
          "--summary {d}/params.csv", "--params {d}/params.csv", _OVERWRITE),
    _same("out-is-the-candidates", ["decode", "--params", "{d}/params.csv", "--counts", "{d}/counts.csv",
                                    "--candidates", "{d}/cand.txt", "-o", "{d}/cand.txt"], "-o {d}/cand.txt",
          "--candidates {d}/cand.txt", _OVERWRITE),
    _same("out-is-the-candidates", ["hash-candidates", "--params", "{d}/params.csv", "{d}/cand.txt", "-o",
                                    "{d}/cand.txt"], "-o {d}/cand.txt", "CANDIDATES {d}/cand.txt", _OVERWRITE),
    _same("out-is-the-params", ["hash-candidates", "--params", "{d}/params.csv", "{d}/cand.txt", "-o",
                                "{d}/params.csv"], "-o {d}/params.csv", "--params {d}/params.csv", _OVERWRITE),
    _same("out-is-the-params", ["privacy", "--params", "{d}/params.csv", "-o", "{d}/params.csv"],
          "-o {d}/params.csv", "--params {d}/params.csv", _OVERWRITE),
    _same("out-is-the-discovery-params", ["privacy", "--params", "{d}/params.csv", "--discovery-params",
                                          "{d}/found.csv", "-o", "{d}/found.csv"],  # was replaced (exit 0)
          "-o {d}/found.csv", "--discovery-params {d}/found.csv", _OVERWRITE, **{"found.csv": PARAMS_CSV}),
    _same("params-out-is-the-output", ["plan", "--reports", "1000", "--candidates", "10", "-o", "{out}",
                                       "--params-out", "{out}"], "--params-out {out}", "-o {out}", _SHARED),
    _same("params-inside-out-dir", ["simulate", "--params", "{d}/params.csv", "--out", "{d}", "--no-report"],
          "--out {d}/params.csv", "--params {d}/params.csv", _OVERWRITE),
    _same("discovery-params-inside-out-dir", ["simulate", "--discover", "--discovery-params", "{d}/found.csv",
                                              "--out", "{d}", "--no-report"],
          "--out {d}/found.csv", "--discovery-params {d}/found.csv", _OVERWRITE, **{"found.csv": PARAMS_CSV}),
    _same("out-is-the-counts", ["discover", "--params", "{d}/params.csv", "--counts", "{d}/counts.csv", "-o",
                                "{d}/counts.csv"], "-o {d}/counts.csv", "--counts {d}/counts.csv", _OVERWRITE),
    _same("list-is-the-output", ["discover", "--params", "{d}/params.csv", "--counts", "{d}/counts.csv", "-o",
                                 "{out}", "--list", "{out}"], "--list {out}", "-o {out}", _SHARED),
    _same("population-inside-out-dir", ["simulate", "--population", "{d}/truth.csv", "--out", "{d}", "--no-report"],
          "--out {d}/truth.csv", "--population {d}/truth.csv", _OVERWRITE,
          **{"truth.csv": b"string,count\na,1\n"}),
]
CASES += SAME_FILE_CASES

_KEY_TARGET = "refusing to replace a key file (written by rappor keygen)"


def _key_target(name: str, argv: list[str], bad: str = "k.key", **extra: bytes | None) -> Case:
    """An output names a key file (``k.key``, or a file inside an ``--out`` directory): refused, key kept."""
    files = _base(**{"k.key": KEY_FILE, "map.csv": _map_bytes(GOOD_CANDIDATES), "in.csv": b"client,value\na,x\n"})
    files.update(extra)
    return Case(f"{argv[0]}/output-is-a-key-{name}", files, argv, bad=bad, expected=_KEY_TARGET)


#: No command but ``keygen --force`` replaces a key, whatever the key file is called.
KEY_TARGET_CASES: list[Case] = [
    _key_target("o", [*_DECODE, "-o", "{d}/k.key"]),
    _key_target("summary", [*_DECODE, "-o", "{out}", "--summary", "{d}/k.key"]),
    _key_target("o", [*_SUM, "-o", "{d}/k.key"]),
    _key_target("o", ["merge-counts", "--params", "{d}/params.csv", "{d}/counts.csv", "-o", "{d}/k.key"]),
    _key_target("o", ["hash-candidates", "--params", "{d}/params.csv", "{d}/cand.txt", "-o", "{d}/k.key"]),
    _key_target("o", ["encode", "--params", "{d}/params.csv", "--key-file", "{d}/key", "{d}/in.csv", "-o",
                      "{d}/k.key"], key=KEY_FILE),
    _key_target("list", ["discover", "--params", "{d}/params.csv", "--counts", "{d}/counts.csv", "-o", "{out}",
                         "--list", "{d}/k.key"]),
    _key_target("o", ["privacy", "--params", "{d}/params.csv", "-o", "{d}/k.key"]),
    _key_target("params-out", ["plan", "--reports", "1000", "--candidates", "10", "-o", "{out}", "--params-out",
                               "{d}/k.key"]),
    _key_target("o", ["decode-assoc", "--params", "{d}/params.csv", "--reports", "{d}/reports.csv", "--var1", "s",
                      "--map1", "{d}/map.csv", "--var2", "b", "--bool", "-o", "{d}/k.key"]),
    _key_target("in-out-dir", ["simulate-assoc", "--out", "{d}/sim"], bad="sim/reports.csv",
                sim=None, **{"sim/reports.csv": KEY_FILE}),
    _key_target("in-out-dir", ["simulate", "--out", "{d}/sim", "--no-report"], bad="sim/results.csv",
                sim=None, **{"sim/results.csv": KEY_FILE}),
]
CASES += KEY_TARGET_CASES

# ---------------------------------------------------------------- association (decode-assoc, simulate-assoc)
#: 40 report pairs: a string variable 's' (the IRRs of ROWS) and a boolean 'b', one cohort column.
ASSOC_REPORTS = ("client,cohort,s,b\n" + "".join(f"{a},{c},{s},{i % 2}\n" for i, (a, c, s) in enumerate(ROWS))).encode()
_ASSOC = ["decode-assoc", "--params", "{d}/params.csv", "--reports", "{d}/r.csv", "--var1", "s", "--map1",
          "{d}/map.csv", "--var2", "b", "--bool", "--categories", "all", "-o", "{out}"]


def _assoc(bad: str, reports: bytes, line: int | None, expected: str, **files: bytes) -> Case:
    inputs: dict[str, bytes | None] = {"params.csv": PARAMS_CSV, "map.csv": _map_bytes(GOOD_CANDIDATES),
                                       "r.csv": reports}
    inputs.update(files)
    return Case(f"decode-assoc/{bad}", inputs, _ASSOC, bad="r.csv" if "map.csv" not in files else "map.csv",
                line=line, expected=expected)


def _assoc_row(row: str) -> bytes:
    lines = ASSOC_REPORTS.decode().splitlines(keepends=True)
    return "".join(lines[:3] + [row + "\n"] + lines[3:]).encode()


def _assert_reports_read(summary: Path, n: int) -> None:
    import json

    assert json.loads(summary.read_text())["reports_read"] == n


def _check_assoc_same_as_plain(out: Path, stdout: str) -> None:
    """The BOM + CRLF file decodes exactly like the plain one."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        t = Path(tmp)
        (t / "params.csv").write_bytes(PARAMS_CSV)
        (t / "map.csv").write_bytes(_map_bytes(GOOD_CANDIDATES))
        (t / "r.csv").write_bytes(ASSOC_REPORTS)
        assert main([a.format(d=t, out=t / "expected") for a in _ASSOC]) == 0
        assert (out / "result").read_bytes() == (t / "expected").read_bytes()


ASSOC_CASES = [
    _assoc("blank-string", _assoc_row("x,1,,0"), 4, "blank value of variable 's' (pass --remove-bad-rows"),
    _assoc("blank-boolean", _assoc_row("x,1,00000001,"), 4, "blank value of variable 'b'"),
    _assoc("short-bits", _assoc_row("x,1,0000001,0"), 4, "variable 's': expected a bit string of 8 characters"),
    _assoc("not-bits", _assoc_row("x,1,0000001x,0"), 4, "expected only '0' and '1'"),
    _assoc("boolean-two-bits", _assoc_row("x,1,00000001,10"), 4, "variable 'b': expected a bit string of 1"),
    _assoc("cohort-out-of-range", _assoc_row("x,4,00000001,0"), 4, "expected a cohort, an integer in [0, 3]"),
    _assoc("cohort-negative", _assoc_row("x,-1,00000001,0"), 4, "expected a cohort"),
    _assoc("columns", _assoc_row("x,1,00000001"), 4, "expected 4 comma-separated columns"),
    _assoc("missing-column", b"client,cohort,s\nc0,1,00000001\n", 1, "expected a column 'b' in the header"),
    _assoc("empty", b"", None, "found an empty file"),
    # a repeated column: the first was read, the second ignored (exit 0)
    _assoc("repeated-column", b"client,cohort,s,b,s\nc0,1,00000001,0,11111111\n", 1,
           "expected one column 's' in the header, found 2"),
    _assoc("not-utf8", ASSOC_REPORTS + b"c,1,\xff0000001,0\n", 42, "expected UTF-8 text"),
    _assoc("map-other-params", ASSOC_REPORTS, 1, "was the map made with other parameters?",
           **{"map.csv": _map_bytes(GOOD_CANDIDATES, OTHER_K_PARAMS)}),
    Case("decode-assoc/bom-crlf-accepted", {"params.csv": PARAMS_CSV, "map.csv": _map_bytes(GOOD_CANDIDATES),
                                            "r.csv": crlf_bom(ASSOC_REPORTS)}, _ASSOC,
         check=_check_assoc_same_as_plain),
    Case("decode-assoc/schema-missing-var", {"params.csv": PARAMS_CSV, "map.csv": _map_bytes(GOOD_CANDIDATES),
                                             "r.csv": ASSOC_REPORTS,
                                             "vars.csv": b"metric,var,var_type,params\nm,s,string,params\n"},
         ["decode-assoc", "--metric-name", "m", "--schema", "{d}/vars.csv", "--params-dir", "{d}", "--reports",
          "{d}/r.csv", "--var1", "s", "--var2", "b", "--map1", "{d}/map.csv", "--output-dir", "{d}/out"],
         bad="vars.csv", expected="couldn't find metric 'm', field 'b' in the schema"),
    *[Case(f"encode/several-variables-named-{reserved}", {"params.csv": PARAMS_CSV,
                                                         "in.csv": f"client,{reserved},x\nc1,a,1\n".encode()},
           ["encode", "--params", "{d}/params.csv", "--key-file", "{d}/key", "{d}/in.csv", "-o", "{out}"],
           bad="in.csv", line=1, expected=f"expected variable names other than 'client' and 'cohort'")
      for reserved in ("cohort", "client")],  # wrote 'client,cohort,cohort,x' (exit 0)
    Case("decode-assoc/summary-in-a-missing-directory",  # the results file was left behind
         {"params.csv": PARAMS_CSV, "map.csv": _map_bytes(GOOD_CANDIDATES), "r.csv": ASSOC_REPORTS},
         [*_ASSOC, "--summary", "{d}/nodir/s.json"], bad="nodir/s.json", expected="cannot write file"),
    Case("decode-assoc/cohort-as-a-variable", {"params.csv": PARAMS_CSV, "r.csv": b"client,cohort,b\nc0,1,0\n"},
         ["decode-assoc", "--params", "{d}/params.csv", "--reports", "{d}/r.csv", "--var1", "b", "--bool1", "--var2",
          "cohort", "--bool2", "-o", "{out}"], bad="r.csv", line=1,
         expected="'cohort' is the cohort column, not a variable"),  # cohorts 0/1 were read as booleans (exit 0)
    Case("simulate-assoc/params-nan", {"p.csv": NAN_PARAMS},
         ["simulate-assoc", "--params", "{d}/p.csv", "--out", "{d}/out", "--no-report"], bad="p.csv", line=2,
         expected="finite"),
    Case("simulate-assoc/out-cannot-be-created", {"file": b"x"},  # was "FILE: File exists", a bare mkdir
         ["simulate-assoc", "--out", "{d}/file/sub", "--no-report", "--clients", "100"], bad="file/sub",
         expected="cannot create the output directory"),
    Case("decode-assoc/output-dir-cannot-be-created",
         {"params.csv": PARAMS_CSV, "map.csv": _map_bytes(GOOD_CANDIDATES), "r.csv": ASSOC_REPORTS, "file": b"x",
          "vars.csv": b"metric,var,var_type,params\nm,s,string,params\nm,b,boolean,params\n"},
         ["decode-assoc", "--metric-name", "m", "--schema", "{d}/vars.csv", "--params-dir", "{d}", "--reports",
          "{d}/r.csv", "--var1", "s", "--var2", "b", "--map1", "{d}/map.csv", "--output-dir", "{d}/file/sub"],
         bad="file/sub", expected="cannot create the output directory"),
    Case("simulate-assoc/out-is-a-file", {"file": b"x"}, ["simulate-assoc", "--out", "{d}/file", "--no-report"],
         bad="file", expected="not a directory"),
    _same("out-is-the-reports", [*_ASSOC[:-1], "{d}/r.csv"], "-o {d}/r.csv", "--reports {d}/r.csv", _OVERWRITE,
          **{"r.csv": ASSOC_REPORTS}),
    _same("summary-is-the-output", [*_ASSOC, "--summary", "{out}"], "--summary {out}", "-o {out}", _SHARED,
          **{"r.csv": ASSOC_REPORTS}),
    _same("params-inside-out-dir", ["simulate-assoc", "--params", "{d}/params.csv", "--out", "{d}", "--no-report"],
          "--out {d}/params.csv", "--params {d}/params.csv", _OVERWRITE),
    # google/rappor's form: the parameters file the schema names is an input (it was replaced, exit 0).
    _same("output-dir-holds-the-schema-params",
          ["decode-assoc", "--metric-name", "m", "--schema", "{d}/vars.csv", "--params-dir", "{d}", "--reports",
           "{d}/r.csv", "--var1", "s", "--var2", "b", "--map1", "{d}/map.csv", "--output-dir", "{d}"],
          "--output-dir {d}/assoc-results.csv", "--params-dir {d}/assoc-results.csv", _OVERWRITE,
          **{"r.csv": ASSOC_REPORTS, "assoc-results.csv": PARAMS_CSV,
             "vars.csv": b"metric,var,var_type,params\nm,s,string,assoc-results\nm,b,boolean,assoc-results\n"}),
    # Issue 13, item 5: the client id's quoted line breaks spell a report; it stays one id (3 reports, not 4).
    Case("decode-assoc/forged-quoted-row-is-one-report",
         {"params.csv": PARAMS_CSV, "map.csv": _map_bytes(GOOD_CANDIDATES),
          "r.csv": b'client,cohort,s,b\nalice,1,00000001,0\n"x\nmallory,3,11111111,1\ny",2,00000010,0\n'
                   b'bob,1,00000100,1\n'},
         [*_ASSOC, "--summary", "{d}/out/s.json"], outputs=["result", "s.json"],
         check=lambda out, _: _assert_reports_read(out / "s.json", 3)),
]
CASES += ASSOC_CASES

#: Cases whose file is deleted before the run (a missing path).
_REMOVE = {"hash-candidates/params-missing": "p.csv", "merge-counts/missing": "bad.csv"}


def _setup(case: Case, d: Path) -> Path:
    for name, content in case.files.items():
        if content is None:
            (d / name).mkdir()
        else:
            (d / name).write_bytes(content)
            if name in ("key", "k.key") or content == KEY_FILE:
                os.chmod(d / name, 0o600)
    if case.id.startswith("encode/") and "key" not in case.files or case.id == "keygen/exists":
        write_key_file(d / "key", KEY)
    if case.id in _REMOVE:
        (d / _REMOVE[case.id]).unlink()
    out = d / "out"
    out.mkdir(exist_ok=True)
    return out


def test_bad_input_table_is_large_and_covers_every_subcommand() -> None:
    assert len(CASES) >= 40
    assert len({c.id for c in CASES}) == len(CASES)
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "==SUPPRESS==" or a.__class__.__name__ == "_SubParsersAction")
    commands = set(sub.choices)  # type: ignore[attr-defined]
    covered = {c.argv[0] for c in CASES}
    # Commands added later by other engineers show up here until they get cases.
    assert commands - covered <= {"privacy", "plan", "plot"}, commands - covered


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_bad_input(case: Case, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = _setup(case, tmp_path)
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.is_file()}
    argv = [a.format(d=tmp_path, out=out / "result") for a in case.argv]
    status = main(argv)
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    if case.check is not None:
        assert status == 0, captured.err
        case.check(out, captured.out)
        left = sorted(p.name for p in out.iterdir()) if out.is_dir() else []
        assert left == sorted(case.outputs), left
        return
    assert status == 1, (status, captured.out, captured.err)
    err = captured.err
    assert err.startswith("rappor: error: "), err
    assert err.count("\n") == 1, err  # one line, no traceback
    if case.bad is not None:
        where = f"{tmp_path / case.bad}:" + (f"{case.line}:" if case.line is not None else "")
        assert err.startswith(f"rappor: error: {where} "), (where, err)
    assert case.expected.format(d=tmp_path, out=out / "result") in err, err
    assert captured.out == ""
    # No partial output, no temporary file left behind, inputs untouched.
    if out.is_dir():
        assert sorted(p.name for p in out.iterdir()) == [], list(out.iterdir())
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp") or p.name.startswith(".")]
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.is_file()} == before


@pytest.mark.parametrize("case", [c for c in CASES if c.id.startswith("key-as-")],
                         ids=[c.id for c in CASES if c.id.startswith("key-as-")])
def test_bad_input_key_file_is_never_echoed(case: Case, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Issue 13, item 4: the key, hex or raw, is in no message and no file the run leaves.
    out = _setup(case, tmp_path)
    main([a.format(d=tmp_path, out=out / "result") for a in case.argv])
    captured = capsys.readouterr()
    leaked = [KEY.hex(), KEY.hex().upper(), KEY.hex()[:20]]
    for text in (captured.out, captured.err):
        assert not any(k in text for k in leaked), text
    for path in tmp_path.rglob("*"):
        if path.is_file() and path.name not in ("k.key", "key"):
            data = path.read_bytes()
            assert KEY not in data and not any(k.encode() in data for k in leaked), path


HUGE = 10_000_000  # characters of the huge line below: 10 MB
_HUGE_LINE_CASES = [
    # (id, files, argv, what the message quotes); every file name is in {d}
    ("params-header", {"p.csv": b"k,h," + b"m" * 60_000 + b"\n8,2,4,.5,.75,.5\n"},
     ["privacy", "--params", "{d}/p.csv"], "(60,004 characters)"),
    ("reports-header", {"r.csv": b"x" * HUGE + b"\n"},
     ["sum-bits", "--params", "{d}/params.csv", "{d}/r.csv", "-o", "{out}"], f"({HUGE:,} characters)"),
    ("reports-cohort", {"r.csv": b"client,cohort,irr\nc," + b"9" * HUGE + b",00000001\n"},
     ["sum-bits", "--params", "{d}/params.csv", "{d}/r.csv", "-o", "{out}"], f"({HUGE:,} characters)"),
    ("reports-cohort-quoted", {"r.csv": b'client,cohort,irr\n"c",' + b"9" * HUGE + b",00000001\n"},
     ["sum-bits", "--params", "{d}/params.csv", "{d}/r.csv", "-o", "{out}"], f"({HUGE:,} characters)"),
    ("counts", {"c.csv": b"9" * HUGE + b",0,0,0,0,0,0,0,0\n"},
     ["merge-counts", "--params", "{d}/params.csv", "{d}/c.csv"], f"({HUGE:,} characters)"),
    ("candidates", {"c.txt": b"a" * HUGE + b"\nb\n" + b"a" * HUGE + b"\n"},
     ["hash-candidates", "--params", "{d}/params.csv", "{d}/c.txt", "-o", "{out}"], f"({HUGE:,} characters)"),
    ("map", {"map.csv": b"a" * HUGE + b"," + b"1," * 7 + b"x\n"},
     ["decode", "--params", "{d}/params.csv", "--counts", "{d}/counts.csv", "--map", "{d}/map.csv", "-o", "{out}"],
     f"({HUGE + 16:,} characters)"),
    ("map-index", {"map.csv": b"a," + b"9" * HUGE + b"," + b"1," * 6 + b"1\n"},  # was a ValueError traceback
     ["decode", "--params", "{d}/params.csv", "--counts", "{d}/counts.csv", "--map", "{d}/map.csv", "-o", "{out}"],
     f"({HUGE:,} characters) in column 2"),
    ("population", {"pop.csv": b"string,count\n" + b"s" * HUGE + b",many\n"},
     ["simulate", "--population", "{d}/pop.csv", "--out", "{d}/out", "--no-report", "--clients", "10"],
     f"({HUGE + 5:,} characters)"),
    ("population-no-comma", {"pop.csv": b"s" * HUGE + b"\n"},
     ["simulate", "--population", "{d}/pop.csv", "--out", "{d}/out", "--no-report", "--clients", "10"],
     f"({HUGE:,} characters)"),
    ("assoc-header", {"r.csv": b"client,cohort," + b"s" * HUGE + b",b\n"},
     ["decode-assoc", "--params", "{d}/params.csv", "--reports", "{d}/r.csv", "--var1", "s", "--map1", "{d}/map.csv",
      "--var2", "b", "--bool"], "characters)"),
    ("assoc-cohort", {"r.csv": b"client,cohort,s,b\nc," + b"x" * HUGE + b",00000001,0\n"},
     ["decode-assoc", "--params", "{d}/params.csv", "--reports", "{d}/r.csv", "--var1", "s", "--map1", "{d}/map.csv",
      "--var2", "b", "--bool"], f"({HUGE:,} characters)"),
    ("assoc-schema-header", {"vars.csv": b"metric,var," + b"t" * HUGE + b"\n"},
     ["decode-assoc", "--metric-name", "m", "--schema", "{d}/vars.csv", "--params-dir", "{d}", "--reports",
      "{d}/reports.csv", "--var1", "s", "--var2", "b", "--map1", "{d}/map.csv"], f"({HUGE + 11:,} characters)"),
    ("encode-several-variables-header", {"in.csv": b"client,a,a," + b"v" * HUGE + b"\nc,x,y,z\n"},
     ["encode", "--params", "{d}/params.csv", "--key-file", "{d}/key", "{d}/in.csv", "-o", "{out}"],
     f"({HUGE + 11:,} characters)"),
    ("encode-several-variables-row", {"in.csv": b"client,a," + b"v" * HUGE + b"\nc,x\n"},  # quoted the header
     ["encode", "--params", "{d}/params.csv", "--key-file", "{d}/key", "{d}/in.csv", "-o", "{out}"],
     f"({HUGE + 9:,} characters)"),
    ("encode-several-variables-boolean", {"in.csv": b"client,a,b\nc,x," + b"t" * HUGE + b"\n"},
     ["encode", "--params", "{d}/params.csv", "--key-file", "{d}/key", "--bool", "b", "{d}/in.csv", "-o", "{out}"],
     f"({HUGE:,} characters)"),
    ("encode-header", {"in.csv": b"client," + b"v" * HUGE + b"\na,x\n"},
     ["encode", "--params", "{d}/params.csv", "--key-file", "{d}/key", "{d}/in.csv", "-o", "{out}"],
     f"({HUGE + 7:,} characters)"),
]


@pytest.mark.parametrize(("files", "argv", "quoted"), [c[1:] for c in _HUGE_LINE_CASES],
                         ids=[c[0] for c in _HUGE_LINE_CASES])
def test_bad_input_huge_line_gives_a_short_message(files: dict[str, bytes], argv: list[str], quoted: str,
                                                   tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Issue 13, item 8: a 10 MB line made 10 MB of stderr; now at most 80 characters of it, and its length.
    out = _setup(Case("huge", {**_base(**{"map.csv": _map_bytes(GOOD_CANDIDATES)}), **files}, argv), tmp_path)
    write_key_file(tmp_path / "key", KEY)
    assert main([a.format(d=tmp_path, out=out / "result") for a in argv]) == 1
    err = capsys.readouterr().err
    assert len(err) < 500 and err.startswith("rappor: error: ") and quoted in err, err[:1000]


@pytest.mark.parametrize("command", ["sum-bits", "encode"])
def test_bad_input_huge_rejected_rows_stay_small(command: str, tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    # Issue 13, item 8: a 10 MB bad row made a 10 MB rejects file; now 80 characters and the length.
    (tmp_path / "params.csv").write_bytes(PARAMS_CSV)
    write_key_file(tmp_path / "key", KEY)
    if command == "sum-bits":
        (tmp_path / "in.csv").write_bytes(b"client,cohort,irr\n" + b"c" * HUGE + b",9,00000001\nc,1,00000001\n")
        argv = ["sum-bits", "--params", str(tmp_path / "params.csv")]
    else:
        (tmp_path / "in.csv").write_bytes(b"client,value\n" + b"c" * HUGE + b",x,y\nc,x\n")
        argv = ["encode", "--params", str(tmp_path / "params.csv"), "--key-file", str(tmp_path / "key")]
    assert main([*argv, str(tmp_path / "in.csv"), "-o", str(tmp_path / "out.csv"), "--on-error", "skip"]) == 0
    assert len(capsys.readouterr().err) < 500
    rejects = (tmp_path / "out.csv.rejects.csv").read_text()
    row_length = HUGE + (11 if command == "sum-bits" else 4)
    assert len(rejects) < 500 and f"({row_length:,} characters)" in rejects, rejects[:1000]


def test_bad_input_failed_run_keeps_the_old_output(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _setup(_sum("x", b"client,cohort,irr\nc1,9,00000001\n", 2, ""), tmp_path)
    old = tmp_path / "out" / "counts.csv"
    old.write_bytes(b"old\n")
    assert main(["sum-bits", "--params", str(tmp_path / "params.csv"), str(tmp_path / "reports.csv"),
                 str(tmp_path / "bad.csv"), "-o", str(old)]) == 1
    assert old.read_bytes() == b"old\n"
    assert sorted(p.name for p in old.parent.iterdir()) == ["counts.csv"]


def test_bad_input_world_readable_key_warns_and_works(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "params.csv").write_bytes(PARAMS_CSV)
    (tmp_path / "in.csv").write_bytes(b"client,value\na,x\n")
    write_key_file(tmp_path / "key", KEY)
    os.chmod(tmp_path / "key", 0o644)
    assert main(["encode", "--params", str(tmp_path / "params.csv"), "--key-file", str(tmp_path / "key"),
                 str(tmp_path / "in.csv"), "-o", str(tmp_path / "r.csv")]) == 0
    err = capsys.readouterr().err
    assert err.startswith(f"rappor: warning: {tmp_path / 'key'}: the key file can be read by every user")
    assert KEY.hex() not in err
    assert stat.S_IMODE(os.stat(tmp_path / "key").st_mode) == 0o644  # we warn, we do not chmod


def test_bad_input_keygen_exists_keeps_the_key(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_key_file(tmp_path / "key", KEY)
    assert main(["keygen", "-o", str(tmp_path / "key")]) == 1
    assert (tmp_path / "key").read_text().strip() == KEY.hex()


def test_bad_input_map_file(tmp_path: Path) -> None:
    """map.csv has no reader command yet (decode); its parser is checked directly."""
    from rappor import ReportFormatError

    good = tmp_path / "map.csv"
    from rappor.formats import write_map

    write_map(hash_candidates(["a", "b"], PARAMS), good)
    text = good.read_bytes()
    cases = [
        (b"", None, "expected at least one candidate row"),
        (text.replace(b"\n", b";", 1), 1, "expected a candidate and h * m = 8 row indices"),
        (text + text.split(b"\n")[0] + b"\n", 3, "expected distinct candidates"),
        (text.replace(b",", b",x", 1), 1, "expected a positive integer row index"),
        (b"a" + b",99" * 8 + b"\n", 1, "expected row indices in [1, m * k] = [1, 32]"),
        (b"a" + b",1" * 8 + b"\n", 1, "distinct indices of cohort 1 in [9, 16] (cohort*k + bit + 1 with k = 8), "
                                       "found none"),
        (b"a,1,2,9,10,17,18,25,\xff\n", 1, "expected UTF-8 text"),
    ]
    for content, line, expected in cases:
        bad = tmp_path / "bad.csv"
        bad.write_bytes(content)
        with pytest.raises(ReportFormatError, match=None) as info:
            read_map(bad, PARAMS)
        assert info.value.path == str(bad) and info.value.line == line, (content, info.value)
        assert expected in str(info.value), (content, str(info.value))
    assert list(read_map_bom(tmp_path, text).strings) == ["a", "b"]


def read_map_bom(tmp_path: Path, text: bytes):  # type: ignore[no-untyped-def]
    path = tmp_path / "bom.csv"
    path.write_bytes(crlf_bom(text))
    return read_map(path, PARAMS)


def test_bad_input_parquet(tmp_path: Path) -> None:
    """Parquet reports: not Parquet, other parameters, missing, empty directory."""
    pytest.importorskip("pyarrow")
    from rappor import IncompatibleParamsError, RapporIOError, ReportBatch, ReportFormatError
    from rappor.formats._parquet import aggregate_parquet, write_parquet_reports

    batch = ReportBatch.from_bitstrings(PARAMS, [c for _, c, _ in ROWS], [s for _, _, s in ROWS])
    write_parquet_reports(tmp_path / "r.parquet", batch)
    assert aggregate_parquet(tmp_path / "r.parquet", PARAMS).counts.tolist() == [
        list(map(int, line.split(","))) for line in GOOD_COUNTS.decode().splitlines()]
    (tmp_path / "fake.parquet").write_bytes(GOOD_REPORTS)
    with pytest.raises(ReportFormatError, match="not a readable Parquet file") as info:
        aggregate_parquet(tmp_path / "fake.parquet", PARAMS)
    assert info.value.path == str(tmp_path / "fake.parquet")
    other = Params(num_bloombits=8, num_hashes=2, num_cohorts=8, prob_p=0.5, prob_q=0.75, prob_f=0.5)
    with pytest.raises(IncompatibleParamsError, match="m=4"):
        aggregate_parquet(tmp_path / "r.parquet", other)
    with pytest.raises(RapporIOError, match="no such file"):
        aggregate_parquet(tmp_path / "nope.parquet", PARAMS)
    (tmp_path / "empty").mkdir()
    with pytest.raises(RapporIOError, match="found none"):
        aggregate_parquet(tmp_path / "empty", PARAMS)
    truncated = tmp_path / "trunc.parquet"
    truncated.write_bytes((tmp_path / "r.parquet").read_bytes()[:-20])
    with pytest.raises(ReportFormatError):
        aggregate_parquet(truncated, PARAMS)


@pytest.mark.parametrize("how", ["symlink", "hardlink"])
@pytest.mark.parametrize("case", KEY_TARGET_CASES, ids=[c.id for c in KEY_TARGET_CASES])
def test_bad_input_output_through_a_link_to_a_key_keeps_the_key(case: Case, how: str, tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    """The output path is a link to a key elsewhere (``link.csv -> client.key``): refused, the key unchanged."""
    _setup(case, tmp_path)
    key = tmp_path / "elsewhere" / "client.key"
    key.parent.mkdir()
    write_key_file(key, KEY)
    target = tmp_path / case.bad  # type: ignore[operator]
    target.unlink()
    if how == "symlink":
        target.symlink_to(key)
    else:
        os.link(key, target)
    status = main([a.format(d=tmp_path, out=tmp_path / "out" / "result") for a in case.argv])
    err = capsys.readouterr().err
    assert status == 1 and _KEY_TARGET in err, err
    assert key.read_bytes() == KEY_FILE
    assert KEY.hex() not in err
