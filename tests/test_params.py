"""Params: validation table, derived quantities (checked by brute force), params.csv files."""

from __future__ import annotations

import dataclasses
import io
import itertools
import math
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from rappor import IncompatibleParamsError, InvalidParameterError, Params, RapporIOError, ReportFormatError
from rappor.formats._params import read_params, write_params
from rappor.params import MAX_COHORTS, check_same_params

GOOD = {"num_bloombits": 16, "num_hashes": 2, "num_cohorts": 8, "prob_p": 0.5, "prob_q": 0.75, "prob_f": 0.5}

INT_FIELDS = ["num_bloombits", "num_hashes", "num_cohorts"]
PROB_FIELDS = ["prob_p", "prob_q", "prob_f"]
BAD_ANY = [True, False, np.bool_(True), "1", None, [1], float("nan"), float("inf"), -float("inf")]
BAD_INT = [0, -1, 1.5, 2.0, np.float64(3.0)]
BAD_PROB = [-0.1, 1.0000001, 2, -1, np.float32(1.5)]

CASES = (
    [(name, value) for name in INT_FIELDS + PROB_FIELDS for value in BAD_ANY]
    + [(name, value) for name in INT_FIELDS for value in BAD_INT]
    + [(name, value) for name in PROB_FIELDS for value in BAD_PROB]
    + [("num_hashes", 17), ("num_cohorts", MAX_COHORTS + 1)]
)


@pytest.mark.parametrize(("name", "value"), CASES, ids=[f"{n}={v!r}" for n, v in CASES])
def test_params_fail_bad_field(name: str, value: object) -> None:
    kwargs = dict(GOOD, **{name: value})
    with pytest.raises(InvalidParameterError) as err:
        Params(**kwargs)  # type: ignore[arg-type]
    msg = str(err.value)
    assert f"The {name!r} parameter of Params must be" in msg
    assert msg.endswith(f"Got {value!r} instead.")


def test_params_fail_bad_field_is_value_and_type_error() -> None:
    with pytest.raises(ValueError):
        Params(**dict(GOOD, prob_f=1.5))
    with pytest.raises(TypeError):
        Params(**dict(GOOD, num_bloombits="16"))


@pytest.mark.parametrize(("p", "q", "f"), [(0.5, 0.5, 0.0), (0.3, 0.3, 0.5), (0.25, 0.75, 1.0), (0.0, 0.0, 0.2)])
def test_params_fail_no_information(p: float, q: float, f: float) -> None:
    with pytest.raises(InvalidParameterError, match="carry no information"):
        Params(**dict(GOOD, prob_p=p, prob_q=q, prob_f=f))


@pytest.mark.parametrize(("p", "q", "f"), [(0.0, 1.0, 0.0), (1.0, 0.0, 0.5), (0.75, 0.25, 0.999)])
def test_params_accept_edges(p: float, q: float, f: float) -> None:
    params = Params(**dict(GOOD, prob_p=p, prob_q=q, prob_f=f))
    assert (params.p, params.q, params.f) == (p, q, f)


def test_params_normalize_numpy_scalars() -> None:
    params = Params(num_bloombits=np.int64(16), num_hashes=np.int32(2), num_cohorts=np.uint8(8),
                    prob_p=np.float32(0.5), prob_q=1, prob_f=np.float64(0.5))
    assert type(params.num_bloombits) is int and type(params.num_cohorts) is int
    assert type(params.prob_q) is float and params.prob_q == 1.0
    assert params == Params(**dict(GOOD, prob_q=1.0))


def test_params_frozen_and_hashable() -> None:
    params = Params(**GOOD)
    with pytest.raises(dataclasses.FrozenInstanceError):
        params.prob_f = 0.1  # type: ignore[misc]
    assert {params: 1}[Params(**GOOD)] == 1
    assert (params.k, params.h, params.m, params.p, params.q, params.f) == (16, 2, 8, 0.5, 0.75, 0.5)


