"""k-ary randomized response in both parameterizations; 4 categories 0.1/0.4/0.3/0.2 and k = 10 at epsilon ln 3."""

import math

import numpy as np

from rappor.privacy import KaryRandomizedResponse

a = KaryRandomizedResponse.from_epsilon(4, math.log(3))
b = KaryRandomizedResponse.from_uniform_prob(4, 4 / (3 + 3))  # p = k / (k - 1 + e^eps)
print(f"keep prob {a.prob:.4f} == {b.prob:.4f}; uniform prob {a.uniform_prob:.4f}; epsilon {a.epsilon:.4f}")
truth = np.array([0.1, 0.4, 0.3, 0.2])
values = np.random.default_rng(1).choice(4, size=10_000, p=truth)
est = a.estimate(a(values, rng=2))
for j in range(4):
    print(f"category {j}: truth {truth[j]:.2f}  estimate {est.proportion[j]:.3f} +/- {est.prop_std_error[j]:.3f}")
k10 = KaryRandomizedResponse.from_epsilon(10, math.log(3))
values = np.random.default_rng(3).integers(0, 10, size=100_000)
est = k10.estimate(k10(values, rng=4))
print("k=10: max |error| / SE =", float(np.max(np.abs(est.proportion - np.bincount(values) / values.size)
                                             / est.prop_std_error)).__round__(2))
