"""Discovery: find frequent strings that are in no candidate list, from the reports alone.

The package's modules (private), in the order a discovery uses them:

=================  ==============================================================
``_spec``          what a discovery report carries (prefix fragments per slot), the wire
                   parameters (:class:`DiscoverySpec`)
``_plan``          choosing the discovery parameters (:func:`plan_discovery`), and a whole
                   collection with discovery (:func:`plan_with_discovery`, ``rappor plan``)
``_privacy``       what the extra discovery reports cost (:func:`discovery_privacy`)
``_client``        the client's discovery reports (:class:`DiscoveryEncoder`)
``_oracle``        any fragment's count in one slot, read off the per-cohort Bloom counts
``_prior``         the search's byte prior over tails, learnt from the earlier slots (and a
                   list of known values, if given)
``_levels``        the z-scores the search's extensions need, per tail by the prior
``_confirmation``  the null distribution a found string is confirmed against
``_rescue``        the search's provisional prefixes: their budgets and their children
``_held``          the search's held values: a short value's second chance after a weak slot
``_scores``        every fragment a slot's search scores (extensions, pooled, fitted)
``_search``        the search (:func:`discover`) and its result
``_decode``        discover, then decode with the candidates (:func:`discover_and_decode`,
                   what ``rappor decode --discover`` runs)
``_pem``           the PEM baseline (prefix extending, one segment per group)
``_population``    long-tailed populations of realistic strings, and of 6-15 byte values
``_simulate``      simulated collections with discovery, 10 million clients in seconds
``_evaluate``      top-k scores of a discovery against the truth; a whole simulated collection
                   with discovery, scored (:func:`evaluate_discovery`, ``rappor simulate --discover``)
=================  ==============================================================

See ``docs/discovery.md`` for the method, its privacy accounting and measurements.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..._util.lazy import lazy_face

if TYPE_CHECKING:
    from ._client import DiscoveryEncoder, encode_discovery_clients
    from ._decode import DiscoverDecode, discover_and_decode, listed_strings
    from ._evaluate import DiscoveryEvaluation, evaluate_discovery, topk_scores
    from ._pem import pem_discover, pem_population
    from ._plan import (DiscoveryPlan, plan_discovery, plan_slot_weights, plan_with_discovery, shared_prefix_credit,
                        typical_prefix_credit)
    from ._population import long_population, realistic_population, realistic_strings
    from ._privacy import DiscoveryPrivacy, discovery_params, discovery_privacy
    from ._search import DiscoveryResult, discover, display_string
    from ._simulate import DiscoverySimulation, simulate_discovery
    from ._spec import ALPHABETS, DiscoverySpec, alphabet_bytes
else:
    __getattr__, __dir__ = lazy_face(__name__)
    del lazy_face, TYPE_CHECKING  # plumbing, not names of the face

__all__ = [
    "ALPHABETS",
    "DiscoverDecode",
    "DiscoveryEncoder",
    "DiscoveryEvaluation",
    "DiscoveryPlan",
    "DiscoveryPrivacy",
    "DiscoveryResult",
    "DiscoverySimulation",
    "DiscoverySpec",
    "alphabet_bytes",
    "discover",
    "discover_and_decode",
    "discovery_params",
    "discovery_privacy",
    "display_string",
    "encode_discovery_clients",
    "evaluate_discovery",
    "listed_strings",
    "long_population",
    "pem_discover",
    "pem_population",
    "plan_discovery",
    "plan_slot_weights",
    "plan_with_discovery",
    "realistic_population",
    "realistic_strings",
    "shared_prefix_credit",
    "simulate_discovery",
    "topk_scores",
    "typical_prefix_credit",
]
