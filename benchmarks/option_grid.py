"""Every null x correction combination of the decoder on decoy lists (issue 14, phase 2).

    python benchmarks/option_grid.py [--classes decoys-1k,missing-half] [--seeds 5]
    python benchmarks/option_grid.py --normal-lfdr --seeds 20

The first prints, per combination, the decoys detected in each decode of the scenario classes
of ``benchmarks/_classes.py`` (google/rappor's MD5 hashing and encoding rules) and whether the
decoder refuses the combination.  Refused combinations are run anyway, past the check
(``rappor.testing.estimate`` with the options directly), to show why they are refused.
``--normal-lfdr`` runs null="normal" with correction="lfdr" alone.

Historical: the estimator dimension (``estimator="empirical-bayes"``) and ``--eb-stability``
(that estimator's 5-100 detections over 20 seeds of issue 4's scenario, and two variants) were
removed with the estimator; their figures stay in docs/decoder.md, reproducible with this
script at commit 4852080 (``git show 4852080:benchmarks/option_grid.py``).
"""

from __future__ import annotations

import argparse
import itertools
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))

from rappor.analysis.decoder import check_combination  # noqa: E402
from rappor.testing import CORRECTIONS, NULLS, DecodeOptions, estimate  # noqa: E402
from rappor.exceptions import InvalidParameterError  # noqa: E402

import _classes  # noqa: E402

def detected_past_the_check(col: _classes.Collection, null: str, correction: str) -> np.ndarray:
    """What the decoder would report with these options, refused or not (Decoder.decode's rule)."""
    options = DecodeOptions(significance_level=0.05, correction=correction, lasso_alpha=None, screening="auto",
                            model_unexplained=True, max_refits=5, null=null, rng=None)
    est = estimate(options, col.aggregate.counts, col.candidate_map.matrix, col.aggregate.params)
    return np.nan_to_num(est.adjusted_pvalue, nan=1.0) <= 0.05


def grid(class_names: list[str], seeds: int, combos: list[tuple[str, str]]) -> None:
    for name in class_names:
        scenario = _classes._by_name(name)
        cols = [_classes.collection(scenario, s) for s in range(seeds)]
        n_decoys = int(np.sum(cols[0].true_share == 0))
        print(f"{name}: {n_decoys} decoys, seeds 0-{seeds - 1}; decoys detected per decode")
        for combo in combos:
            try:
                check_combination(*combo)
                verdict = "accepted"
            except InvalidParameterError:
                verdict = "REFUSED "
            start = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                found = [int(np.sum(detected_past_the_check(c, *combo) & (c.true_share == 0))) for c in cols]
            print(f"  {verdict} {'/'.join(combo):<30} {found}  {_worst(found, n_decoys)}"
                  f"  ({time.perf_counter() - start:.1f} s)", flush=True)


def _worst(found: list[int], n_decoys: int) -> str:
    """The most decoys one decode detected, as a share of the list's decoys (a class may have none)."""
    return f"max {max(found) / n_decoys:.1%} of the decoys" if n_decoys else "(no decoys in this class)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--classes", default="decoys-1k,missing-half")
    parser.add_argument("--seeds", type=int, default=None, help="[default: 5; 20 with --normal-lfdr]")
    parser.add_argument("--normal-lfdr", action="store_true")
    args = parser.parse_args()
    combos = [("normal", "lfdr")] if args.normal_lfdr else list(itertools.product(NULLS, CORRECTIONS))
    grid(args.classes.split(","), args.seeds or (20 if args.normal_lfdr else 5), combos)


if __name__ == "__main__":
    main()
