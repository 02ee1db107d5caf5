"""Binary randomized response: epsilon ln 3 at prob 0.75, and debiasing 1,000 answers (true rate 0.23)."""

import numpy as np

from rappor.privacy import BinaryRandomizedResponse

rr = BinaryRandomizedResponse(0.75)
print(f"epsilon = {rr.map(d_in=1):.4f} (ln 3 = {np.log(3):.4f}); tight zCDP rho = {rr.rho_zcdp:.4f}")
truth = np.zeros(1000, dtype=bool)
truth[:230] = True
est = rr.estimate(rr(truth, rng=0))
low, high = est.confidence_interval(0.95)
print(f"estimated rate {est.proportion:.3f} +/- {est.prop_std_error:.3f}  95% CI [{low:.3f}, {high:.3f}]  (truth 0.23)")
