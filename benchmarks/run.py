"""The speed-and-scale benchmark suite (issue 7): every target figure, one table.

Usage::

    python benchmarks/run.py                 # every case at the default sizes (a few minutes)
    python benchmarks/run.py --scale 0.1     # ten times smaller sizes (smoke run)
    python benchmarks/run.py --only aggregate-parquet decode-10k
    python benchmarks/run.py --list
    python benchmarks/run.py --only decode-10k --shares detected   # the decode without every candidate's share

Each case runs in its own subprocess (its input is prepared by another subprocess
first), so the peak resident memory it reports (``ru_maxrss``) is that of the measured
work alone: Python, numpy and the libraries it imports included, input generation
excluded.  Rates are per second of wall time on one core unless the case says
otherwise (encode-client runs ``rappor encode`` with its default ``--jobs``, every core;
Dask and Spark use the machine's cores; their JVM or worker processes are not in the
peak-memory column).  The decode cases time hashing the candidates and decoding
together; their note splits the two.  Where an obvious numpy implementation exists, it is
timed on a smaller input and shown as a ratio ("x naive").  Beside the wall seconds (the
best of the repeats) the "cpu s" column gives the CPU seconds of that run (user + system,
the process and its children): on a shared machine wall time depends on the other jobs,
CPU time much less, so quote both, or run on a quiet machine; no test asserts on timings.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent


@dataclass(frozen=True)
class Case:
    """One benchmark: what it measures, its target, how to prepare its input and run it."""

    name: str
    what: str
    target: str
    size: int  # items at --scale 1
    run: Callable[[Path, int], dict[str, Any]]
    prepare: Callable[[Path, int], None] | None = None
    on_request: bool = False  # long or memory-hungry: runs only when named in --only


def _params(k: int, m: int, h: int = 2, p: float = 0.5, q: float = 0.75, f: float = 0.5) -> Any:
    from rappor import Params

    return Params(num_bloombits=k, num_hashes=h, num_cohorts=m, prob_p=p, prob_q=q, prob_f=f)


#: CPU seconds (user + system, this process and its finished children) of the best run of the measured call (the first
#: :func:`_best` of a case; the naive baselines after it are not recorded): unlike wall time
#: it hardly depends on what else the machine runs.
_CPU: dict[str, float] = {}


def _cpu_now() -> float:
    """User + system seconds of this process (all threads) and of its finished child processes."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def _best(fn: Callable[[], Any], repeat: int = 2) -> tuple[float, Any]:
    """The wall seconds of the fastest of ``repeat`` calls and what *that* call returned (its CPU seconds in _CPU)."""
    best, best_cpu, best_out = float("inf"), float("nan"), None
    for _ in range(repeat):
        start, cpu = time.perf_counter(), _cpu_now()
        out = fn()
        wall = time.perf_counter() - start
        if wall < best:
            best, best_cpu, best_out = wall, _cpu_now() - cpu, out
    _CPU.setdefault("seconds", best_cpu)
    return best, best_out


# ---------------------------------------------------------------------------- encoding


def _simulate_reports(k: int) -> Callable[[Path, int], dict[str, Any]]:
    def run(work: Path, n: int) -> dict[str, Any]:
        from simulate_reports import naive  # benchmarks/simulate_reports.py

        from rappor.simulation import Population, simulate_reports

        params = _params(k, 64)
        rng = np.random.default_rng(0)
        pop = Population.zipf(1000)
        values, cohorts = pop.sample(n, rng=rng), rng.integers(0, 64, n)
        seconds, batch = _best(lambda: simulate_reports(params, pop.strings, values, cohorts, rng=rng))
        assert len(batch) == n
        m = min(n, 300_000)
        bloom = rng.integers(0, 2, (m, k), dtype=np.uint8)
        naive_seconds, _ = _best(lambda: naive(params, bloom, rng), 1)
        return {"items": n, "seconds": seconds, "naive_rate": m / naive_seconds}

    return run


def _prepare_client(work: Path, n: int) -> None:
    subprocess.run([sys.executable, "-m", "rappor", "keygen", "-o", str(work / "key")], check=True)
    with (work / "input.csv").open("w") as fh:
        fh.write("client,value\n")
        fh.writelines(f"client-{i:08d},https://example.com/page/{(i * 7919) % 1000}\n" for i in range(n))
    (work / "params.csv").write_text("k,h,m,p,q,f\n32,2,64,0.5,0.75,0.5\n")


