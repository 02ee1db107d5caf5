"""Privacy: what a report reveals, how to choose parameters for it, and how to check it.

In the order a user meets them (modules private, names listed here):

``_accounting``  privacy accounting of RAPPOR: pure epsilon (:func:`loss`), RDP, zCDP,
                 (epsilon, delta) and composition
``_detection``   what a decode of a design will detect (:func:`detection_frequency`,
                 :func:`detection_outlook`), checked by simulation
``_planner``     choosing parameters for privacy and detection targets (:func:`plan`)
``_mechanisms``  other local mechanisms to compare with: randomized response and k-RR,
                 with their estimators; ``_rappor_mechanisms``: basic and k-RAPPOR, two-stage
``_audit``       an empirical privacy audit of an encoder (:func:`audit_encoder`)
"""

from __future__ import annotations

from ._accounting import (
    DEFAULT_ORDERS,
    PrivacyLoss,
    advanced_composition,
    basic_composition,
    bernoulli_rdp,
    binary_rr_rdp,
    epsilon_from_rdp,
    epsilon_from_zcdp,
    loss,
    pure_dp_to_zcdp,
    rdp,
    renyi_divergence,
    rho_zcdp,
    tight_rho,
)
from ._audit import (
    AuditResult,
    AuditRow,
    AuditSample,
    ConvergenceCheck,
    audit_encoder,
    batch_sampler,
    client_sampler,
    never_clearing_sampler,
)
from ._mechanisms import (
    BinaryRandomizedResponse,
    FrequencyEstimate,
    KaryRandomizedResponse,
    epsilon_from_lying_probability,
    lying_probability_from_epsilon,
)
from ._rappor_mechanisms import BasicRappor, KRappor, TwoStageRappor, two_stage_rate
from ._detection import (
    DetectionOutlook,
    DetectionPrediction,
    design_inflation,
    detection_frequency,
    detection_outlook,
    detection_probability,
    reports_for_frequency,
    simulate_detection,
)
from ._planner import DEFAULT_EPSILON_RATIO, Plan, PlanResult, plan

__all__ = [
    "DEFAULT_EPSILON_RATIO",
    "DEFAULT_ORDERS",
    "AuditResult",
    "AuditRow",
    "AuditSample",
    "BasicRappor",
    "BinaryRandomizedResponse",
    "ConvergenceCheck",
    "DetectionOutlook",
    "DetectionPrediction",
    "FrequencyEstimate",
    "KRappor",
    "KaryRandomizedResponse",
    "Plan",
    "PlanResult",
    "PrivacyLoss",
    "TwoStageRappor",
    "advanced_composition",
    "audit_encoder",
    "basic_composition",
    "batch_sampler",
    "bernoulli_rdp",
    "binary_rr_rdp",
    "client_sampler",
    "design_inflation",
    "detection_frequency",
    "detection_outlook",
    "detection_probability",
    "epsilon_from_lying_probability",
    "epsilon_from_rdp",
    "epsilon_from_zcdp",
    "loss",
    "lying_probability_from_epsilon",
    "never_clearing_sampler",
    "plan",
    "pure_dp_to_zcdp",
    "rdp",
    "renyi_divergence",
    "reports_for_frequency",
    "rho_zcdp",
    "simulate_detection",
    "tight_rho",
    "two_stage_rate",
]
