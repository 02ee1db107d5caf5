"""The search's held values: a short value's second chance after one weak finding slot."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from rappor.analysis.discovery import discover
from rappor.analysis.discovery._held import _HELD_FLOOR, HeldValue, held_values, score_held
from rappor.analysis.discovery._levels import _tails
from rappor.analysis.discovery._oracle import SlotOracle
from rappor.analysis.discovery._spec import COMPLETE
from rappor.exceptions import InvalidParameterError

#: 'quickfox' (conftest; 8 bytes, whole from slot 3 on) with slot 3 holding 2/52 of the reports,
#: the others 10/52 each: its z-score is about 2.3 in slot 3 and about 5.5 in slots 4 and 5
#: (measured on seeds 0-11: 0.5-4.2 in slot 3, 2.7-8.0 after).
_WEAK = (10, 10, 10, 2, 10, 10)


def test_a_short_value_with_a_weak_finding_slot_is_held_and_found(quickfox_found: Any) -> None:
    # pending=1 puts z_pending at 2.98 over the 702 lowercase complete tails: without held values
    # 'quickfox' is pooled only when its slot-3 z-score passes that (2 of the 12 seeds: 4.2 and
    # 3.6).  Held (20 per prefix: the best 3% of about 50,000 complete children, z >= 1.9 or so),
    # it is scored again in slot 4 and confirmed by slot 5: found on 10 of the 12 (slot-3 z-scores
    # of 0.5 and 1.7 on the other two).  The bounds leave two seeds of margin each way.
    found = quickfox_found(range(12), _WEAK, off={"pending": 1.0, "hold": 0.0}, on={"pending": 1.0, "hold": 20.0})
    assert found["off"] <= 4
    assert found["on"] >= 8


def test_held_absent_values_are_pooled_at_the_hold_false_rate(absent_heads: Any) -> None:
    # The control: given what was held (chosen in slot 2 for their high z-scores), an absent
    # value's z-score in slot 3 (other clients) is close to standard normal, so it passes the
    # level 1.645 of hold_false = 0.05 with chance about 0.05: 5% of those held, within 4
    # standard deviations of the binomial count (the trimmed estimates' null tail is a little
    # lighter than the normal one, so the count may fall short of 5%, not far above it).
    spec, sim, heads, tails, _ = absent_heads(5)
    weights = np.ones(len(tails)) / 702.0
    held = held_values(SlotOracle(sim.discovery, spec, 2), heads, tails, weights, 5.0, set(), likely=False)
    n_held = len(held)
    assert n_held == 5 * len(heads)
    assert all(v[:4] in set(heads) and 5 <= len(v) <= 6 for v in held)
    level = 1.6448536269514722  # 1 - Phi(level) = 0.05
    passed = score_held(SlotOracle(sim.discovery, spec, 3), held, level)
    assert not held  # equal slots: every wait ends in the next one
    expected = 0.05 * n_held
    sd = math.sqrt(n_held * 0.05 * 0.95)
    assert expected / 2 <= len(passed) <= expected + 4 * sd
    assert all(share >= level * se for _, share, se in passed)


def test_a_held_value_waits_for_half_its_weight(quickfox: Any) -> None:
    # 'quickfox' as if held in slot 2 (weight 10): it waits for half its weight there.  Slot 3 holds
    # 2/10 of it (its inverse variance grows with the reports), so the wait goes on and nothing is
    # returned; slot 4 adds 10/10 and ends it.  Its share then pools slots 3 and 4 (inverse-variance
    # weights) and is 2%, within 4 standard errors.
    spec, sim = quickfox(1, _WEAK)
    n_2 = SlotOracle(sim.discovery, spec, 2).n_reports  # type: ignore[attr-defined]
    _, se_2 = SlotOracle(sim.discovery, spec, 2).trimmed(spec.bloom_bits([b"quickfox"], 2))  # type: ignore[attr-defined]
    entry = HeldValue(target=0.5 / float(se_2[0] / n_2) ** 2)
    held = {b"quickfox": entry}
    assert score_held(SlotOracle(sim.discovery, spec, 3), held, 1.645) == []  # type: ignore[attr-defined]
    assert held == {b"quickfox": entry} and 0.1 * entry.target < entry.weight < 0.8 * entry.target
    weight_3 = entry.weight
    out = score_held(SlotOracle(sim.discovery, spec, 4), held, 1.645)  # type: ignore[attr-defined]
    assert held == {} and entry.weight > entry.target > weight_3
    (value, share, se), = out
    assert value == b"quickfox" and se == pytest.approx(1.0 / math.sqrt(entry.weight))
    assert share == pytest.approx(0.02, abs=4 * se)


def test_held_values_below_the_floor_are_not_held(quickfox: Any) -> None:
    spec, sim = quickfox(0, _WEAK)
    oracle = SlotOracle(sim.discovery, spec, 3)  # type: ignore[attr-defined]
    tails = [COMPLETE + t for i in (1, 2) for t in _tails(spec.symbols, i)]
    held = held_values(oracle, [b"quickf", b"lazydo"], tails, np.ones(len(tails)), 1e6, set(), likely=False)
    est, se = oracle.score_pairs([spec.split(v, 3) for v in held])
    assert np.all(est >= (_HELD_FLOOR - 1e-9) * se)
    assert held_values(oracle, [b"quickf"], tails, np.ones(len(tails)), 0.0, set()) == {}
    assert held_values(oracle, [b"quickf"], tails, np.ones(len(tails)), 1e6, set(held), likely=False) == {}


def test_discover_checks_hold(quickfox: Any) -> None:
    spec, sim = quickfox(0, _WEAK)
    for key, bad in (("hold", -1.0), ("hold_false", 0.0), ("hold_false", 1.0)):
        with pytest.raises(InvalidParameterError, match=key):
            discover(sim.discovery, spec, **{key: bad})  # type: ignore[attr-defined, arg-type]