def _run_client(work: Path, n: int) -> dict[str, Any]:
    cmd = [sys.executable, "-m", "rappor", "encode", "--params", str(work / "params.csv"),
           "--key-file", str(work / "key"), str(work / "input.csv"), "-o", str(work / "reports.csv")]
    seconds, _ = _best(lambda: subprocess.run(cmd, check=True), 2)
    # The encoder ran in child processes (all its workers): its CPU time (_best) and peak memory are theirs.
    return {"items": n, "seconds": seconds,
            "peak_rss_mb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024}


# ------------------------------------------------------------------------- aggregation


def _write_parquet(path: Path, n: int, k: int, m: int, layout: str = "words", seed: int = 0) -> None:
    from rappor import ReportBatch
    from rappor.formats import ParquetReportWriter

    params = _params(k, m)
    rng = np.random.default_rng(seed)
    w = params.num_words
    high = np.uint64((1 << (k % 64)) - 1) if k % 64 else np.uint64(2**64 - 1)
    with ParquetReportWriter(path, params, layout=layout) as writer:
        for start in range(0, n, 1 << 20):
            size = min(1 << 20, n - start)
            words = rng.integers(0, 2**64, (size, w), dtype=np.uint64, endpoint=False)
            words[:, -1] &= high
            writer.write(ReportBatch(params=params, cohorts=rng.integers(0, m, size), words=words))


def _naive_aggregate(params: Any, cohorts: np.ndarray, bits: np.ndarray) -> np.ndarray:
    """The obvious numpy code: unpacked bits scattered with np.add.at."""
    counts = np.zeros((params.num_cohorts, params.num_bloombits + 1), dtype=np.int64)
    np.add.at(counts[:, 0], cohorts, 1)
    np.add.at(counts[:, 1:], cohorts, bits)
    return counts


def _aggregate_parquet(layout: str) -> tuple[Callable[[Path, int], None], Callable[[Path, int], dict[str, Any]]]:
    def prepare(work: Path, n: int) -> None:
        _write_parquet(work / "reports.parquet", n, 128, 128, layout)

    def run(work: Path, n: int) -> dict[str, Any]:
        from rappor.formats import aggregate_parquet, read_parquet_reports

        params = _params(128, 128)
        seconds, agg = _best(lambda: aggregate_parquet(work / "reports.parquet", params))
        assert agg.total_reports == n
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        # Naive: the first 100,000 reports, unpacked and scattered with np.add.at.
        small = read_parquet_reports(work / "reports.parquet", params)
        sub = slice(0, min(n, 100_000))
        bits, cohorts = small.bits()[sub], small.cohorts[sub]
        naive_seconds, _ = _best(lambda: _naive_aggregate(params, cohorts, bits), 1)
        return {"items": n, "seconds": seconds, "peak_rss_mb": rss, "naive_rate": bits.shape[0] / naive_seconds}

    return prepare, run


def _prepare_csv(work: Path, n: int, quoted: bool = False) -> None:
    from rappor import ReportBatch
    from rappor.formats import write_reports

    params = _params(32, 64)
    rng = np.random.default_rng(1)
    batch = ReportBatch(params=params, cohorts=rng.integers(0, 64, n),
                        words=rng.integers(0, 2**32, (n, 1), dtype=np.uint64))
    # Quoted: every client id holds a comma, so every row goes through the csv module.
    write_reports(work / "reports.csv", batch, client_ids=[f"c,{i}" for i in range(n)] if quoted else None)


def _prepare_csv_quoted(work: Path, n: int) -> None:
    _prepare_csv(work, n, quoted=True)


def _naive_csv(path: Path, params: Any, limit: int) -> int:
    """The obvious code: the csv module, one numpy add per row."""
    import csv

    counts = np.zeros((params.num_cohorts, params.num_bloombits + 1), dtype=np.int64)
    with path.open(newline="") as fh:
        reader = csv.reader(fh)
        next(reader)
        for i, row in enumerate(reader):
            if i == limit:
                return i
            c = int(row[1])
            counts[c, 0] += 1
            counts[c, 1:] += np.frombuffer(row[-1][::-1].encode(), dtype=np.uint8) - 48
    return limit


def _run_csv(work: Path, n: int) -> dict[str, Any]:
    from rappor.engines import aggregate_files

    params = _params(32, 64)
    seconds, agg = _best(lambda: aggregate_files([work / "reports.csv"], params))
    assert agg.total_reports == n
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    limit = min(n, 100_000)
    naive_seconds, rows = _best(lambda: _naive_csv(work / "reports.csv", params, limit), 1)
    return {"items": n, "seconds": seconds, "peak_rss_mb": rss, "naive_rate": rows / naive_seconds, "unit": "lines"}


# ---------------------------------------------------------------------------- decoding


def _run_hashing(work: Path, n: int) -> dict[str, Any]:
    import mmh3

    from rappor.client import bloom_bits_table

    params = _params(128, 128)
    values = [f"https://example.com/candidate/{i}" for i in range(n)]
    seconds, table = _best(lambda: bloom_bits_table(values, params), 1)
    assert table.shape == (n, 128, 2)
    # Naive: one mmh3 call per (value, cohort), the previous implementation.
    small = [b"\x00\x00\x00\x00" + v.encode() for v in values[:2000]]
    naive_seconds, _ = _best(lambda: [[mmh3.mmh3_x64_128_utupledigest(key, c) for c in range(128)] for key in small], 1)
    return {"items": n, "seconds": seconds, "naive_rate": len(small) / naive_seconds, "unit": "candidates"}


def _decode(k: int, m: int, h: int = 2, present: bool = False) -> Callable[[Path, int], dict[str, Any]]:
    """Hash and decode ``n`` candidates: 100 Zipf strings and decoys, or (``present``) ``n`` strings all reported
    (uniform: every candidate in the data, the costliest fit)."""
    def run(work: Path, n: int) -> dict[str, Any]:
        sys.path.insert(0, str(HERE))
        from _scenario import zipf_scenario

        from rappor import Decoder, hash_candidates

        params = _params(k, m, h)
        if present:
            scenario = zipf_scenario(params, n_reports=1_000_000, n_values=n, rng=0, exponent=0.0)
        else:
            scenario = zipf_scenario(params, n_reports=1_000_000, n_values=100, rng=0)
        candidates = list(scenario.values) + [f"decoy{i}" for i in range(n - len(scenario.values))]
        # Warm the one-time imports of the SciPy modules a decode uses (it imports neither
        # scipy.stats nor scikit-learn), so the figure is the decode itself, as in a
        # long-running analysis process.
        import scipy.linalg  # noqa: F401
        import scipy.sparse.linalg  # noqa: F401
        import scipy.special  # noqa: F401

        start, cpu = time.perf_counter(), _cpu_now()
        cmap = hash_candidates(candidates, params)
        hashed = time.perf_counter() - start
        result = Decoder(rng=0, shares=os.environ.get("RAPPOR_BENCH_SHARES", "all")).decode(  # type: ignore[arg-type]
            scenario.aggregate, cmap)
        seconds = time.perf_counter() - start
        _CPU["seconds"] = _cpu_now() - cpu
        # `seconds` is the whole job, hashing included: the note splits it.
        return {"items": n, "seconds": seconds, "unit": "candidates",
                "note": f"of which hash {hashed:.1f} s + decode {seconds - hashed:.1f} s; "
                        f"{int(np.sum(result.detected))} detected"}

    return run


def _prepare_decode_cli(k: int, m: int, google_map: bool = False) -> Callable[[Path, int], None]:
    """Inputs of ``rappor decode``: a candidate list, or (``google_map``) google/rappor's MD5 ``map.csv`` of it."""
    def prepare(work: Path, n: int) -> None:
        sys.path.insert(0, str(HERE))
        from _scenario import zipf_scenario

        from rappor.collect import hash_candidates_google
        from rappor.formats import write_candidates, write_counts, write_map, write_params

        params = _params(k, m)
        scenario = zipf_scenario(params, n_reports=1_000_000, n_values=100, rng=0)
        write_params(params, work / "params.csv")
        write_counts(scenario.aggregate, work / "counts.csv")
        candidates = list(scenario.values) + [f"decoy{i}" for i in range(n - len(scenario.values))]
        if google_map:
            write_map(hash_candidates_google(candidates, params), work / "map.csv")
        else:
            write_candidates(candidates, work / "candidates.txt")

    return prepare


def _run_decode_cli(work: Path, n: int) -> dict[str, Any]:
    """``rappor decode`` as a user runs it: a new process that hashes the list, decodes, writes results.csv."""
    source = ["--map", str(work / "map.csv")] if (work / "map.csv").exists() else [
        "--candidates", str(work / "candidates.txt")]
    cmd = [sys.executable, "-m", "rappor", "decode", "--params", str(work / "params.csv"), "--counts",
           str(work / "counts.csv"), *source, "-o", str(work / "results.csv"),
           "--summary", str(work / "summary.json"), "--shares", os.environ.get("RAPPOR_BENCH_SHARES", "all")]

    def decode_once() -> float:
        subprocess.run(cmd, check=True, stderr=subprocess.DEVNULL)
        inner: float = json.loads((work / "summary.json").read_text())["seconds"]
        return inner

    seconds, inside = _best(decode_once, 3)  # the inner time of the same (fastest) run
    imports, _ = _best(lambda: subprocess.run([sys.executable, "-c", "import rappor"], check=True), 3)
    return {"items": n, "seconds": seconds, "unit": "candidates",
            "peak_rss_mb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024,
            "note": f"whole process; Decoder.decode {inside:.2f} s of it (SciPy imports included), "
                    f"python -c 'import rappor' {imports:.2f} s"}


# --------------------------------------------------------------------------------- maps


def _map_candidates(n: int) -> list[str]:
    return [f"https://example.com/candidate/{i}" for i in range(n)]


def _prepare_map(work: Path, n: int) -> None:
    from rappor import hash_candidates
    from rappor.formats import write_map

    write_map(hash_candidates(_map_candidates(n), _params(128, 128)), work / "map.csv")


def _run_map_read(work: Path, n: int) -> dict[str, Any]:
    from rappor.formats import read_map

    path = work / "map.csv"
    seconds, cmap = _best(lambda: read_map(path, _params(128, 128)), 1)
    assert len(cmap) == n
    return {"items": n, "seconds": seconds, "unit": "candidates",
            "note": f"{path.stat().st_size / 1e6:.0f} MB map.csv"}


def _run_map_write(work: Path, n: int) -> dict[str, Any]:
    from rappor import hash_candidates
    from rappor.formats import write_map

    cmap = hash_candidates(_map_candidates(n), _params(128, 128))
    seconds, _ = _best(lambda: write_map(cmap, work / "map.csv"), 1)
    return {"items": n, "seconds": seconds, "unit": "candidates"}


def _map_write_wide(k: int, h: int, m: int) -> Callable[[Path, int], dict[str, Any]]:
    def run(work: Path, n: int) -> dict[str, Any]:
        from rappor import hash_candidates
        from rappor.formats import write_map

        cmap = hash_candidates(_map_candidates(n), _params(k, m, h))
        seconds, _ = _best(lambda: write_map(cmap, work / "map.csv"), 1)
        return {"items": n, "seconds": seconds, "unit": "candidates",
                "note": f"{(work / 'map.csv').stat().st_size / 1e6:.1f} MB map.csv"}

    return run


# ----------------------------------------------------------------------------- engines


def _prepare_engines(work: Path, n: int) -> None:
    _write_parquet(work / "reports.parquet", n, 128, 128)


def _engine(kind: str) -> Callable[[Path, int], dict[str, Any]]:
    def run(work: Path, n: int) -> dict[str, Any]:
        from rappor.engines import aggregate_files
        from rappor.formats import aggregate_parquet

        params = _params(128, 128)
        path = work / "reports.parquet"
        start = time.perf_counter()
        options: dict[str, Any] = {}
        closer: Callable[[], Any] = lambda: None  # noqa: E731
        if kind == "dask-threads":
            options = {"engine": "dask", "scheduler": "threads"}
        elif kind == "dask-localcluster":
            from distributed import Client, LocalCluster

            cluster = LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=None)
            client = Client(cluster)
            options = {"engine": "dask", "client": client}
            closer = lambda: (client.close(), cluster.close())  # noqa: E731
        elif kind == "spark-local":
            from pyspark.sql import SparkSession

            os.environ["PYSPARK_PYTHON"] = sys.executable
            spark = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
                     .config("spark.sql.execution.arrow.maxRecordsPerBatch", str(1 << 19))
                     .config("spark.sql.shuffle.partitions", "2").getOrCreate())
            spark.sparkContext.setLogLevel("ERROR")
            options = {"engine": "spark", "spark": spark}
            closer = spark.stop
        startup = time.perf_counter() - start
        try:
            seconds, agg = _best(lambda: aggregate_files([path], params, **options))
        finally:
            closer()
        expected = aggregate_parquet(path, params)
        assert np.array_equal(agg.counts, expected.counts), "engine counts differ from the embedded path"
        return {"items": n, "seconds": seconds, "note": f"start-up {startup:.1f} s; counts identical"}

    return run


