"""Memory estimates checked before large allocations (rappor/_util/memory.py) and where they are checked."""

from __future__ import annotations

import os
import resource
from pathlib import Path

import numpy as np
import pytest

import rappor._util.memory as memory
from rappor import (
    Aggregate,
    InsufficientMemoryError,
    InvalidParameterError,
    Params,
    ReportBatch,
    encode_clients,
    hash_candidates,
)
from rappor.formats import read_counts, read_map, write_counts, write_map
from rappor.collect._compat import hash_candidates_google
from rappor.cli._main import main

HUGE = Params(num_bloombits=2**32, num_hashes=2, num_cohorts=2**32, prob_p=0.5, prob_q=0.75, prob_f=0.5)
SMALL = Params(num_bloombits=8, num_hashes=2, num_cohorts=4, prob_p=0.5, prob_q=0.75, prob_f=0.5)


@pytest.mark.parametrize(("text", "expected"), [
    ("1000000", 1_000_000), ("8G", 8 << 30), ("8g", 8 << 30), ("8GiB", 8 << 30), ("8GB", 8 << 30),
    ("512M", 512 << 20), ("1.5K", 1536), (" 2T ", 2 << 40), ("none", None), ("unlimited", None),
])
def test_memory_limit_env_override(monkeypatch: pytest.MonkeyPatch, text: str, expected: int | None) -> None:
    monkeypatch.setenv(memory.ENV_VAR, text)
    limit = memory.memory_limit()
    assert (None if limit is None else limit[0]) == expected
    if limit is not None:
        assert memory.ENV_VAR in limit[1]


@pytest.mark.parametrize("text", ["lots", "-1G", "0", "G", "infG", "nan"])
def test_memory_limit_fail_bad_env_value(monkeypatch: pytest.MonkeyPatch, text: str) -> None:
    monkeypatch.setenv(memory.ENV_VAR, text)
    with pytest.raises(InvalidParameterError, match="RAPPOR_MEMORY_LIMIT environment variable must be"):
        memory.memory_limit()


