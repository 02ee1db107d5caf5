"""Throughput of ``rappor encode`` end to end (CSV in, CSV out), in reports per second.

Usage::

    python benchmarks/encode_client.py [--rows 200000] [--k 16 32 128] [--jobs 1 2] [--repeat 3]
    python benchmarks/encode_client.py --discovery [--rows 200000] [--jobs 1]

For each k it writes a params file (h=2, m=64, p=0.5, q=0.75, f=0.5), a key and an
input CSV of ``--rows`` distinct clients (values drawn from 1,000 strings) to a
temporary directory, then times ``python -m rappor encode`` as a subprocess (so the
time includes interpreter start-up, parsing and writing) for each ``--jobs`` value and
prints the best of ``--repeat`` runs: wall-clock reports/s, and reports per CPU-second
(user + system time of the command and its workers), which does not depend on how
busy the machine is.

``--discovery`` times ``rappor encode --discovery-params`` instead: discovery reports
of the planner's design (k=256, h=1, m=32 per slot, p=0, q=1, f for epsilon 4; max
length 30, 16 slots), one per row, from values of 5-30 bytes (half of them distinct).
"""

from __future__ import annotations

import argparse
import math
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
    parser.add_argument("--discovery", action="store_true", help="time discovery reports (--k is ignored)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        key = d / "key"
        subprocess.run([sys.executable, "-m", "rappor", "keygen", "-o", str(key)], check=True)
        inp = d / "input.csv"
        with inp.open("w") as fh:
            fh.write("client,value\n")
            if args.discovery:
                fh.writelines(f"client-{i:08d},{'www.site' if i % 2 else 'w'}{(i * 7919) % 100_000}.com/"
                              f"{'p' * (i % 13)}\n" for i in range(args.rows))
            else:
                fh.writelines(f"client-{i:08d},https://example.com/page/{(i * 7919) % 1000}\n"
                              for i in range(args.rows))
        for k in [256] if args.discovery else args.k:
            params = d / f"params{k}.csv"
            option = "--discovery-params" if args.discovery else "--params"
            if args.discovery:  # f = 2 / (1 + e^2): epsilon_inf = 4 with one hash
                params.write_text(f"k,h,m,p,q,f\n{k},1,32,0,1,{2 / (1 + math.exp(2.0))!r}\n")
            else:
                params.write_text(f"k,h,m,p,q,f\n{k},2,64,0.5,0.75,0.5\n")
            for jobs in args.jobs:
                best = best_cpu = float("inf")
                for _ in range(args.repeat):
                    before = resource.getrusage(resource.RUSAGE_CHILDREN)
                    start = time.perf_counter()
                    subprocess.run([sys.executable, "-m", "rappor", "encode", option, str(params), "--key-file",
                                    str(key), str(inp), "-o", str(d / "reports.csv"), "--jobs", str(jobs)], check=True)
                    best = min(best, time.perf_counter() - start)
                    after = resource.getrusage(resource.RUSAGE_CHILDREN)
                    best_cpu = min(best_cpu, after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
                print(f"{'discovery ' if args.discovery else ''}k={k:3d} jobs={jobs} rows={args.rows}: {args.rows / best:,.0f} reports/s wall "
                      f"({best:.2f} s), {args.rows / best_cpu:,.0f} reports per CPU-second (best of {args.repeat})")


if __name__ == "__main__":
    main()
