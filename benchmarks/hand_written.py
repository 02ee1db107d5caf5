"""Why three parts of rappor are written by hand instead of calling a library: the measurements.

Usage::

    python benchmarks/hand_written.py [--repeat 3]

Prints, each as the best of ``--repeat`` runs in CPU seconds (``time.process_time``, so a
busy machine moves the figures less than wall time would):

1. **MurmurHash3** (:func:`rappor.testing.murmur3_x64_128`): numpy's ``murmur3_x64_128`` over 20,000 keys x
   128 cohorts against a Python loop of ``mmh3.mmh3_x64_128_utupledigest`` calls into an
   array (what :func:`rappor.client.bloom_bits_table` did before), checked equal first.
2. **CSV row paths**: :func:`rappor.formats.read_map` (``--map`` candidates, 100,000 by default,
   k=128 m=128 h=2) with its string-method fast path against the same call forced through
   the csv module (:func:`rappor.testing.map_rows_through_csv_module`, as ``tests/test_fuzz.py``
   compares them); and the reports reader's numpy block parser against the csv module row by row
   (:func:`rappor.testing.parse_report_row` on every line), on 200,000 reports at k=32.
3. **Active-set QP** (:func:`rappor.testing.nonneg_fit`): least squares with ``w >= 0``
   and ``sum(w) <= 1`` on a 1,000-candidate design (k=16 m=64 h=2).
   ``scipy.optimize.lsq_linear`` only bounds each variable: the script shows the sum of
   its solution (above the cap) and both times, with and without the cap.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np


def best(fn: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    out, times = None, []
    for _ in range(repeat):
        start = time.process_time()
        out = fn()
        times.append(time.process_time() - start)
    return min(times), out


def murmur(repeat: int) -> None:
    import mmh3

    from rappor.testing import murmur3_x64_128

    keys = [f"https://example.com/page/{i}".encode() for i in range(20_000)]
    seeds = np.arange(128, dtype=np.int64)
    seed_list = seeds.tolist()
    digest = mmh3.mmh3_x64_128_utupledigest

    def loop() -> np.ndarray:
        return np.array([digest(k, s) for k in keys for s in seed_list], dtype=np.uint64).reshape(len(keys), 128, 2)

    t_loop, ref = best(loop, repeat)
    t_numpy, (h1, h2) = best(lambda: murmur3_x64_128(keys, seeds), repeat)
    assert np.array_equal(h1, ref[:, :, 0]) and np.array_equal(h2, ref[:, :, 1])
    print(f"murmur3 20,000 keys x 128 cohorts: mmh3 loop {t_loop:.3f} s, numpy {t_numpy:.3f} s "
          f"({t_loop / t_numpy:.1f}x)")


def hmac_paths(repeat: int) -> None:
    import hashlib
    import hmac

    from rappor.testing import hmac_sha256_many, keyed_hmac_sha256

    n = 65_536
    key, label = b"k" * 32, b"rappor/client/v1"
    ids = [f"client-{i:08d}".encode() for i in range(n)]
    keyed = hmac.new(key, label, hashlib.sha256)

    def copied() -> list[bytes]:
        out = []
        for cid in ids:
            mac = keyed.copy()
            mac.update(cid)
            out.append(mac.digest())
        return out

    t_std, secrets = best(copied, repeat)
    mac = keyed_hmac_sha256(key, label)
    t_ours, ours = best(lambda: list(map(mac, ids)), repeat)
    assert ours == secrets
    message = b"rappor/discovery/client"
    t_digest, ref = best(lambda: [hmac.digest(s, message, "sha256") for s in secrets], repeat)
    t_many, many = best(lambda: hmac_sha256_many(secrets, message), repeat)
    assert many == ref
    print(f"HMAC-SHA256, {n:,} clients: one key, hmac state copied {t_std / n * 1e6:.2f} us, keyed SHA-256 states "
          f"{t_ours / n * 1e6:.2f} us; a key per client, hmac.digest {t_digest / n * 1e6:.2f} us, pads batched "
          f"{t_many / n * 1e6:.2f} us")


def csv_paths(repeat: int, n_map: int) -> None:
    from rappor import Params, hash_candidates
    from rappor.formats import read_map, write_map
    from rappor.testing import bitstrings_to_bits, map_rows_through_csv_module, parse_report_block, parse_report_row

    params = Params(num_bloombits=128, num_hashes=2, num_cohorts=128, prob_p=0.5, prob_q=0.75, prob_f=0.5)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "map.csv"
        write_map(hash_candidates([f"https://example.com/candidate/{i}" for i in range(n_map)], params), path)
        t_fast, fast = best(lambda: read_map(path, params), repeat)
        with map_rows_through_csv_module():
            t_csv, slow = best(lambda: read_map(path, params), repeat)
    assert fast.strings == slow.strings and (fast.matrix != slow.matrix).nnz == 0
    print(f"read_map {n_map:,} candidates k=128 m=128 h=2: csv module {t_csv:.2f} s, fast path {t_fast:.2f} s "
          f"({t_csv / t_fast:.1f}x)")

    k, m, n = 32, 64, 200_000
    rparams = Params(num_bloombits=k, num_hashes=2, num_cohorts=m, prob_p=0.5, prob_q=0.75, prob_f=0.5)
    rng = np.random.default_rng(0)
    bits = rng.integers(0, 2, (n, k))
    lines = [f"c{i},{c},{''.join(map(str, row))}" for i, (c, row) in enumerate(zip(rng.integers(0, m, n), bits))]
    data = np.frombuffer(("\n".join(lines) + "\n").encode(), dtype=np.uint8)

    def slow_rows() -> tuple[np.ndarray, np.ndarray]:
        rows = [parse_report_row(text, rparams, 3, "<bench>", i) for i, text in enumerate(lines)]
        return np.array([c for c, _ in rows]), bitstrings_to_bits([irr for _, irr in rows], k)

    t_block, (cohorts, parsed) = best(lambda: parse_report_block(data, rparams, 3, "<bench>", 1), repeat)
    t_rows, (cohorts2, parsed2) = best(slow_rows, repeat)
    assert np.array_equal(cohorts, cohorts2) and np.array_equal(parsed, parsed2)
    print(f"reports CSV {n:,} rows k={k}: csv module row by row {t_rows:.2f} s, numpy block {t_block:.2f} s "
          f"({t_rows / t_block:.1f}x)")


def qp(repeat: int) -> None:
    from scipy.optimize import lsq_linear

    from rappor import Params, hash_candidates
    from rappor.testing import nonneg_fit

    params = Params(num_bloombits=16, num_hashes=2, num_cohorts=64, prob_p=0.5, prob_q=0.75, prob_f=0.5)
    s = 1_000
    a = hash_candidates([f"v{i}" for i in range(s)], params).matrix.tocsc()
    rng = np.random.default_rng(0)
    truth = np.zeros(s)
    truth[:100] = 1.0 / np.arange(1, 101)
    truth /= truth.sum()
    b = a @ truth + rng.normal(0.0, 0.05, a.shape[0])  # noisy enough that the plain fit overshoots
    t_qp, w = best(lambda: nonneg_fit(a, b, max_sum=1.0), repeat)
    t_free, w_free = best(lambda: nonneg_fit(a, b), repeat)
    t_trf, res = best(lambda: lsq_linear(a, b, bounds=(0.0, np.inf), method="trf"), repeat)
    print(f"non-negative least squares, {s:,} candidates: active-set QP {t_qp:.3f} s with sum(w) <= 1 "
          f"(sum {w.sum():.3f}), {t_free:.3f} s without the cap (sum {w_free.sum():.3f}); "
          f"lsq_linear (trf) {t_trf:.2f} s, sum {res.x.sum():.3f}, cannot take the cap, "
          f"max |w - QP's| {np.abs(res.x - w_free).max():.1e}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--map", type=int, default=100_000, help="candidates of the read_map comparison")
    args = parser.parse_args()
    murmur(args.repeat)
    hmac_paths(args.repeat)
    csv_paths(args.repeat, args.map)
    qp(args.repeat)


if __name__ == "__main__":
    main()
