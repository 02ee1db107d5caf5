"""Simulation: populations of true values, their reports, and whole simulated collections.

In the order a simulation uses them (modules private, names listed here): a
:class:`Population` (or a :class:`Scenario`), reports or exact counts simulated from it
(:func:`simulate_reports`, :func:`simulate_counts`), and :func:`simulate`, which runs the
whole pipeline (encode, aggregate, decode) and returns a :class:`Simulation` with the truth.
"""

from __future__ import annotations

from ._simulation import (
    DISTRIBUTIONS,
    Population,
    Scenario,
    Simulation,
    candidate_strings,
    simulate,
    simulate_counts,
    simulate_reports,
    true_ones,
    zipf_scenario,
)

__all__ = [
    "DISTRIBUTIONS",
    "Population",
    "Scenario",
    "Simulation",
    "candidate_strings",
    "simulate",
    "simulate_counts",
    "simulate_reports",
    "true_ones",
    "zipf_scenario",
]
