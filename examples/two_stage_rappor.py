"""One bit through RAPPOR's permanent and instantaneous responses, and the two-stage rate extraction."""

import numpy as np

from rappor import Params
from rappor.privacy import TwoStageRappor, two_stage_rate

params = Params(num_bloombits=16, num_hashes=2, num_cohorts=8, prob_p=0.5, prob_q=0.75, prob_f=0.5)
mech = TwoStageRappor.from_params(params)
print(f"one-bit value: epsilon of one report {mech.epsilon:.4f}, of the permanent response {mech.epsilon_permanent:.4f}")
print(f"Bloom filter (h={params.h}): epsilon_one {params.epsilon_one:.4f}, epsilon_inf {params.epsilon_inf:.4f}")
truth = np.random.default_rng(0).random(20_000) < 0.3
reports = mech(truth, rng=1)
est = two_stage_rate(int(reports.sum()), reports.size, prob_p=params.p, prob_q=params.q, prob_f=params.f)
print(f"raw rate {reports.mean():.3f} -> true rate {est.proportion:.3f} +/- {est.prop_std_error:.3f} (truth {truth.mean():.3f})")
