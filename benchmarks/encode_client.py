"""Throughput of ``rappor encode`` end to end (CSV in, CSV out), in reports per second.

Usage::

    python benchmarks/encode_client.py [--rows 200000] [--k 16 32 128] [--jobs 1 2] [--repeat 3]

For each k it writes a params file (h=2, m=64, p=0.5, q=0.75, f=0.5), a key and an
input CSV of ``--rows`` distinct clients (values drawn from 1,000 strings) to a
temporary directory, then times ``python -m rappor encode`` as a subprocess (so the
time includes interpreter start-up, parsing and writing) for each ``--jobs`` value and
prints the best of ``--repeat`` runs: wall-clock reports/s, and reports per CPU-second
(user + system time of the command and its workers), which does not depend on how
busy the machine is.
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--k", type=int, nargs="+", default=[16, 32, 128])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--jobs", type=int, nargs="+", default=[1, 2], help="values of rappor encode --jobs")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        key = d / "key"
        subprocess.run([sys.executable, "-m", "rappor", "keygen", "-o", str(key)], check=True)
        inp = d / "input.csv"
        with inp.open("w") as fh:
            fh.write("client,value\n")
            fh.writelines(f"client-{i:08d},https://example.com/page/{(i * 7919) % 1000}\n" for i in range(args.rows))
        for k in args.k:
            params = d / f"params{k}.csv"
            params.write_text(f"k,h,m,p,q,f\n{k},2,64,0.5,0.75,0.5\n")
            for jobs in args.jobs:
                best = best_cpu = float("inf")
                for _ in range(args.repeat):
                    before = resource.getrusage(resource.RUSAGE_CHILDREN)
                    start = time.perf_counter()
                    subprocess.run([sys.executable, "-m", "rappor", "encode", "--params", str(params), "--key-file",
                                    str(key), str(inp), "-o", str(d / "reports.csv"), "--jobs", str(jobs)], check=True)
                    best = min(best, time.perf_counter() - start)
                    after = resource.getrusage(resource.RUSAGE_CHILDREN)
                    best_cpu = min(best_cpu, after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
                print(f"k={k:3d} jobs={jobs} rows={args.rows}: {args.rows / best:,.0f} reports/s wall "
                      f"({best:.2f} s), {args.rows / best_cpu:,.0f} reports per CPU-second (best of {args.repeat})")


if __name__ == "__main__":
    main()