def _cases() -> list[Case]:
    agg_words = _aggregate_parquet("words")
    agg_bits = _aggregate_parquet("bits")
    return [
        Case("simulate-reports-k32", "simulation.simulate_reports, k=32 m=64", ">= 3,000,000 reports/s", 4_000_000,
             _simulate_reports(32)),
        Case("simulate-reports-k128", "simulation.simulate_reports, k=128 m=64", ">= 1,000,000 reports/s", 2_000_000,
             _simulate_reports(128)),
        Case("encode-client", "rappor encode (CSV in/out, keyed PRR, CSPRNG), k=32, --jobs default: every core "
             "(one core: benchmarks/encode_client.py --jobs 1)", ">= 100,000 reports/s",
             300_000, _run_client, _prepare_client),
        Case("aggregate-parquet", "aggregate_parquet, w0..w1 int64, k=128 m=128", ">= 10,000,000 reports/s",
             10_000_000, agg_words[1], agg_words[0]),
        Case("aggregate-parquet-bits", "aggregate_parquet, bits binary(16), k=128 m=128",
             ">= 10,000,000 reports/s", 10_000_000, agg_bits[1], agg_bits[0]),
        Case("aggregate-csv", "CSV -> Aggregate (iter_reports), k=32 m=64", ">= 1,000,000 lines/s", 3_000_000,
             _run_csv, _prepare_csv),
        Case("aggregate-csv-quoted", "CSV -> Aggregate, every client id quoted (csv module path)",
             "(slow path)", 1_000_000, _run_csv, _prepare_csv_quoted),
        Case("hash-candidates", "bloom_bits_table, 128 cohorts, h=2", "part of decode-100k", 100_000, _run_hashing),
        Case("decode-10k", "hash + Decoder.decode, k=16 m=64 h=2", "< 0.5 s", 10_000, _decode(16, 64)),
        Case("decode-10k-k128", "hash + Decoder.decode, k=128 m=128 h=2 (joint fit, no screening)", "< 10 s",
             10_000, _decode(128, 128)),
        Case("decode-100k", "hash + Decoder.decode, k=128 m=128 h=2", "< 60 s, < 4 GB", 100_000, _decode(128, 128)),
        Case("decode-plan-10k", "hash + Decoder.decode, k=256 h=1 m=256 (rappor plan's design for 10,000 "
             "candidates), 100 real + 9,900 decoys", "< 10 s CPU, < 1 GB", 10_000, _decode(256, 256, h=1)),
        Case("decode-plan-10k-present", "as decode-plan-10k, every candidate reported (uniform over 10,000)",
             "< 10 s CPU, < 1 GB", 10_000, _decode(256, 256, h=1, present=True)),
        Case("decode-cli-10k", "rappor decode --candidates, k=16 m=64 (new process)", "< 1 s CPU", 10_000,
             _run_decode_cli, _prepare_decode_cli(16, 64)),
        Case("decode-cli-map-10k", "rappor decode --map (google/rappor's MD5 map.csv), k=16 m=64 (new process)",
             "< 1 s CPU", 10_000, _run_decode_cli, _prepare_decode_cli(16, 64, google_map=True)),
        Case("decode-cli-10k-k128", "rappor decode --candidates, k=128 m=128 (new process)", "-", 10_000,
             _run_decode_cli, _prepare_decode_cli(128, 128)),
        Case("decode-1m", "hash + Decoder.decode, k=16 m=64 h=2, 1M reports", "< 15 s, < 3 GB (google/rappor: no)",
             1_000_000, _decode(16, 64), on_request=True),
        Case("map-write", "write_map, k=128 m=128 h=2", "~2.6 s / 100k (docs/collection.md)", 100_000,
             _run_map_write),
        Case("map-read", "read_map, k=128 m=128 h=2", "~3.4 s / 100k (docs/collection.md)", 100_000,
             _run_map_read, _prepare_map),
        Case("map-write-wide-k", "write_map, one candidate, k=2**20 m=64 h=2", "memory of the output, not m*k",
             1, _map_write_wide(2**20, 2, 64), on_request=True),
        Case("map-write-wide-h", "write_map, one candidate, k=h=10**6 m=1", "time of the output, not m*k",
             1, _map_write_wide(10**6, 10**6, 1), on_request=True),
        Case("engine-numpy", "aggregate_files engine=numpy, k=128", "~1 s / 10M (issue)", 10_000_000,
             _engine("numpy"), _prepare_engines),
        Case("engine-dask-threads", "engine=dask, local threads, 2 cores", "~0.9 s / 10M (issue)", 10_000_000,
             _engine("dask-threads"), _prepare_engines),
        Case("engine-dask-localcluster", "engine=dask, LocalCluster 2 workers", "1-1.5 s + 2 s start (issue)",
             10_000_000, _engine("dask-localcluster"), _prepare_engines),
        Case("engine-spark-local", "engine=spark, local[2], mapInArrow", "5-10 s + 8-10 s start (issue)",
             10_000_000, _engine("spark-local"), _prepare_engines),
    ]


