"""rappor.analysis.association: sample_clients keeps each client's reports together; decode_collection
is the decoder on that sample (``rappor decode-assoc --reports-sample-size``)."""

from __future__ import annotations

import numpy as np
import pytest

from rappor import Params
from rappor.analysis.association import AssociationDecoder, decode_collection, sample_clients, simulate_association

PARAMS = Params(num_bloombits=16, num_hashes=2, num_cohorts=16, prob_p=0.25, prob_q=0.75, prob_f=0.0)
JOINT = np.array([[0.3, 0.1], [0.1, 0.2], [0.2, 0.1]])


@pytest.fixture(scope="module")
def sim():  # type: ignore[no-untyped-def]
    return simulate_association(PARAMS, JOINT, [["a", "b", "c"], None], 5000, rng=0)


def test_sample_clients_keeps_the_variables_paired(sim) -> None:  # type: ignore[no-untyped-def]
    full = sim.reports
    sample = sample_clients(full, 1000, rng=3)
    assert [len(b) for b in sample] == [1000, 1000]
    # each kept row is a row of the full batches, in order, with the same row in every variable
    keys = [{(int(c), w.tobytes()) for c, w in zip(b.cohorts, b.words)} for b in full]
    for b, key in zip(sample, keys):
        assert all((int(c), w.tobytes()) in key for c, w in zip(b.cohorts, b.words))
    np.testing.assert_array_equal(sample[0].cohorts, sample[1].cohorts)
    assert sample_clients(full, 5000, rng=3) == list(full)  # all of them: nothing drawn


def test_decode_collection_is_the_decoder_on_the_sample(sim) -> None:  # type: ignore[no-untyped-def]
    decoder = AssociationDecoder(candidates="all", other="none")
    got = decode_collection(sim.reports, sim.variables, decoder=decoder, sample_size=2000, rng=7)
    want = decoder.decode(sample_clients(sim.reports, 2000, rng=7), sim.variables)
    np.testing.assert_array_equal(got.proportion, want.proportion)