def test_memory_limit_from_the_machine(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(memory.ENV_VAR, raising=False)
    limit = memory.memory_limit()
    assert limit is not None and 0 < limit[0] < 1 << 50


def test_memory_limit_honours_ulimit_v(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(memory.ENV_VAR, raising=False)
    soft = 1 << 40  # 1 TiB of address space, less what this process has mapped
    monkeypatch.setattr(resource, "getrlimit", lambda which: (soft, resource.RLIM_INFINITY))
    limit = memory.memory_limit()
    assert limit is not None
    room = memory._address_space_room()
    assert room is not None and 0 < room < soft
    if limit[1] == "room left under ulimit -v":
        assert limit[0] == room


def test_check_memory_small_needs_are_not_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(memory.ENV_VAR, "1K")
    memory.check_memory(memory.CHECK_ABOVE - 1, "a small table")  # below the threshold: no error


def test_check_memory_message(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(memory.ENV_VAR, "100M")
    with pytest.raises(InsufficientMemoryError) as info:
        memory.check_memory(3 << 30, "a big table")
    assert str(info.value) == ("a big table needs about 3 GiB of memory, more than the 100 MiB of "
                               "RAPPOR_MEMORY_LIMIT=100M: use smaller parameters (or set RAPPOR_MEMORY_LIMIT, "
                               "e.g. RAPPOR_MEMORY_LIMIT=64G, if the estimate is wrong)")
    assert isinstance(info.value, MemoryError)


def test_format_bytes() -> None:
    assert memory.format_bytes(2**67) == "128 EiB"
    assert memory.format_bytes(1536) == "1.5 KiB"
    assert memory.format_bytes(10) == "10 bytes"


def test_design_bytes_grows_with_candidates_and_parameters() -> None:
    one = memory.design_bytes(SMALL, 1000)
    assert memory.design_bytes(SMALL, 2000) > one
    wide = Params(num_bloombits=8, num_hashes=2, num_cohorts=2**31, prob_p=0.5, prob_q=0.75, prob_f=0.5)
    assert memory.design_bytes(wide, 1) > 2**31 * 2 * 8  # int64 row indices beyond 2**31 rows


# --- k = m = 2**32: a clear error, not "ValueError: array is too big" ------------------------------------

def test_huge_params_counts_table_refused() -> None:
    with pytest.raises(InsufficientMemoryError, match=r"a counts table of m = 4294967296 cohorts x \(k \+ 1\) = "
                                                      r"4294967297 counts needs about 256 EiB"):
        Aggregate.empty(HUGE)


def test_huge_params_candidate_map_refused() -> None:
    with pytest.raises(InsufficientMemoryError, match="the candidate map of 1 candidate x m = 4294967296 cohorts"):
        hash_candidates(["a"], HUGE)
    google = Params(num_bloombits=128, num_hashes=16, num_cohorts=2**32, prob_p=0.5, prob_q=0.75, prob_f=0.5)
    with pytest.raises(InsufficientMemoryError, match="the candidate map"):
        hash_candidates_google(["a"], google)


@pytest.mark.parametrize("command", ["sum-bits", "merge-counts", "decode", "hash-candidates", "encode"])
def test_huge_params_cli_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str) -> None:
    (tmp_path / "p.csv").write_text("k,h,m,p,q,f\n4294967296,2,4294967296,0.5,0.75,0.5\n")
    (tmp_path / "r.csv").write_text("client,cohort,irr\n")
    (tmp_path / "c.csv").write_text("0,0\n")
    (tmp_path / "cand.txt").write_text("a\n")
    (tmp_path / "in.csv").write_text("client,value\nc,a\n")
    (tmp_path / "key").write_text(bytes(range(32)).hex() + "\n")
    os.chmod(tmp_path / "key", 0o600)
    # encode: one report of k = 2**32 bits needs 64 GiB; it was killed by the kernel, without a word.
    inputs = {"sum-bits": ["{d}/r.csv"], "merge-counts": ["{d}/c.csv"], "hash-candidates": ["{d}/cand.txt"],
              "decode": ["--counts", "{d}/c.csv", "--candidates", "{d}/cand.txt"],
              "encode": ["--key-file", "{d}/key", "{d}/in.csv", "--jobs", "1"]}[command]
    argv = [command, "--params", str(tmp_path / "p.csv"), *[a.format(d=tmp_path) for a in inputs],
            "-o", str(tmp_path / "out")]
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert err.startswith("rappor: error: ") and err.count("\n") == 1, err
    assert "needs about" in err and "more than the" in err and "RAPPOR_MEMORY_LIMIT" in err
    assert not (tmp_path / "out").exists()


# --- every site checks before allocating -------------------------------------------------------------

def test_sites_check_before_allocating(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cmap = hash_candidates(["a", "b"], SMALL)
    write_map(cmap, tmp_path / "map.csv")
    write_counts(Aggregate.empty(SMALL), tmp_path / "counts.csv")
    monkeypatch.setattr(memory, "CHECK_ABOVE", 0)  # every estimate is checked, against 100 bytes
    monkeypatch.setenv(memory.ENV_VAR, "100")
    with pytest.raises(InsufficientMemoryError, match="the candidate map of 2 candidates"):
        hash_candidates(["a", "b"], SMALL)
    with pytest.raises(InsufficientMemoryError, match="the candidate map of 2 candidates"):
        hash_candidates_google(["a", "b"], SMALL)
    with pytest.raises(InsufficientMemoryError, match="the candidate map of 2 candidates"):
        read_map(tmp_path / "map.csv", SMALL)
    with pytest.raises(InsufficientMemoryError, match="a counts table of m = 4 cohorts"):
        read_counts(tmp_path / "counts.csv", SMALL)
    with pytest.raises(InsufficientMemoryError, match="encoding 2 report"):
        encode_clients(SMALL, bytes(32), ["a", "b"], ["x", "y"])
    with pytest.raises(InsufficientMemoryError, match="a counts table"):
        Aggregate.empty(SMALL)
    with pytest.raises(InsufficientMemoryError, match="a counts table"):
        Aggregate.from_reports(ReportBatch(params=SMALL, cohorts=np.zeros(0, np.int64),
                                           words=np.zeros((0, 1), dtype=np.uint64)))
    monkeypatch.setenv(memory.ENV_VAR, "none")
    assert len(read_map(tmp_path / "map.csv", SMALL)) == 2


def test_decode_is_refused_before_estimating(monkeypatch: pytest.MonkeyPatch) -> None:
    # Issue 15 (asked in issue 13's memory checks): Decoder.decode checks its working
    # arrays against the memory available before it estimates anything.
    import numpy as np

    import rappor.analysis.decoder._decoder as decoder_module
    from rappor import Aggregate, Decoder, InsufficientMemoryError, Params, hash_candidates

    params = Params(k=8, h=2, m=4, p=0.25, q=0.75, f=0.5)
    cmap = hash_candidates([f"v{i}" for i in range(50)], params)
    agg = Aggregate(params=params, counts=np.column_stack([np.full(4, 1000), np.full((4, 8), 400)]))
    design = cmap.matrix.data.nbytes + cmap.matrix.indices.nbytes + cmap.matrix.indptr.nbytes
    needed = memory.decode_bytes(design, 32, 50, dense_columns=50)
    assert needed >= 2 * design + 8 * 50**2
    estimated: list[bool] = []
    real = decoder_module.estimate
    monkeypatch.setattr(decoder_module, "estimate", lambda *a: estimated.append(True) or real(*a))
    Decoder().decode(agg, cmap)  # fits: decoded
    assert estimated == [True]
    monkeypatch.setattr(memory, "CHECK_ABOVE", 0)  # every estimate is checked
    monkeypatch.setenv(memory.ENV_VAR, str(needed - 1))
    with pytest.raises(InsufficientMemoryError, match="decoding 50 candidates .* needs about"):
        Decoder().decode(agg, cmap)
    assert estimated == [True]  # refused before estimating
    monkeypatch.setenv(memory.ENV_VAR, str(needed))
    Decoder().decode(agg, cmap)


_SIMULATIONS = [["simulate"], ["simulate", "--method", "client"], ["simulate", "--discover"], ["simulate-assoc"]]
_SIMULATION_IDS = ["simulate", "simulate-client", "simulate-discover", "simulate-assoc"]


@pytest.mark.parametrize("clients", ["100", "10000000000"], ids=["huge-params", "huge-clients"])
@pytest.mark.parametrize("argv", _SIMULATIONS, ids=_SIMULATION_IDS)
def test_huge_params_simulations_clear_error(tmp_path: Path, argv: list[str], clients: str) -> None:
    """k = m = 65,536 in a two-line params file: the simulated (m, k) tables need 192 GiB;
    10**10 clients need terabytes of per-client arrays.  ``simulate --discover`` drew the
    tables, and every simulation the clients, unchecked (a numpy MemoryError, "out of
    memory in 'rappor simulate'", or with overcommit the kernel's OOM killer); each command
    now says how much it needs.  Run with 2 GiB of address space, so a regression cannot
    take the machine."""
    import subprocess
    import sys

    big = clients == "100"
    (tmp_path / "p.csv").write_text("k,h,m,p,q,f\n" + ("65536,2,65536" if big else "16,2,64") + ",0.5,0.75,0.5\n")
    cap = 2 << 30

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))

    env = {key: value for key, value in os.environ.items() if key != memory.ENV_VAR}
    run = subprocess.run([sys.executable, "-m", "rappor", *argv, "--params", str(tmp_path / "p.csv"), "--clients",
                          clients, "--out", str(tmp_path / "out"), "--no-report"],
                         capture_output=True, text=True, timeout=300, preexec_fn=limit, env=env)
    assert run.returncode == 1, run.stderr
    assert run.stderr.startswith("rappor: error: ") and "needs about" in run.stderr, run.stderr


def test_huge_params_boolean_association_clear_error(tmp_path: Path) -> None:
    """decode-assoc of two booleans with m = 2**32 in a two-line params file: the booleans'
    map was a Python list of the m rows, grown without a check (about 150 GB: a
    MemoryError, or the OOM killer).  Now estimated first and refused with the amount.
    Run with 2 GiB of address space, so a regression cannot take the machine."""
    import subprocess
    import sys

    (tmp_path / "p.csv").write_text("k,h,m,p,q,f\n16,2,4294967296,0.5,0.75,0.5\n")
    (tmp_path / "r.csv").write_text("client,cohort,a,b\nc1,5,1,0\nc2,7,0,1\n")
    cap = 2 << 30

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))

    env = {key: value for key, value in os.environ.items() if key != memory.ENV_VAR}
    run = subprocess.run([sys.executable, "-m", "rappor", "decode-assoc", "--params", str(tmp_path / "p.csv"),
                          "--reports", str(tmp_path / "r.csv"), "--var1", "a", "--bool1", "--var2", "b", "--bool2"],
                         capture_output=True, text=True, timeout=300, preexec_fn=limit, env=env)
    assert run.returncode == 1, run.stderr
    assert run.stderr.startswith("rappor: error: the candidate map of 2 candidates") and "needs about" in run.stderr