# ------------------------------------------------------------------------------ driver


def _child(name: str, work: Path, size: int, prepare: bool) -> None:
    sys.path.insert(0, str(HERE))
    case = next(c for c in _cases() if c.name == name)
    if prepare:
        if case.prepare is not None:
            case.prepare(work, size)
        return
    baseline = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    _CPU.clear()
    out = case.run(work, size)
    out.setdefault("peak_rss_mb", resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
    if "seconds" in _CPU:
        out.setdefault("cpu_seconds", _CPU["seconds"])
    out["baseline_rss_mb"] = baseline
    print("RESULT " + json.dumps(out))


def _run_case(case: Case, scale: float, python: str) -> dict[str, Any]:
    size = max(min(1000, case.size), int(case.size * scale))
    work = Path(tempfile.mkdtemp(prefix=f"rappor-bench-{case.name}-"))
    env = {**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    base = [python, str(Path(__file__).resolve()), "--child", case.name, "--work", str(work), "--size", str(size)]
    try:
        subprocess.run([*base, "--prepare"], check=True, env=env)
        proc = subprocess.run(base, capture_output=True, text=True, env=env)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    if proc.returncode or not lines:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
        return {"error": " | ".join(tail)[:200], "items": size}
    return json.loads(lines[-1][len("RESULT "):])


def _row(case: Case, res: dict[str, Any]) -> str:
    if "error" in res:
        return f"{case.name:<26} {'failed: ' + res['error']}"
    rate = res["items"] / res["seconds"]
    naive = f"{rate / res['naive_rate']:,.0f}x" if res.get("naive_rate") else "-"
    unit = res.get("unit", "reports")
    cpu = f"{res['cpu_seconds']:8.2f}" if res.get("cpu_seconds") is not None else f"{'-':>8}"
    return (f"{case.name:<26} {res['items']:>11,} {res['seconds']:>8.2f} {cpu} {rate:>13,.0f} {unit:<10} "
            f"{res['peak_rss_mb']:>8,.0f} {naive:>8}  {case.target}"
            + (f"  [{res['note']}]" if res.get("note") else ""))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=1.0, help="multiply every size by this [default: 1]")
    parser.add_argument("--only", nargs="+", metavar="CASE", help="run only these cases")
    parser.add_argument("--list", action="store_true", help="list the cases and exit")
    parser.add_argument("--json", metavar="PATH", help="also write the raw results as JSON")
    parser.add_argument("--shares", choices=("all", "detected"), default="all",
                        help="the decode cases' Decoder(shares=...) [default: all]")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--work", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--size", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--prepare", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        _child(args.child, args.work, args.size, args.prepare)
        return
    os.environ["RAPPOR_BENCH_SHARES"] = args.shares  # read by the decode cases' subprocesses
    cases = _cases()
    if args.list:
        for case in cases:
            print(f"{case.name:<26} {case.what}  (target {case.target})" + ("  [--only]" if case.on_request else ""))
        return
    if args.only:
        unknown = set(args.only) - {c.name for c in cases}
        if unknown:
            parser.error(f"unknown cases: {', '.join(sorted(unknown))}")
        cases = [c for c in cases if c.name in args.only]
    else:
        cases = [c for c in cases if not c.on_request]
    print(f"{'case':<26} {'items':>11} {'seconds':>8} {'cpu s':>8} {'items/s':>13} {'unit':<10} {'peak MB':>8} "
          f"{'x naive':>8}  target")
    results = {}
    for case in cases:
        res = _run_case(case, args.scale, sys.executable)
        results[case.name] = res
        print(_row(case, res), flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
