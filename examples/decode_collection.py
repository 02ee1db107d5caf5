"""Decode a collection: reports -> per-cohort bit counts -> estimated frequencies of candidates.

Uses the sample in data/sample/ (20,000 reports made by the real client; see data/README.md)
and compares the result with the truth that only a simulation knows.

Run:  python examples/decode_collection.py
"""

from __future__ import annotations

from pathlib import Path

import rappor
from rappor.analysis import evaluate_result
from rappor.analysis.decoder import Decoder
from rappor.collect import Aggregate
from rappor.formats import read_candidates, read_reports

SAMPLE = Path(__file__).resolve().parent.parent / "data" / "sample"

params = rappor.formats.read_params(SAMPLE / "params.csv")
reports = read_reports(SAMPLE / "reports.csv", params)  # what the server received
aggregate = Aggregate.from_reports(reports)  # the same table as `rappor sum-bits`
candidates = read_candidates(SAMPLE / "candidates.txt")  # what the analyst guesses
result = Decoder().decode(aggregate, rappor.hash_candidates(candidates, params))

print(f"{len(reports):,} reports, {len(candidates)} candidates, {int(result.detected.sum())} detected")
low, high = result.confidence_interval(0.95)  # Wald, of the least-squares share the test is about
print(f"{'string':<10} {'estimate':>9} {'share':>7} {'least-squares share, 95%':>25}")
for i in sorted(range(len(candidates)), key=lambda i: -result.proportion[i]):
    if result.detected[i]:
        print(f"{candidates[i]:<10} {result.estimate[i]:>9.0f} {result.proportion[i]:>7.3f} "
              f"{result.fitted_proportion[i]:>7.3f} [{low[i]:.3f}, {high[i]:.3f}]")

truth = {}
for line in (SAMPLE / "truth.csv").read_text(encoding="utf-8").splitlines()[1:]:
    string, count, _ = line.rsplit(",", 2)
    truth[string] = int(count)
metrics = evaluate_result(result, truth)
print(f"total variation {metrics.total_variation:.3f}, false positives {metrics.false_positives}, "
      f"smallest detected true share {metrics.smallest_detected:.3f}, "
      f"largest missed {metrics.largest_missed:.3f}")