@pytest.mark.parametrize("argv", [["simulate", "--unique", "1000000000"], ["simulate", "--decoys", "1000000000"],
                                  ["simulate", "--discover", "--unique", "1000000000"],
                                  ["simulate-assoc", "--unique", "1000000000"],
                                  ["simulate-assoc", "--pair", "string-string", "--unique", "100000", "--unique2",
                                   "100000"]],
                         ids=["unique", "decoys", "discover-unique", "assoc-unique", "assoc-joint"])
def test_huge_populations_clear_error(tmp_path: Path, argv: list[str]) -> None:
    """10**9 distinct values (or decoys, or a 10**5 x 10**5 joint table) grew Python lists and
    arrays without a check (a MemoryError, or the OOM killer); now refused with the amount.
    Run with 2 GiB of address space, so a regression cannot take the machine."""
    import subprocess
    import sys

    cap = 2 << 30

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))

    env = {key: value for key, value in os.environ.items() if key != memory.ENV_VAR}
    run = subprocess.run([sys.executable, "-m", "rappor", *argv, "--clients", "100", "--out", str(tmp_path / "out"),
                          "--no-report"], capture_output=True, text=True, timeout=120, preexec_fn=limit, env=env)
    assert run.returncode == 1, run.stderr
    assert run.stderr.startswith("rappor: error: ") and "needs about" in run.stderr, run.stderr


def test_hash_candidates_memory_message_counts_the_whole_list(tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    """100 candidates hashed a block at a time: the message said "the candidate map of 1 candidates"."""
    from rappor.cli import main

    (tmp_path / "p.csv").write_text("k,h,m,p,q,f\n16,2,4294967296,0.5,0.75,0.5\n")
    (tmp_path / "c.txt").write_text("".join(f"c{i}\n" for i in range(100)))
    assert main(["hash-candidates", "--params", str(tmp_path / "p.csv"), str(tmp_path / "c.txt"), "-o",
                 str(tmp_path / "map.csv")]) == 1
    assert "the candidate map of 1 candidate at a time (of 100) x m = 4294967296" in capsys.readouterr().err
    assert not (tmp_path / "map.csv").exists()