# --- Derived values ------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(10))
def test_params_p11_p01_formulas(seed: int) -> None:
    rng = np.random.default_rng(seed)
    p, q, f = (float(x) for x in rng.uniform(0, 1, 3))
    params = Params(**dict(GOOD, prob_p=p, prob_q=q, prob_f=f))
    # Enumerate the PRR outcome: replaced by 1 (f/2), by 0 (f/2), or kept (1 - f).
    assert params.p11 == pytest.approx(f / 2 * q + f / 2 * p + (1 - f) * q, rel=1e-12)
    assert params.p01 == pytest.approx(f / 2 * q + f / 2 * p + (1 - f) * p, rel=1e-12)


def _brute_force_epsilons(p: float, q: float, f: float, k: int, h: int) -> tuple[float, float]:
    """Max log-likelihood ratios over every output, between two values whose Bloom filters are disjoint.

    Value A sets bits 0..h-1, value B sets bits h..2h-1 (the worst case: 2h bits differ).
    PRR law per bit: P(1 | B_j) = 1 - f/2 if B_j else f/2; one report's law: p11 / p01.
    """
    bloom_a = [1 if j < h else 0 for j in range(k)]
    bloom_b = [1 if h <= j < 2 * h else 0 for j in range(k)]
    eps_inf = eps_one = 0.0
    for out in itertools.product((0, 1), repeat=k):
        prr_a = math.prod((1 - f / 2 if b else f / 2) if o else (f / 2 if b else 1 - f / 2) for o, b in zip(out, bloom_a))
        prr_b = math.prod((1 - f / 2 if b else f / 2) if o else (f / 2 if b else 1 - f / 2) for o, b in zip(out, bloom_b))
        p11, p01 = q * (1 - f / 2) + p * f / 2, p * (1 - f / 2) + q * f / 2
        one_a = math.prod((p11 if b else p01) if o else (1 - (p11 if b else p01)) for o, b in zip(out, bloom_a))
        one_b = math.prod((p11 if b else p01) if o else (1 - (p11 if b else p01)) for o, b in zip(out, bloom_b))
        eps_inf = max(eps_inf, abs(math.log(prr_a / prr_b)))
        eps_one = max(eps_one, abs(math.log(one_a / one_b)))
    return eps_inf, eps_one


@pytest.mark.parametrize(("p", "q", "f", "h"), [(0.5, 0.75, 0.5, 1), (0.25, 0.75, 0.3, 2), (0.6, 0.2, 0.9, 2)])
def test_params_epsilons_match_brute_force(p: float, q: float, f: float, h: int) -> None:
    params = Params(num_bloombits=2 * h, num_hashes=h, num_cohorts=1, prob_p=p, prob_q=q, prob_f=f)
    eps_inf, eps_one = _brute_force_epsilons(p, q, f, 2 * h, h)
    assert params.epsilon_inf == pytest.approx(eps_inf, rel=1e-9)
    assert params.epsilon_one == pytest.approx(eps_one, rel=1e-9)
    # ... and from the other side: a slightly smaller bound is violated.
    assert not params.epsilon_inf * 0.999 >= eps_inf


def test_params_epsilon_infinite_cases() -> None:
    assert Params(**dict(GOOD, prob_f=0.0)).epsilon_inf == math.inf
    assert Params(**dict(GOOD, prob_p=0.0, prob_q=1.0, prob_f=0.0)).epsilon_one == math.inf


def test_params_num_words() -> None:
    assert [Params(**dict(GOOD, num_bloombits=k)).num_words for k in (2, 64, 65, 128, 4096)] == [1, 1, 2, 2, 64]


