"""Decode google/rappor's shipped collection with this package and with its own R decoder.

google/rappor ships a real collection with its analysis app (``apps/rappor-analysis``:
``params.csv``, ``counts.csv`` and ``map.csv``; 10 million reports, k=128 h=2 m=8, 300
candidates; its map lists each candidate's bits in ascending order, with an empty field
where two hashes coincide).  This script decodes it with ``rappor decode`` and, given
a checkout of google/rappor whose R code runs here, with its ``bin/decode_dist.R``, and
prints: the strings each detects, the overlap, the total variation distance between the
two estimated distributions and the wall time of each (best of ``--repeat`` runs, each
a fresh process; R's map cache ``map.rda`` is removed before every run).  R's decoder
refits on random resamples of the counts without a seed, so its figures are given as
ranges over the runs.

Usage (the files are not in this repository; take them from a google/rappor clone)::

    python benchmarks/interop_google_app.py --data DIR [--r-repo GOOGLE_RAPPOR_DIR] [--repeat 3]

``DIR`` holds the three files.  ``--r-repo`` is the root of a google/rappor checkout;
R needs glmnet, Matrix and optparse, plus limSolve and RJSONIO (not packaged in Debian:
in a private copy, ``analysis/R/alternative.R`` can call ``quadprog::solve.QP`` exactly as
``limSolve::lsei(type = 2)`` does, and ``bin/decode_dist.R`` can use ``jsonlite``).
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def _timed(argv: list[str], env: dict[str, str] | None = None, before: Path | None = None) -> tuple[float, float]:
    """Wall and CPU (user + system) seconds of one run of ``argv``."""
    if before is not None:
        before.unlink(missing_ok=True)
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(argv, check=True, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - usage.ru_utime) + (after.ru_stime - usage.ru_stime)


def _proportions(path: Path) -> dict[str, float]:
    with path.open(newline="") as fh:
        return {row["string"]: float(row["proportion"]) for row in csv.DictReader(fh)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, required=True, help="directory with params.csv, counts.csv, map.csv")
    parser.add_argument("--r-repo", type=Path, help="google/rappor checkout whose R decoder runs here")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each decoder (best time) [default: 3]")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="rappor-interop-"))
    try:
        for name in ("params.csv", "counts.csv", "map.csv"):
            shutil.copy(args.data / name, work / name)
        files = ["--params", str(work / "params.csv"), "--counts", str(work / "counts.csv"),
                 "--map", str(work / "map.csv")]
        ours_argv = [sys.executable, "-m", "rappor", "decode", *files, "-o", str(work / "ours.csv"),
                     "--summary", str(work / "ours.json")]
        ours_wall, ours_cpu, inside = float("inf"), float("inf"), float("inf")
        for _ in range(args.repeat):
            wall, cpu = _timed(ours_argv)
            ours_wall, ours_cpu = min(ours_wall, wall), min(ours_cpu, cpu)
            inside = min(inside, json.loads((work / "ours.json").read_text())["seconds"])
        ours = _proportions(work / "ours.csv")
        print(f"rappor decode:        {len(ours)} detected; best of {args.repeat}: {ours_wall:.2f} s wall, "
              f"{ours_cpu:.2f} s CPU ({inside:.2f} s in Decoder.decode, the rest start-up, imports and files)")
        if args.r_repo is None:
            return
        (work / "r").mkdir()
        env = {**os.environ, "RAPPOR_REPO": str(args.r_repo.resolve()) + "/"}
        r_argv = ["Rscript", str(args.r_repo / "bin" / "decode_dist.R"), *files, "--output-dir", str(work / "r")]
        # Its Decode() refits on 4 resamples of the counts (R's RNG, unseeded), so its
        # detections vary from run to run: every run is compared.
        r_times: list[tuple[float, float]] = []
        detected, overlap, only_ours, tvs = [], [], [], []
        for _ in range(args.repeat):
            r_times.append(_timed(r_argv, env, before=work / "map.rda"))
            ref = _proportions(work / "r" / "results.csv")
            detected.append(len(ref))
            overlap.append(len(set(ours) & set(ref)))
            only_ours.append(len(set(ours) - set(ref)))
            tvs.append(0.5 * sum(abs(ours.get(s, 0.0) - ref.get(s, 0.0)) for s in set(ours) | set(ref)))

        def span(values: list[float], fmt: str = "d") -> str:
            lo, hi = min(values), max(values)
            return f"{lo:{fmt}}" if lo == hi else f"{lo:{fmt}}-{hi:{fmt}}"

        print(f"google/rappor (R):    {span(detected)} detected over {args.repeat} runs; best "
              f"{min(t[0] for t in r_times):.2f} s wall, {min(t[1] for t in r_times):.2f} s CPU")
        print(f"overlap:              {span(overlap)} of ours also detected by R ({span(only_ours)} only ours)")
        print(f"total variation:      {span(tvs, '.4f')} between the estimated proportions "
              f"(a string one side does not detect counts as 0)")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
