"""Decode time of the default (every candidate's empirical-Bayes share) against ``shares="detected"``.

For collections of issue 14's scenario classes (``benchmarks/_classes.py``: 100 to 10,000
candidates), times ``Decoder().decode`` and ``Decoder(shares="detected").decode`` -- the
decoder before the shares -- and the shares' own part (the difference), as CPU seconds of
the process (user + system; BLAS limited to one thread) and wall seconds, the best of
``--repeat`` runs after one warm-up decode (first-use imports excluded).  CPU time varies far
less than wall time on a shared machine; quote the load with the figures.

Usage::

    python benchmarks/decode_speed.py [--classes issue4,decoys-1k] [--seed 0] [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import rappor  # noqa: E402
from _classes import CLASSES, collection  # noqa: E402

DEFAULT_CLASSES = "issue4,high-privacy,mixed-small,decoys-1k,decoys-10k,k128-5k"


def _time(decoder: rappor.Decoder, col: object, repeat: int) -> tuple[float, float]:
    """(best CPU seconds, best wall seconds) of ``repeat`` decodes."""
    cpu, wall = [], []
    for _ in range(repeat):
        c0, w0 = time.process_time(), time.perf_counter()
        decoder.decode(col.aggregate, col.candidate_map)  # type: ignore[attr-defined]
        cpu.append(time.process_time() - c0)
        wall.append(time.perf_counter() - w0)
    return min(cpu), min(wall)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--classes", default=DEFAULT_CLASSES, help=f"comma-separated [default: {DEFAULT_CLASSES}]")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover - optional
        pass
    else:
        threadpool_limits(1, user_api="blas")
    warnings.simplefilter("ignore")
    print(f"load average at start: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    print(f"{'class':<14} {'candidates':>10} {'detected: cpu s':>15} {'default: cpu s':>14} {'ratio':>6} "
          f"{'shares: cpu s':>13} {'(wall: detected / default)':>27}")
    for name in args.classes.split(","):
        scenario = next(c for c in CLASSES if c.name == name)
        col = collection(scenario, args.seed)
        old, new = rappor.Decoder(shares="detected"), rappor.Decoder()
        old.decode(col.aggregate, col.candidate_map)  # warm-up: first-use imports
        c_old, w_old = _time(old, col, args.repeat)
        c_new, w_new = _time(new, col, args.repeat)
        print(f"{name:<14} {len(col.candidate_map):>10,} {c_old:15.2f} {c_new:14.2f} {c_new / c_old:6.2f} "
              f"{c_new - c_old:13.2f} {w_old:12.2f} / {w_new:.2f}", flush=True)
    print(f"load average at end: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