# --- params.csv ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "content",
    [
        b"k,h,m,p,q,f\n16,2,8,0.5,0.75,0.5\n",
        b"k, h, m, p, q, f\n16, 2, 8, 0.5, 0.75, 0.5\n",
        b'"k","h","m","p","q","f"\n16,2,8,0.5,0.75,0.5\n',
        b"\xef\xbb\xbfk,h,m,p,q,f\r\n16,2,8,0.5,0.75,0.5\r\n",
        b"k,h,m,p,q,f\n16,2,8,0.5,0.75,0.5",
        b"k,h,m,p,q,f\n16,2,8,0.5,0.75,0.5\n\n\n",
        b"f,q,p,m,h,k\n0.5,0.75,0.5,8,2,16\n",
    ],
)
def test_read_params_accepts(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "params.csv"
    path.write_bytes(content)
    assert read_params(path) == Params(**GOOD)


@pytest.mark.parametrize(
    ("content", "where", "message"),
    [
        (b"", ": ", "empty file"),
        (b"k,h,m,p,q\n16,2,8,0.5,0.75\n", ":1: ", "expected the header"),
        (b"k,h,m,p,q,x\n16,2,8,0.5,0.75,0.5\n", ":1: ", "expected the header"),
        (b"k,h,m,p,q,f,f\n16,2,8,0.5,0.75,0.5,0.5\n", ":1: ", "expected the header"),
        (b"k,h,m,p,q,f\n", ":2: ", "found none"),
        (b"k,h,m,p,q,f\n16,2,8,0.5,0.75,0.5\n16,2,8,0.5,0.75,0.5\n", ":3: ", "exactly one data row"),
        (b"k,h,m,p,q,f\n16,2,8,0.5,0.75\n", ":2: ", "expected 6 comma-separated values"),
        (b"k,h,m,p,q,f\n16.5,2,8,0.5,0.75,0.5\n", ":2: ", "integer for 'k'"),
        (b"k,h,m,p,q,f\n16,2,8,half,0.75,0.5\n", ":2: ", "number for 'p'"),
        (b"k,h,m,p,q,f\n16,2,8,nan,0.75,0.5\n", ":2: ", "finite number for 'p'"),
        (b"k,h,m,p,q,f\n16,2,8,0.5,0.75,1.5\n", ":2: ", "column f: expected a float in the range [0, 1], found 1.5"),
        (b"k,h,m,p,q,f\n16,2,0,0.5,0.75,0.5\n", ":2: ", "column m: expected an int in the range [1, "),
        (b"k,h,m,p,q,f\n16,2,8,0.5,0.5,0.5\n", ":2: ", "no information"),
        (b"k,h,m,p,q,f\n16,2,8,0.5,0.75,0.5\xff\n", ":2: ", "UTF-8"),
    ],
)
def test_read_params_fail_names_file_and_line(tmp_path: Path, content: bytes, where: str, message: str) -> None:
    path = tmp_path / "params.csv"
    path.write_bytes(content)
    with pytest.raises(ReportFormatError) as err:
        read_params(path)
    assert str(err.value).startswith(f"{tmp_path / 'params.csv'}{where}")
    assert message in str(err.value)


def test_read_params_fail_missing_file(tmp_path: Path) -> None:
    with pytest.raises(RapporIOError, match="nope.csv: cannot read file: no such file"):
        read_params(tmp_path / "nope.csv")


def test_read_params_stdin(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"k,h,m,p,q,f\n16,2,8,0.5,0.75,0.5\n")))
    assert read_params("-") == Params(**GOOD)


@pytest.mark.parametrize("seed", range(5))
def test_write_read_params_round_trip(tmp_path: Path, seed: int) -> None:
    rng = np.random.default_rng(seed)
    params = Params(num_bloombits=int(rng.integers(1, 5000)), num_hashes=1, num_cohorts=int(rng.integers(1, 2**32)),
                    prob_p=float(rng.uniform()), prob_q=float(rng.uniform()), prob_f=float(rng.uniform(0, 0.99)))
    path = tmp_path / "params.csv"
    write_params(params, path)
    assert read_params(path) == params  # floats survive exactly (repr)
    assert path.read_text().splitlines()[0] == "k,h,m,p,q,f"


def test_check_same_params_names_differences() -> None:
    a = Params(**GOOD)
    check_same_params(a, Params(**GOOD), "counts.csv")
    with pytest.raises(IncompatibleParamsError, match=r"counts.csv was made with different parameters: .*k=32 \(expected 16\)"):
        check_same_params(a, Params(**dict(GOOD, num_bloombits=32)), "counts.csv")


SHORT = {"k": 16, "h": 2, "m": 8, "p": 0.5, "q": 0.75, "f": 0.5}
LONG_OF = {"k": "num_bloombits", "h": "num_hashes", "m": "num_cohorts", "p": "prob_p", "q": "prob_q", "f": "prob_f"}


