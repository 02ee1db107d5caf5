"""Regenerate the golden vectors in this directory from the :mod:`rappor` implementation.

Run from the repository root::

    python data/golden/make_vectors.py

Files (CSV, header on line 1, ``\\n`` line endings; specs in docs/hashing.md and docs/client.md):

``hashing_vectors.csv``  ``k,h,m,cohort,value_hex,indices,bloom``: the Bloom bit index of
                         each hash in hash order (space-separated) and the Bloom filter as a
                         google/rappor bit string (character 0 = bit k-1).
``client_vectors.csv``   ``key_hex,client_id,secret_hex,m,cohort``: client secret derived
                         from a key and a client id, and the cohort derived from that secret.
``prr_vectors.csv``      ``secret_hex,k,h,m,f,cohort,value_hex,bloom,prr``: permanent
                         randomized responses as bit strings.

``tests/client/test_hashing.py`` and ``tests/client/test_encoder.py`` check these files against the
library and against independent pure-Python implementations of the specs, so a change
of any derivation fails the tests instead of silently changing the vectors.
"""

from __future__ import annotations

import csv
import hashlib
from pathlib import Path

from rappor import Params
from rappor._util.bits import bits_to_bitstrings
from rappor.client import Encoder, bloom_bit_indices, client_secret, derive_cohort, value_bytes

HERE = Path(__file__).parent

VALUES: list[str | bytes] = [
    "", "a", "v1", "abc", "héllo wörld", "日本語", "x" * 15, "y" * 16, "z" * 17, "0123456789abcdef0123456789abcdef",
    "https://www.example.com/some/long/path?query=1", b"\x00", b"\xff\xfe\x00\x01", bytes(range(40)),
]

# (k, h, m, cohorts)
HASH_CASES = [
    (8, 1, 1, [0]),
    (16, 2, 8, [0, 7]),
    (32, 3, 64, [5, 63]),
    (64, 4, 2, [1]),
    (100, 5, 7, [3, 6]),
    (4096, 16, 256, [255]),
    (128, 2, 2**32, [2**32 - 1, 123456789]),
]

KEYS = [hashlib.sha256(b"rappor golden key %d" % i).digest()[: 16 + 8 * i] for i in range(3)]
CLIENT_IDS = ["client-0", "client-1", "alice", "bob@example.com", "ünïcødé", "", "x" * 100]
COHORT_COUNTS = [1, 2, 7, 64, 1000, 2**32]

# (k, h, m, f)
PRR_CASES = [(8, 2, 4, 0.5), (16, 2, 8, 0.25), (32, 2, 64, 0.5), (64, 3, 16, 0.75), (100, 4, 7, 0.999),
             (16, 2, 8, 0.0), (128, 2, 32, 0.123456789)]


def _write(name: str, header: list[str], rows: list[list[object]]) -> None:
    with (HERE / name).open("w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh, lineterminator="\n")
        writer.writerow(header)
        writer.writerows(rows)


def hashing_rows() -> list[list[object]]:
    rows: list[list[object]] = []
    for k, h, m, cohorts in HASH_CASES:
        params = Params(num_bloombits=k, num_hashes=h, num_cohorts=m, prob_p=0.25, prob_q=0.75, prob_f=0.5)
        for cohort in cohorts:
            for value in VALUES:
                idx = bloom_bit_indices(value, cohort, num_bloombits=k, num_hashes=h)
                bits = [0] * params.num_bloombits
                for j in idx:
                    bits[j] = 1
                rows.append([k, h, m, cohort, value_bytes(value).hex(), " ".join(map(str, idx)),
                             bits_to_bitstrings([bits])[0]])
    return rows


def client_rows() -> list[list[object]]:
    rows: list[list[object]] = []
    for key in KEYS:
        for cid in CLIENT_IDS:
            secret = client_secret(key, cid)
            for m in COHORT_COUNTS:
                rows.append([key.hex(), cid, secret.hex(), m, derive_cohort(secret, m)])
    return rows


def prr_rows() -> list[list[object]]:
    rows: list[list[object]] = []
    for i, (k, h, m, f) in enumerate(PRR_CASES):
        params = Params(num_bloombits=k, num_hashes=h, num_cohorts=m, prob_p=0.25, prob_q=0.75, prob_f=f)
        secret = hashlib.sha256(b"rappor golden secret %d" % i).digest()
        for cohort in sorted({0, m - 1, derive_cohort(secret, m)}):
            enc = Encoder(params, secret, cohort=cohort, rng=0)
            for value in VALUES:
                trace = enc.trace(value)
                rows.append([secret.hex(), k, h, m, repr(f), cohort, value_bytes(value).hex(),
                             bits_to_bitstrings(trace.bloom)[0], bits_to_bitstrings(trace.prr)[0]])
    return rows


def main() -> None:
    _write("hashing_vectors.csv", ["k", "h", "m", "cohort", "value_hex", "indices", "bloom"], hashing_rows())
    _write("client_vectors.csv", ["key_hex", "client_id", "secret_hex", "m", "cohort"], client_rows())
    _write("prr_vectors.csv", ["secret_hex", "k", "h", "m", "f", "cohort", "value_hex", "bloom", "prr"], prr_rows())


if __name__ == "__main__":
    main()
