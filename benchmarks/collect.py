"""Throughput of the collection side: reports CSV parsing and aggregation.

Run: ``python benchmarks/collect.py [--reports N]``.  Prints, for k = 16 and 32, the
lines per second of :func:`rappor.formats.read_reports` on our ``client,cohort,irr`` CSV and on
google/rappor's ``client,cohort,bloom,prr,irr`` CSV, and the reports per second of
:meth:`rappor.Aggregate.from_reports`, and of the two together as ``rappor sum-bits``
runs them (chunked).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np

from rappor import Aggregate, Params, ReportBatch
from rappor.formats import iter_reports, read_reports, write_reports


def _google_csv(batch: ReportBatch, path: Path) -> None:
    """Write google/rappor's 5-column layout (bloom and prr columns filled with the irr)."""
    strings = batch.bitstrings()
    with path.open("w") as fh:
        fh.write("client,cohort,bloom,prr,irr\n")
        fh.writelines(f"c{i},{c},{s},{s},{s}\n" for i, (c, s) in enumerate(zip(batch.cohorts.tolist(), strings)))


def _best(fn, repeat: int = 3) -> float:  # type: ignore[no-untyped-def]
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--reports", type=int, default=2_000_000)
    parser.add_argument("--cohorts", type=int, default=64)
    args = parser.parse_args()
    n, m = args.reports, args.cohorts
    rng = np.random.default_rng(0)
    print(f"{n:,} reports, m = {m}")
    for k in (16, 32):
        params = Params(num_bloombits=k, num_hashes=2, num_cohorts=m, prob_p=0.5, prob_q=0.75, prob_f=0.5)
        batch = ReportBatch.from_bits(params, rng.integers(0, m, size=n), rng.integers(0, 2, size=(n, k)))
        with tempfile.TemporaryDirectory() as tmp:
            ours, google = Path(tmp) / "ours.csv", Path(tmp) / "google.csv"
            write_reports(ours, batch)
            _google_csv(batch, google)
            for label, path in (("client,cohort,irr", ours), ("client,cohort,bloom,prr,irr", google)):
                seconds = _best(lambda p=path: read_reports(p, params))  # type: ignore[misc]
                mb = path.stat().st_size / 1e6
                print(f"k={k:2d} read_reports {label:28s} {n / seconds / 1e6:6.2f} M lines/s "
                      f"({mb / seconds:6.1f} MB/s)")
            seconds = _best(lambda: Aggregate.from_report_chunks(iter_reports(ours, params), params))
            print(f"k={k:2d} sum-bits path (iter_reports + aggregate) {n / seconds / 1e6:9.2f} M lines/s")
        seconds = _best(lambda: Aggregate.from_reports(batch))
        print(f"k={k:2d} Aggregate.from_reports {n / seconds / 1e6:21.1f} M reports/s")


if __name__ == "__main__":
    main()