def test_params_short_names_as_keywords() -> None:
    """k, h, m, p, q, f (params.csv's header) are accepted as keywords, alone or mixed with the long names."""
    assert Params(**SHORT) == Params(**{LONG_OF[key]: value for key, value in SHORT.items()})  # type: ignore[arg-type]
    mixed = dict(SHORT, num_cohorts=8)
    del mixed["m"]
    assert Params(**mixed).m == 8  # type: ignore[arg-type]


@pytest.mark.parametrize("short", list(SHORT))
def test_params_fail_both_names_given(short: str) -> None:
    with pytest.raises(InvalidParameterError, match=f"both {LONG_OF[short]}=.* and {short}="):
        Params(**SHORT, **{LONG_OF[short]: SHORT[short]})  # type: ignore[arg-type]


@pytest.mark.parametrize("short", list(SHORT))
def test_params_fail_missing_names_both(short: str) -> None:
    kwargs = {key: value for key, value in SHORT.items() if key != short}
    with pytest.raises(InvalidParameterError, match=f"needs {LONG_OF[short]} \\(or its short name {short}\\)"):
        Params(**kwargs)  # type: ignore[arg-type]


def test_params_error_names_the_keyword_used() -> None:
    with pytest.raises(InvalidParameterError, match="The 'k' parameter of Params must be"):
        Params(**dict(SHORT, k=0))  # type: ignore[arg-type]


def test_read_params_of_a_large_other_file_reads_only_its_start(tmp_path: Path) -> None:
    # Issue 13, item 7: `rappor privacy --params reports.csv` read the whole file (385 MB
    # reached 1.9 GB) before checking its first line.  Now the bad header stops the read.
    import tracemalloc

    path = tmp_path / "reports.csv"
    with path.open("w") as fh:
        fh.write("client,cohort,irr\n")
        fh.writelines(f"c{i},{i % 64},0110100101101001\n" for i in range(400_000))  # 10 MB
    tracemalloc.start()
    try:
        with pytest.raises(ReportFormatError) as info:
            read_params(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert info.value.line == 1 and "expected the header 'k,h,m,p,q,f', found 'client,cohort,irr'" in str(info.value)
    assert peak < 2**20  # the old reader held every line: about 60 MB here


def test_read_params_stops_after_one_row_too_many(tmp_path: Path) -> None:
    path = tmp_path / "p.csv"
    path.write_text("k,h,m,p,q,f\n8,2,4,0.5,0.75,0.5\n" + "junk\n" * 1000)
    with pytest.raises(ReportFormatError, match="expected exactly one data row") as info:
        read_params(path)
    assert info.value.line == 3


def test_read_params_dev_zero_is_a_bounded_read(run_limited_python: Callable[..., Any]) -> None:
    # A line without end is read only up to 64 KiB (the old reader read until out of memory).
    result = run_limited_python(
        "from rappor import ReportFormatError\n"
        "from rappor.formats import read_params\n"
        "try:\n    read_params('/dev/zero')\n"
        "except ReportFormatError as exc:\n    print(exc)\n",
        address_space=1 << 30)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout == "/dev/zero:1: expected a line of at most 65,536 bytes, found a longer one\n"


def test_epsilon_inf_of_the_smallest_f_is_finite() -> None:
    # f = 5e-324 (the smallest subnormal): f / 2 rounds to 0 and ln(f / 2) raised
    # "math domain error" (a traceback in `rappor privacy` and `rappor plan --epsilon-inf 1e5`).
    params = Params(num_bloombits=16, num_hashes=2, num_cohorts=4, prob_p=0.5, prob_q=0.75, prob_f=5e-324)
    expected = 2 * 2 * (math.log1p(-2.5e-324) - (math.log(5e-324) - math.log(2.0)))  # 2h ln((1 - f/2) / (f/2))
    assert math.isfinite(params.epsilon_inf) and params.epsilon_inf == pytest.approx(expected)
    assert params.epsilon_inf == pytest.approx(2 * 2 * (1075 * math.log(2.0)))  # f / 2 = 2**-1075
