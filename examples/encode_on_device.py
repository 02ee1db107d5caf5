"""Encode a few strings on a "device": what a RAPPOR client computes and what it sends.

Run:  python examples/encode_on_device.py

The secret is fixed here, so the cohort, Bloom filter and PRR columns are the same at
every run; the IRR column (what is sent) is fresh noise from the OS CSPRNG at every
report, as on a real device, so it changes from run to run.  RAPPOR_EXAMPLE_FIXED=0 draws
a random secret instead (then the cohort and PRR change too).
"""

from __future__ import annotations

import os

import rappor
from rappor.client import Encoder

params = rappor.Params(num_bloombits=16, num_hashes=2, num_cohorts=64, prob_p=0.5, prob_q=0.75, prob_f=0.5)

# The secret stays on the device (here a fixed one, so that the cohort and the PRR are the
# same at every run; a real client uses os.urandom(32) once and keeps it).
secret = bytes(range(32)) if os.environ.get("RAPPOR_EXAMPLE_FIXED", "1") == "1" else os.urandom(32)
encoder = Encoder(params, secret)  # IRR noise from the OS CSPRNG; cohort derived from the secret
print(f"cohort {encoder.cohort} of {params.num_cohorts}; epsilon_inf = {params.epsilon_inf:.3f}, "
      f"epsilon_one = {params.epsilon_one:.3f}")
print(f"{'value':<22} {'bloom':>17} {'PRR (fixed)':>17} {'IRR (sent)':>17}")
for value in ["https://example.com", "https://example.org", "https://example.com"]:
    trace = encoder.trace(value)  # for illustration only: bloom and PRR must never leave the device
    bits = [rappor.Report(cohort=encoder.cohort, bits=b).to_bitstring() for b in (trace.bloom, trace.prr, trace.irr)]
    print(f"{value:<22} {bits[0]:>17} {bits[1]:>17} {bits[2]:>17}")
report = encoder.encode("https://example.com")
print(f"what is sent: cohort={report.cohort}, bits={report.to_bitstring()} "
      f"(the PRR of a value never changes; the IRR differs at every report)")
