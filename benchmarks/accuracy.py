"""Decoder accuracy over issue 14's scenario classes, every mode side by side, against google/rappor.

Each class (``benchmarks/_classes.py``: large decoy lists, missing mass, k=128, high privacy,
p and q close, issue 4's public scenario, small all-real lists, decoys only) is simulated
with google/rappor's MD5 hashing and encoding rules, ``--seeds`` collections each, and
decoded by every mode.  For each (class, mode): total variation to the truth (undetected =
0, as results.csv is read: its rows are the detected strings) -- mean, sd, min-max --,
detected strings and false positives (mean, min-max / max); for the ``decoys-only`` class
the share of decodes with any detection (the per-decode false-detection rate, to hold at
``alpha``).  ``ratio`` is the mean TV over the reference's *best* run per collection.

The reference (google/rappor's R decoder) is read from ``--reference DIR`` when its runs
are there: write the collections with ``--export DIR``, run ``bin/decode_dist.R`` on each
(see ``benchmarks/_reference.py`` for the layout and command), then rerun with
``--reference DIR``.  The research prototype's modes (``--research``) went with the
prototype once its shares landed in :mod:`rappor.analysis.decoder`; both are in git
(``git show d9691be:benchmarks/_research_decoder.py``).

Usage::

    python benchmarks/accuracy.py [--seeds 20] [--classes issue4,decoys-1k] [--modes default,lfdr]
        [--reference DIR] [--export DIR] [--json FILE]

Issue 4's detailed scenario (coverage, encoder check, timing, interop) is
``benchmarks/accuracy_issue4.py``.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import rappor  # noqa: E402
from _classes import CLASSES, SLOW_CLASSES, Collection, ScenarioClass, collection, export_collection  # noqa: E402

#: Every class, the slow ones (``--slow``) last.
ALL_CLASSES = CLASSES + SLOW_CLASSES
from _reference import ReferenceRun, read_reference  # noqa: E402

#: A mode turns a collection into (shares, detected): the share results.csv gives each candidate
#: (0 where it has no row) and its detected column (the strings vouched for).
Mode = Callable[[Collection], tuple[np.ndarray, np.ndarray]]


def decoder_mode(**kwargs: object) -> Mode:
    """A mode that runs :class:`rappor.Decoder` with ``kwargs``; its shares are those of the rows of
    its results.csv (:meth:`~rappor.analysis.decoder.DecodeResult.ranking`: by default every candidate with a
    positive share, with ``shares="detected"`` the detected strings)."""
    decoder = rappor.Decoder(**kwargs)  # type: ignore[arg-type]

    def run(col: Collection) -> tuple[np.ndarray, np.ndarray]:
        res = decoder.decode(col.aggregate, col.candidate_map)
        detected = np.asarray(res.detected, dtype=bool)
        rows = np.zeros(len(detected), dtype=bool)
        rows[res.ranking()] = True
        return np.where(rows, np.nan_to_num(res.proportion), 0.0), detected
    return run


#: Every combination of the current decoder's options that changes its answer.
MODES: dict[str, Mode] = {
    "default": decoder_mode(),
    "detected": decoder_mode(shares="detected"),  # the default before issue 14's phase 2
    "storey": decoder_mode(correction="storey"),
    "adaptive-fdr": decoder_mode(correction="adaptive-fdr"),
    "bonferroni": decoder_mode(correction="bonferroni"),
    "lfdr": decoder_mode(correction="lfdr"),
    "normal": decoder_mode(null="normal"),
    "normal+storey": decoder_mode(null="normal", correction="storey"),
    "normal+bonferroni": decoder_mode(null="normal", correction="bonferroni"),
    # normal+lfdr (measured in docs/notes/decoder-rounds.md, 20-seed table) is refused since issue 14 phase 2:
    # Decoder raises InvalidParameterError (rappor.analysis.decoder._decoder.check_combination).  The "eb" and
    # "normal+eb" rows of that table are historical: estimator="empirical-bayes" was removed (its
    # detections swung from 5 to 100 over 20 seeds); run this script at commit 4852080 to reproduce them.
}


@dataclass
class Row:
    """Per-seed figures of one (class, mode)."""

    tv: list[float]
    detected: list[int]
    fp: list[int]
    seconds: list[float]
    rows: list[int] = field(default_factory=list)
    rows_fp: list[int] = field(default_factory=list)

    def summary(self) -> dict[str, float]:
        tv, det, fp = np.array(self.tv), np.array(self.detected), np.array(self.fp)
        rows = np.array(self.rows or self.detected)
        rows_fp = np.array(self.rows_fp or self.fp)
        return {"tv": float(tv.mean()), "tv_sd": float(tv.std(ddof=1)) if len(tv) > 1 else 0.0,
                "tv_min": float(tv.min()), "tv_max": float(tv.max()), "det": float(det.mean()),
                "det_min": int(det.min()), "det_max": int(det.max()), "fp": float(fp.mean()), "fp_max": int(fp.max()),
                "any_fp": float(np.mean(fp > 0)), "seconds": float(np.mean(self.seconds)), "n": len(tv),
                "rows": float(rows.mean()), "rows_fp": float(rows_fp.mean()),
                "per_seed": {"tv": [round(float(x), 6) for x in tv], "fp": [int(x) for x in fp]}}


def score(col: Collection, shares: np.ndarray, detected: np.ndarray) -> tuple[float, int, int, int, int]:
    """(TV, detected, false positives, rows, false rows) of a decode.

    TV is that of ``shares`` (every candidate's share in results.csv, 0 without a row);
    detected and false positives read the ``detected`` column; rows and false rows count
    the candidates with a positive share (what a reader that takes every row as a
    detection would count).
    """
    m = rappor.analysis.evaluate(col.truth, col.candidate_map.strings, shares, detected=np.ones(len(shares), dtype=bool))
    absent = col.true_share == 0
    rows = shares > 0
    return (m.total_variation, int(detected.sum()), int((detected & absent).sum()), int(rows.sum()),
            int((rows & absent).sum()))


def run_class(scenario: ScenarioClass, seeds: range, modes: dict[str, Mode]) -> dict[str, Row]:
    rows = {name: Row([], [], [], []) for name in modes}
    for seed in seeds:
        col = collection(scenario, seed)
        for name, mode in modes.items():
            t0 = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                shares, detected = mode(col)
            seconds = time.perf_counter() - t0
            tv, det, fp, n_rows, rows_fp = score(col, shares, detected)
            r = rows[name]
            r.tv.append(tv), r.detected.append(det), r.fp.append(fp), r.seconds.append(seconds)
            r.rows.append(n_rows), r.rows_fp.append(rows_fp)
    return rows


def reference_rows(runs: list[ReferenceRun]) -> dict[str, Row]:
    """The reference as two rows: every run (``ref-all``) and the best run of each collection (``ref-best``)."""
    if not runs:
        return {}
    every = Row([r.total_variation for r in runs], [r.detected for r in runs], [r.false_positives for r in runs],
                [r.seconds for r in runs])
    best = Row([], [], [], [])
    for seed in sorted({r.seed for r in runs}):
        top = min((r for r in runs if r.seed == seed), key=lambda r: r.total_variation)
        best.tv.append(top.total_variation), best.detected.append(top.detected)
        best.fp.append(top.false_positives), best.seconds.append(top.seconds)
    return {"ref-all": every, "ref-best": best}


def print_class(scenario: ScenarioClass, table: dict[str, dict[str, float]]) -> None:
    ref = table.get("ref-best")
    print(f"\n## {scenario.name}: {scenario.description}")
    if scenario.kind == "null":
        print(f"{'mode':<22} {'decodes w/ FP':>13} {'FP mean':>8} {'FP max':>7} {'rows':>6} {'n':>4} {'s':>6}")
        for name, s in table.items():
            print(f"{name:<22} {s['any_fp']:13.3f} {s['fp']:8.2f} {s['fp_max']:7d} {s['rows']:6.1f} {s['n']:4d} "
                  f"{s['seconds']:6.2f}")
        return
    print(f"{'mode':<22} {'TV':>6} {'sd':>6} {'min-max':>12} {'det':>6} {'(min-max)':>10} {'FP':>5} {'max':>4} "
          f"{'ratio':>6} {'rows':>6} {'FProws':>6} {'n':>4} {'s':>6}")
    for name, s in table.items():
        ratio = s["tv"] / ref["tv"] if ref else math.nan
        print(f"{name:<22} {s['tv']:6.3f} {s['tv_sd']:6.3f} {s['tv_min']:5.3f}-{s['tv_max']:5.3f} {s['det']:6.1f} "
              f"{s['det_min']:>4d}-{s['det_max']:<4d} {s['fp']:5.2f} {s['fp_max']:4d} {ratio:6.3f} {s['rows']:6.1f} "
              f"{s['rows_fp']:6.1f} {s['n']:4d} "
              f"{s['seconds']:6.2f}")


def print_summary(results: dict[str, dict[str, dict[str, float]]], alpha: float) -> None:
    """Per mode: worst and mean ratio to the reference's best run, FP excess, null rate."""
    dist = [c for c in ALL_CLASSES if c.name in results and c.kind == "distribution"]
    nulls = [c for c in ALL_CLASSES if c.name in results and c.kind == "null"]
    modes = list(next(iter(results.values())).keys())
    print(f"\n## Summary (ratio = mean TV / mean TV of the reference's best run; goal: worst <= 1, mean <= 0.85; "
          f"decoys-only decodes with any FP <= {alpha})")
    print(f"{'mode':<22} {'worst ratio':>11} {'(class)':<14} {'mean ratio':>10} {'FP > ref in':<30} {'null FP rate':>12}")
    for mode in modes:
        ratios, fp_over = [], []
        for c in dist:
            t = results[c.name]
            if "ref-best" in t and mode in t:
                ratios.append((t[mode]["tv"] / t["ref-best"]["tv"], c.name))
                if t[mode]["fp"] > t["ref-all"]["fp"] + 1e-9:
                    fp_over.append(c.name)
        null = ", ".join(f"{results[c.name][mode]['any_fp']:.3f}" for c in nulls if mode in results[c.name])
        if ratios:
            worst = max(ratios)
            mean = float(np.mean([r for r, _ in ratios]))
            print(f"{mode:<22} {worst[0]:11.3f} {worst[1]:<14} {mean:10.3f} {','.join(fp_over) or '-':<30} {null:>12}")
        else:
            print(f"{mode:<22} {'-':>11} {'':<14} {'-':>10} {'-':<30} {null:>12}")


def markdown(results: dict[str, dict[str, dict[str, float]]]) -> str:
    """The table as markdown: one row per (class, mode), TV mean (sd) [min-max], ratio, detections."""
    lines = ["| class | mode | TV mean (sd) [min-max] | ratio | detected (min-max) | FP mean (max) | rows (false) |",
             "|---|---|---|---|---|---|---|"]
    for c in ALL_CLASSES:
        table = results.get(c.name)
        if not table:
            continue
        ref = table.get("ref-best")
        for name, s in table.items():
            if c.kind == "null":
                lines.append(f"| {c.name} | {name} | decodes with a detection: {s['any_fp']:.3f} | | | "
                             f"{s['fp']:.2f} ({s['fp_max']}) | {s['rows']:.1f} |")
                continue
            ratio = f"{s['tv'] / ref['tv']:.3f}" if ref else "-"
            lines.append(f"| {c.name} | {name} | {s['tv']:.3f} ({s['tv_sd']:.3f}) [{s['tv_min']:.3f}-{s['tv_max']:.3f}] | "
                         f"{ratio} | {s['det']:.1f} ({s['det_min']}-{s['det_max']}) | {s['fp']:.2f} ({s['fp_max']}) | "
                         f"{s['rows']:.1f} ({s['rows_fp']:.1f}) |")
    # A compact matrix: mean TV per class and mode (decoys-only: share of decodes with a detection).
    modes = list(next(iter(results.values())).keys())
    lines += ["", "| class | " + " | ".join(modes) + " |", "|---|" + "---|" * len(modes)]
    for c in ALL_CLASSES:
        table = results.get(c.name)
        if table:
            key = "any_fp" if c.kind == "null" else "tv"
            lines.append(f"| {c.name} | " + " | ".join(f"{table[m][key]:.3f}" if m in table else "-" for m in modes) + " |")
    return "\n".join(lines) + "\n"


def goal_table(results: dict[str, dict[str, dict[str, object]]], reference: dict[str, dict[str, dict[str, float]]]
               ) -> str:
    """The goal's table, as markdown: per class the default's mean TV +- SD, ``--shares detected``'s, the
    reference's best run (from a ``--reference-summary`` file), their ratio, the paired difference
    default - detected in standard errors of the class mean, and false positives (ours, the reference's
    mean over its runs).  Seeds are those both have; the summary line gives the mean ratio."""
    lines = ["| class | seeds | default TV mean +- SD | --shares detected | reference best run | ratio | "
             "default - detected (SE) | FP default / reference |", "|---|---|---|---|---|---|---|---|"]
    ratios = []
    for c in ALL_CLASSES:
        table = results.get(c.name)
        if not table or c.kind != "distribution" or "default" not in table:
            continue
        ours = table["default"]["per_seed"]  # type: ignore[index]
        det = table.get("detected", {}).get("per_seed")  # type: ignore[union-attr]
        ref = reference.get(c.name, {})
        seeds = [i for i in range(len(ours["tv"])) if str(i) in ref]  # type: ignore[arg-type]
        tv = np.array(ours["tv"])  # type: ignore[index]
        cells = [c.name, str(len(tv)), f"{tv.mean():.4f} +- {tv.std(ddof=1):.4f}"]
        if det:
            dtv = np.array(det["tv"])
            diff = tv - dtv
            cells += [f"{dtv.mean():.4f}"]
        else:
            cells += ["-"]
        if seeds:
            rtv = np.array([ref[str(i)]["tv"] for i in seeds])
            ratio = float(tv[seeds].mean() / rtv.mean())
            ratios.append(ratio)
            cells += [f"{rtv.mean():.4f} ({len(seeds)} seeds)", f"{ratio:.3f}"]
        else:
            cells += ["-", "-"]
        cells.append(f"{diff.mean():+.4f} ({diff.mean() / (diff.std(ddof=1) / math.sqrt(len(diff))):+.1f})"
                     if det else "-")
        fp = np.array(ours["fp"], dtype=float)  # type: ignore[index]
        rfp = f"{np.mean([ref[str(i)]['mean_false_positives'] for i in seeds]):.2f}" if seeds else "-"
        cells.append(f"{fp.mean():.2f} / {rfp}")
        lines.append("| " + " | ".join(cells) + " |")
    if ratios:
        lines.append(f"\nmean ratio over {len(ratios)} classes: {np.mean(ratios):.3f}; worst {max(ratios):.3f}")
    return "\n".join(lines) + "\n"


def write_reference_summary(path: str, root: str, classes: list[ScenarioClass], seeds: range,
                            argv: list[str] | None) -> None:
    """The reference's best run per collection (lowest TV of its runs): TV, detected and false
    positives per seed, for the slow tests (``tests/analysis/decoder/test_decoder_shares_slow.py``) that compare
    the default decoder with it without the reference's runs at hand."""
    out: dict[str, object] = {
        "command": "python benchmarks/accuracy.py " + " ".join(sys.argv[1:] if argv is None else argv),
        "what": "google/rappor's R decoder (bin/decode_dist.R), 3 runs per collection of benchmarks/_classes.py; "
                "per seed its best run (lowest TV), scored as results.csv is read (rows = detected)",
        "classes": {},
    }
    for c in classes:
        runs = read_reference(root, c.name, seeds)
        best: dict[str, dict[str, float]] = {}
        for seed in sorted({r.seed for r in runs}):
            top = min((r for r in runs if r.seed == seed), key=lambda r: r.total_variation)
            every = [r for r in runs if r.seed == seed]
            best[str(seed)] = {"tv": round(top.total_variation, 6), "detected": top.detected,
                               "false_positives": top.false_positives,
                               "mean_false_positives": round(float(np.mean([r.false_positives for r in every])), 4),
                               "runs": len(every)}
        out["classes"][c.name] = best  # type: ignore[index]
    Path(path).write_text(json.dumps(out, indent=1) + "\n")
    print(f"wrote the reference's best runs of {len(classes)} classes x {len(seeds)} seeds to {path}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5, help="collections per class [default: 5; 20 for the table]")
    parser.add_argument("--first-seed", type=int, default=0)
    parser.add_argument("--classes", default="all", help="comma-separated class names [default: all but the slow]")
    parser.add_argument("--slow", action="store_true", help="with --classes all: add the slow classes (10 M reports)")
    parser.add_argument("--modes", default="all", help="comma-separated mode names [default: all]")
    parser.add_argument("--reference", default=None, help="directory of the reference's runs (see --export)")
    parser.add_argument("--export", default=None, help="write the collections for the reference and exit")
    parser.add_argument("--json", default=None, help="write the table as JSON")
    parser.add_argument("--from-json", default=None, help="print the tables of a --json file instead of decoding")
    parser.add_argument("--markdown", default=None, help="write the table as markdown")
    parser.add_argument("--goal", default=None, metavar="REFERENCE_JSON",
                        help="with --from-json (files, comma-separated): print the goal's table against the "
                        "reference's best runs of a --reference-summary file (tests/data/reference_accuracy.json)")
    parser.add_argument("--reference-summary", default=None, metavar="FILE",
                        help="with --reference: write the reference's best-run TV and false positives per class "
                        "and seed as JSON (tests/data/reference_accuracy.json) and exit")
    parser.add_argument("--threads", type=int, default=1, help="BLAS threads (threadpoolctl) [default: 1]")
    args = parser.parse_args(argv)
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover - optional
        pass
    else:
        threadpool_limits(args.threads, user_api="blas")
    if args.classes == "all":
        classes = list(ALL_CLASSES if args.slow else CLASSES)
    else:
        wanted_classes = args.classes.split(",")
        unknown_classes = [n for n in wanted_classes if n not in {c.name for c in ALL_CLASSES}]
        if unknown_classes:
            parser.error(f"unknown classes {unknown_classes}; known: {[c.name for c in ALL_CLASSES]}")
        classes = [c for c in ALL_CLASSES if c.name in wanted_classes]
    seeds = range(args.first_seed, args.first_seed + args.seeds)
    if args.export:
        for c in classes:
            for seed in seeds:
                export_collection(collection(c, seed), args.export)
        print(f"wrote {len(classes)} classes x {len(seeds)} collections under {args.export}")
        return 0
    if args.reference_summary:
        if not args.reference:
            parser.error("--reference-summary needs --reference")
        write_reference_summary(args.reference_summary, args.reference, classes, seeds, argv)
        return 0
    if args.from_json:
        results = {}
        for part in args.from_json.split(","):
            results.update(json.loads(Path(part).read_text()))
        if args.goal:
            print(goal_table(results, json.loads(Path(args.goal).read_text())["classes"]))
            return 0
        for c in ALL_CLASSES:
            if c.name in results:
                print_class(c, results[c.name])
        print_summary(results, 0.05)
        if args.markdown:
            Path(args.markdown).write_text(markdown(results))
        return 0
    modes = dict(MODES)
    if args.modes != "all":
        wanted = args.modes.split(",")
        unknown = [m for m in wanted if m not in modes]
        if unknown:
            parser.error(f"unknown modes {unknown}; known: {sorted(modes)}")
        modes = {m: modes[m] for m in wanted}
    print(f"{len(classes)} classes, seeds {seeds.start}..{seeds.stop - 1}, modes: {', '.join(modes)}")
    results: dict[str, dict[str, dict[str, float]]] = {}
    for c in classes:
        rows = run_class(c, seeds, modes)
        if args.reference:
            rows.update(reference_rows(read_reference(args.reference, c.name, seeds)))
        results[c.name] = {name: r.summary() for name, r in rows.items()}
        print_class(c, results[c.name])
        sys.stdout.flush()
        if args.json:  # after every class: a long run interrupted keeps what it measured
            Path(args.json).write_text(json.dumps(results, indent=1))
    print_summary(results, 0.05)
    issue4 = results.get("issue4", {}).get("ref-all")
    if issue4:
        print(f"\nreference on issue 4's public scenario: TV {issue4['tv_min']:.3f}-{issue4['tv_max']:.3f} (mean "
              f"{issue4['tv']:.3f}), detected {issue4['det_min']}-{issue4['det_max']} over {issue4['n']} runs "
              "(published: TV 0.26-0.30, 13-19 detected)")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))
    if args.markdown:
        Path(args.markdown).write_text(markdown(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
