"""Discovery: find frequent strings that are in no candidate list, from the reports alone.

Modules
-------
:mod:`~rappor.discovery.spec`
    What a discovery report carries (prefix fragments per slot) and the wire parameters.
:mod:`~rappor.discovery.oracle`
    Any fragment's count in one slot, read off the per-cohort Bloom counts.
:mod:`~rappor.discovery.search`
    The search (:func:`discover`) and its result.
:mod:`~rappor.discovery.simulate`
    Simulated collections with discovery, 10 million clients in seconds.
:mod:`~rappor.discovery.population`
    Long-tailed populations of realistic strings.

See ``docs/discovery.md`` for the method, its privacy accounting and measurements.
"""

from __future__ import annotations

from .population import realistic_population, realistic_strings
from .search import DiscoveryResult, discover, display_string
from .simulate import DiscoverySimulation, simulate_discovery
from .spec import ALPHABETS, DiscoverySpec, alphabet_bytes

__all__ = [
    "ALPHABETS",
    "DiscoveryResult",
    "DiscoverySimulation",
    "DiscoverySpec",
    "alphabet_bytes",
    "discover",
    "display_string",
    "realistic_population",
    "realistic_strings",
    "simulate_discovery",
]
