"""Do the counts fit the parameters (rappor.analysis._consistency): set Bloom bits per report against k and h."""

from __future__ import annotations

import numpy as np
import pytest

from rappor import Params
from rappor.analysis._consistency import Z_MISFIT, check_bit_count
from rappor.collect import Aggregate
from rappor.simulation import Population, simulate


def _params(**changes: float) -> Params:
    values = dict(num_bloombits=16, num_hashes=2, num_cohorts=64, prob_p=0.5, prob_q=0.75, prob_f=0.5)
    values.update(changes)
    return Params(**values)  # type: ignore[arg-type]


ONE = Population(strings=("only",), probabilities=np.array([1.0]))
ZIPF = Population.zipf(100)


@pytest.mark.parametrize(("params", "population"), [
    (_params(), ZIPF),
    (_params(), ONE),  # one string: its hashes' collisions in each cohort are all there is
    (_params(num_cohorts=4), ONE),
    (_params(num_bloombits=128, num_hashes=4, num_cohorts=8, prob_p=0.0, prob_q=1.0, prob_f=0.2), ZIPF),
], ids=["zipf", "one-string", "one-string-m4", "k128-h4-no-irr"])
def test_the_clients_parameters_fit(params: Params, population: Population) -> None:
    """10 seeds of 50,000 reports: z counts standard errors, so |z| stays below Z_MISFIT = 5 (a normal tail
    of 6e-7).  The SE includes the spread of B across cohorts for a single value holding every report (the
    worst population), so for spread-out populations z is narrower than a standard normal, never wider."""
    zs = [check_bit_count(simulate(params, population, 50_000, rng=seed).aggregate).z for seed in range(10)]
    assert max(abs(z) for z in zs) < Z_MISFIT - 1, zs
    assert float(np.std(zs)) < 1.5, zs


@pytest.mark.parametrize(("wrong", "sign"), [
    (_params(prob_p=0.25), +1),  # a lower p explains fewer ones by noise: the rest look like set bits
    (_params(prob_f=0.25), +1),  # less PRR noise assumed: the same ones read as more set bits
    (_params(num_hashes=4), -1),  # 2 hashes' bits where 4 are due
    (_params(num_hashes=1), +1),
])
def test_other_parameters_do_not_fit(wrong: Params, sign: int) -> None:
    counts = simulate(_params(), ZIPF, 50_000, rng=1).aggregate.counts
    check = check_bit_count(Aggregate(params=wrong, counts=counts))
    assert check is not None and not check.fits and sign * check.z > Z_MISFIT, check
    assert "do not fit their parameters" in check.warning("these counts")


def test_no_reports_no_check() -> None:
    assert check_bit_count(Aggregate.empty(_params())) is None
