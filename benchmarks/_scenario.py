"""Re-export of the exact count-level simulator, which now lives in :mod:`rappor.simulation` (shim).

Benchmarks import ``from _scenario import zipf_scenario``; new code should import
:func:`rappor.simulation.zipf_scenario` (and :class:`~rappor.simulation.Scenario`,
:func:`~rappor.simulation.simulate_counts`, :func:`~rappor.simulation.true_ones`) directly.
"""

from __future__ import annotations

from rappor.simulation import Scenario, simulate_counts, true_ones, zipf_scenario

__all__ = ["Scenario", "simulate_counts", "true_ones", "zipf_scenario"]
