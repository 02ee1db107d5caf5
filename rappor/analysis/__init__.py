"""Analysis: from aggregated reports back to how common each string is.

In the order an analysis uses them:

``decoder/``      :class:`~rappor.analysis.decoder.Decoder`: estimates, standard errors,
                  p-values and intervals for a candidate list (``docs/decoder.md``)
``discovery/``    frequent strings that are in no candidate list (``docs/discovery.md``)
``association/``  the joint distribution of several variables (``docs/association.md``)
``_consistency``  whether the reports' set bits per report match their parameters
                  (:func:`check_bit_count`), checked before a decode
``_metrics``      the accuracy of a decode against the truth (:func:`evaluate`)

The subpackages are imported on use (``import rappor.analysis.discovery``); this face
lists the consistency check and the accuracy metrics.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._util.lazy import lazy_face

if TYPE_CHECKING:
    from ._consistency import BitCountCheck, check_bit_count
    from ._metrics import METRIC_MEANINGS, FitResiduals, Metrics, bit_residuals, evaluate, evaluate_result, fit_residuals
else:
    __getattr__, __dir__ = lazy_face(__name__)
    del lazy_face, TYPE_CHECKING  # plumbing, not names of the face

__all__ = [
    "METRIC_MEANINGS",
    "BitCountCheck",
    "FitResiduals",
    "Metrics",
    "bit_residuals",
    "check_bit_count",
    "evaluate",
    "evaluate_result",
    "fit_residuals",
]
