"""Simulation: populations of true values, their reports, and whole simulated collections.

In the order a simulation uses them (modules private, names listed here):

``_populations``  a :class:`Population` (the truth), and :func:`candidate_strings` from it
``_reports``      fast simulated reports and counts, drawn from the client's exact law
                  (:func:`simulate_reports`, :func:`simulate_counts`, :func:`true_ones`)
``_scenarios``    a :class:`Scenario`: counts for a known distribution, no report encoded
                  (:func:`zipf_scenario`)
``_simulation``   :func:`simulate`: clients, reports and the aggregate, kept with the truth in a
                  :class:`Simulation` (decode it with :meth:`Simulation.decode`)

The stage sits below privacy and analysis, whose audits and checks use its simulated reports;
it imports nothing from them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._util.lazy import lazy_face

if TYPE_CHECKING:
    from ._populations import DISTRIBUTIONS, Population, candidate_strings
    from ._reports import simulate_counts, simulate_reports, true_ones
    from ._scenarios import Scenario, zipf_scenario
    from ._simulation import Simulation, simulate
else:
    __getattr__, __dir__ = lazy_face(__name__)
    del lazy_face, TYPE_CHECKING  # plumbing, not names of the face

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
