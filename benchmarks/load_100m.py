"""Load benchmark (issue 8): aggregate 100 million reports from one Parquet file.

Usage::

    python benchmarks/load_100m.py [--reports 100000000] [--k 128] [--m 128] [--dir DIR] [--keep]

Three steps, each in its own process:

1. **generate** writes the columnar file chunk by chunk (never all reports in memory)
   of uniformly random reports and computes the expected counts *independently of
   rappor's counting code*, from the definition of the layout, one bit at a time
   (``bincount`` of the cohorts of the reports whose bit ``j`` is set);
2. **aggregate** runs :func:`rappor.formats.aggregate_parquet` and reports seconds,
   reports/s and its peak resident memory (``ru_maxrss``);
3. the driver checks the counts equal the expected ones exactly and that the peak
   memory is under 1 GB, and exits 1 otherwise.

This is a benchmark, not a CI test: at the defaults it writes about 1.7 GB to a
temporary directory (removed afterwards unless ``--keep``).
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

CHUNK = 1 << 20
LIMIT_MB = 1024


def _params(k: int, m: int):  # type: ignore[no-untyped-def]
    from rappor import Params

    return Params(num_bloombits=k, num_hashes=2, num_cohorts=m, prob_p=0.5, prob_q=0.75, prob_f=0.5)


def generate(path: Path, n: int, k: int, m: int) -> None:
    """Write ``n`` reports to ``path`` and their exact counts to ``path.expected.npy``."""
    from rappor import ReportBatch
    from rappor.formats import ParquetReportWriter

    params = _params(k, m)
    w = params.num_words
    rng = np.random.default_rng(2024)
    expected = np.zeros((m, k + 1), dtype=np.int64)
    start = time.perf_counter()
    with ParquetReportWriter(path, params) as writer:
        for first in range(0, n, CHUNK):
            size = min(CHUNK, n - first)
            cohorts = rng.integers(0, m, size)
            words = rng.integers(0, 2**64, (size, w), dtype=np.uint64, endpoint=False)
            if k % 64:
                words[:, -1] &= np.uint64((1 << (k % 64)) - 1)
            # Expected counts by definition (bit j is (w[j // 64] >> (j % 64)) & 1), one bit at a time.
            expected[:, 0] += np.bincount(cohorts, minlength=m)
            for j in range(k):
                bit = ((words[:, j // 64] >> np.uint64(j % 64)) & np.uint64(1)).astype(bool)
                expected[:, 1 + j] += np.bincount(cohorts[bit], minlength=m)
            writer.write(ReportBatch(params=params, cohorts=cohorts, words=words))
    np.save(f"{path}.expected.npy", expected)
    print(f"generated {n:,} reports in {time.perf_counter() - start:.1f} s: "
          f"{path.stat().st_size / 1e9:.2f} GB", flush=True)


def aggregate(path: Path, k: int, m: int) -> None:
    """Aggregate the file and print a JSON line with the time and peak memory."""
    from rappor.formats import aggregate_parquet

    params = _params(k, m)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    start, cpu = time.perf_counter(), time.process_time()
    agg = aggregate_parquet(path, params)
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    np.save(f"{path}.counts.npy", agg.counts)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print("RESULT " + json.dumps({"seconds": seconds, "cpu_seconds": cpu, "peak_rss_mb": peak, "baseline_rss_mb": before,
                                  "reports": agg.total_reports}), flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reports", type=int, default=100_000_000)
    parser.add_argument("--k", type=int, default=128)
    parser.add_argument("--m", type=int, default=128)
    parser.add_argument("--dir", type=Path, default=None, help="where to write the file [default: a temp dir]")
    parser.add_argument("--keep", action="store_true", help="keep the generated file")
    parser.add_argument("--step", choices=("generate", "aggregate"), help=argparse.SUPPRESS)
    parser.add_argument("--path", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.step == "generate":
        generate(args.path, args.reports, args.k, args.m)
        return 0
    if args.step == "aggregate":
        aggregate(args.path, args.k, args.m)
        return 0

    work = Path(tempfile.mkdtemp(prefix="rappor-load-", dir=args.dir))
    path = work / "reports.parquet"
    common = ["--reports", str(args.reports), "--k", str(args.k), "--m", str(args.m), "--path", str(path)]
    me = [sys.executable, str(Path(__file__).resolve())]
    try:
        subprocess.run([*me, "--step", "generate", *common], check=True)
        proc = subprocess.run([*me, "--step", "aggregate", *common], check=True, capture_output=True, text=True)
        result = json.loads(next(line for line in proc.stdout.splitlines() if line.startswith("RESULT "))[7:])
        expected = np.load(f"{path}.expected.npy")
        counts = np.load(f"{path}.counts.npy")
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    exact = bool(np.array_equal(counts, expected))
    rate = result["reports"] / result["seconds"]
    print(f"aggregated {result['reports']:,} reports (k={args.k}, m={args.m}) in {result['seconds']:.1f} s "
          f"({result['cpu_seconds']:.1f} CPU s, all threads): {rate:,.0f} reports/s; peak RSS {result['peak_rss_mb']:.0f} MB "
          f"(after imports {result['baseline_rss_mb']:.0f} MB, limit {LIMIT_MB} MB); "
          f"counts {'exactly as expected' if exact else 'WRONG'}")
    if args.keep:
        print(f"kept {path}")
    return 0 if exact and result["peak_rss_mb"] < LIMIT_MB and result["reports"] == args.reports else 1


if __name__ == "__main__":
    raise SystemExit(main())
