"""Score a discovery run: precision and recall of the true top strings, final total variation.

Definitions (``docs/discovery.md`` reports them over seeds):

``recall@K``
    share of the true ``K`` most held strings that the method outputs.
``precision@K``
    share of the method's ``K`` largest estimates that are among the true top ``K``
    (fewer than ``K`` outputs count as misses).
``false``
    output strings that no client holds.
``total variation``
    of the final distribution: the full-string reports decoded against the candidate
    list (:func:`rappor.analysis.evaluate_result`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

__all__ = ["topk_scores"]


def topk_scores(truth: Mapping[str, int], strings: Sequence[str], shares: Any, *, ks: Sequence[int] = (10, 50),
                ) -> dict[str, float]:
    """``recall@K``, ``precision@K`` for each ``K`` in ``ks`` and the number of ``false`` strings.

    Parameters
    ----------
    truth : mapping of str to int
        Holders of each string.
    strings : sequence of str
        The method's output.
    shares : array-like of float
        Its estimated share of each output string (for the ranking).
    """
    ranked_truth = sorted(truth, key=lambda s: (-truth[s], s))
    order = np.argsort(-np.asarray(shares, dtype=np.float64), kind="stable")
    ranked_out = [strings[i] for i in order]
    out: dict[str, float] = {"false": float(sum(1 for s in strings if truth.get(s, 0) == 0)),
                             "output": float(len(strings))}
    found = set(strings)
    for k in ks:
        top = set(ranked_truth[:k])
        out[f"recall@{k}"] = len(top & found) / k
        out[f"precision@{k}"] = len(top & set(ranked_out[:k])) / k
    return out
