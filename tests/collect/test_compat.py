"""rappor.collect._compat against google/rappor's own small collection (tests/data/google_rappor_small).

That collection was encoded by google/rappor's Python client and summarized by its own
tools (see its README), so every comparison below is with the reference implementation's
output, not with numbers computed here.
"""

from __future__ import annotations

import csv
import io
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.sparse.csgraph import maximum_flow

from rappor import (
    Decoder,
    InvalidParameterError,
    Params,
    hash_candidates,
)
from rappor.formats import read_candidates, read_counts, read_map, read_params
from rappor.collect._compat import (
    google_bloom_bits,
    google_bloom_bits_table,
    google_bloom_filter,
    google_effective_prob_f,
    google_prr,
    google_prr_batch,
    hash_candidates_google,
)
from rappor._util.bits import bits_to_bitstrings, bitstrings_to_bits
from rappor.cli._main import main
from rappor.formats._map import write_map_positions


@pytest.fixture
def interop_params(interop_dir: Path) -> Params:
    return read_params(interop_dir / "params.csv")


@pytest.fixture
def candidates(interop_dir: Path) -> list[str]:
    return read_candidates(interop_dir / "candidates.txt")


@pytest.fixture
def google_reports(interop_dir: Path) -> dict[str, list[str]]:
    with open(interop_dir / "reports.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    return {name: [row[name] for row in rows] for name in ("client", "cohort", "bloom", "prr", "irr")}


# --- Bloom hashing and map.csv ---------------------------------------------------------------------

def test_google_bloom_bits_table_writes_map_csv_byte_for_byte(interop_dir: Path, interop_params: Params,
                                                               candidates: list[str]) -> None:
    # google/rappor's hash_candidates.py writes, per candidate and cohort, the hashes in hash order
    # with Python's csv.writer defaults (CRLF line ends); doing the same with our table gives its file.
    k, m = interop_params.num_bloombits, interop_params.num_cohorts
    table = google_bloom_bits_table(candidates, interop_params)
    rows = (table + (np.arange(m) * k + 1)[None, :, None]).reshape(len(candidates), -1)
    buf = io.StringIO(newline="")
    writer = csv.writer(buf)
    for string, indices in zip(candidates, rows.tolist()):
        writer.writerow([string, *indices])
    assert buf.getvalue().encode() == (interop_dir / "map.csv").read_bytes()


def test_google_bloom_bits_agrees_with_table(interop_params: Params, candidates: list[str]) -> None:
    table = google_bloom_bits_table(candidates, interop_params)
    for s, value in enumerate(candidates[:5]):
        for cohort in range(interop_params.num_cohorts):
            np.testing.assert_array_equal(google_bloom_bits(value, cohort, interop_params), table[s, cohort])
            expected = np.zeros(interop_params.num_bloombits, dtype=np.uint8)
            expected[table[s, cohort]] = 1
            np.testing.assert_array_equal(google_bloom_filter(value, cohort, interop_params), expected)


def test_hash_candidates_cli_google_reproduces_map_csv(tmp_path: Path, interop_dir: Path) -> None:
    # The map.csv that google/rappor's own hash_candidates.py wrote (each cohort's hashes in hash
    # order, 80,80,91,81 in v1's row; CRLF line ends), byte for byte.
    out = tmp_path / "map.csv"
    assert main(["hash-candidates", "--hashing", "google", "--params", str(interop_dir / "params.csv"),
                 str(interop_dir / "candidates.txt"), "-o", str(out)]) == 0
    assert out.read_bytes() == (interop_dir / "map.csv").read_bytes()


def test_hash_candidates_cli_google_writes_blocks_in_order(tmp_path: Path, interop_dir: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    # Written a block of candidates at a time: blocks of 7 give the same file.
    monkeypatch.setattr("rappor.cli._hash_candidates.hash_block_size", lambda params: 7)
    out = tmp_path / "map.csv"
    assert main(["hash-candidates", "--hashing", "google", "--params", str(interop_dir / "params.csv"),
                 str(interop_dir / "candidates.txt"), "-o", str(out)]) == 0
    assert out.read_bytes() == (interop_dir / "map.csv").read_bytes()


def test_write_map_positions_fail_bit_outside_bloom_filter(tmp_path: Path, interop_params: Params) -> None:
    table = np.zeros((1, interop_params.num_cohorts, interop_params.num_hashes), dtype=np.int64)
    table[0, 3, 1] = interop_params.num_bloombits
    with pytest.raises(InvalidParameterError, match="bits in \\[0, 16\\)"):
        write_map_positions([(["v1"], table)], interop_params, tmp_path / "map.csv")
    assert not (tmp_path / "map.csv").exists()


def test_hash_candidates_cli_default_is_not_google(tmp_path: Path, interop_dir: Path,
                                                   interop_params: Params) -> None:
    # The option matters: our own hashing gives a different map for the same candidates.
    out = tmp_path / "map.csv"
    assert main(["hash-candidates", "--params", str(interop_dir / "params.csv"),
                 str(interop_dir / "candidates.txt"), "-o", str(out)]) == 0
    ours, theirs = read_map(out, interop_params), read_map(interop_dir / "map.csv", interop_params)
    assert (ours.matrix != theirs.matrix).nnz > 0


def test_hash_candidates_google_equals_hash_candidates_structure(interop_params: Params,
                                                                 candidates: list[str]) -> None:
    # Same CandidateMap layout as rappor.collect.hash_candidates: rows c*k + bit, one column per string.
    cmap = hash_candidates_google(candidates, interop_params)
    k = interop_params.num_bloombits
    table = google_bloom_bits_table(candidates, interop_params)
    dense = cmap.matrix.toarray()
    for s in range(len(candidates)):
        expected = np.zeros(dense.shape[0])
        for c in range(interop_params.num_cohorts):
            expected[c * k + table[s, c]] = 1.0
        np.testing.assert_array_equal(dense[:, s], expected)
    assert hash_candidates(candidates, interop_params).matrix.shape == cmap.matrix.shape


# --- reports.csv: Bloom filters and PRRs -------------------------------------------------------------

def test_reports_cohort_is_client_number_mod_m(google_reports: dict[str, list[str]],
                                               interop_params: Params) -> None:
    numbers = np.array([int(c[1:]) for c in google_reports["client"]])
    cohorts = np.array(google_reports["cohort"], dtype=np.int64)
    np.testing.assert_array_equal(cohorts, numbers % interop_params.num_cohorts)


def test_reports_bloom_is_a_candidate_bloom_and_matches_truth(interop_dir: Path, interop_params: Params,
                                                             candidates: list[str],
                                                             google_reports: dict[str, list[str]]) -> None:
    # Every bloom string must be google_bloom_filter(v, cohort) of some candidate v.  Several candidates
    # can share a Bloom filter in a cohort (k=16, h=2: 35 such groups here), so the per-client value is
    # not always determined; the exact check is then that the rows can be assigned to values so that
    # every value gets exactly its truth.csv count: a bipartite flow from the (cohort, bloom) groups,
    # each carrying its row count, to the values, each taking its true count, must saturate.
    k, m = interop_params.num_bloombits, interop_params.num_cohorts
    table = google_bloom_bits_table(candidates, interop_params)
    members: dict[tuple[int, str], list[int]] = defaultdict(list)
    for s in range(len(candidates)):
        bloom = np.zeros((m, k), dtype=np.uint8)
        bloom[np.arange(m)[:, None], table[s]] = 1
        for c, text in enumerate(bits_to_bitstrings(bloom)):
            members[(c, text)].append(s)
    groups = Counter(zip(map(int, google_reports["cohort"]), google_reports["bloom"]))
    unmatched = [g for g in groups if g not in members]
    assert unmatched == []

    with open(interop_dir / "truth.csv", newline="") as fh:
        truth = {row["string"]: int(row["count"]) for row in csv.DictReader(fh)}
    assert set(truth) <= set(candidates)
    assert sum(truth.values()) == len(google_reports["bloom"])
    # Nodes: 0 source, 1..G groups, G+1..G+S values, G+S+1 sink.
    group_list = list(groups)
    g_count, s_count = len(group_list), len(candidates)
    sink = g_count + s_count + 1
    src, dst, cap = [], [], []
    for gi, g in enumerate(group_list):
        src.append(0), dst.append(1 + gi), cap.append(groups[g])
        for s in members[g]:
            src.append(1 + gi), dst.append(1 + g_count + s), cap.append(len(google_reports["bloom"]))
    for s, value in enumerate(candidates):
        src.append(1 + g_count + s), dst.append(sink), cap.append(truth.get(value, 0))
    graph = sp.csr_matrix((np.array(cap, dtype=np.int32), (src, dst)), shape=(sink + 1, sink + 1))
    assert maximum_flow(graph, 0, sink).flow_value == len(google_reports["bloom"])

    # And the groups that name a single true value give that value's rows directly: none may exceed
    # the truth (a check that does not depend on the flow formulation).
    direct: Counter[str] = Counter()
    for g, n in groups.items():
        true_members = [candidates[s] for s in members[g] if candidates[s] in truth]
        assert true_members, f"group {g} holds only decoys"
        if len(true_members) == 1:
            direct[true_members[0]] += n
    assert all(direct[v] <= truth[v] for v in direct)


def test_google_prr_batch_reproduces_every_prr(interop_params: Params,
                                               google_reports: dict[str, list[str]]) -> None:
    k = interop_params.num_bloombits
    secrets = [client.encode() for client in google_reports["client"]]
    bloom = bitstrings_to_bits(google_reports["bloom"], k)
    prr = google_prr_batch(secrets, bloom, interop_params)
    assert bits_to_bitstrings(prr) == google_reports["prr"]
    # Bloom filters given as integers (character 0 = bit k-1, so the string is the binary numeral).
    as_ints = np.array([int(b, 2) for b in google_reports["bloom"]], dtype=np.int64)
    np.testing.assert_array_equal(google_prr_batch(secrets, as_ints, interop_params), prr)


def test_google_prr_single_reproduces_prr(interop_params: Params, google_reports: dict[str, list[str]]) -> None:
    k = interop_params.num_bloombits
    for i in range(0, len(google_reports["client"]), 997):
        secret = google_reports["client"][i].encode()
        bloom_text = google_reports["bloom"][i]
        expected = google_reports["prr"][i]
        by_int = google_prr(secret, int(bloom_text, 2), interop_params)
        by_bits = google_prr(secret, bitstrings_to_bits([bloom_text], k)[0], interop_params)
        assert bits_to_bitstrings(by_int[None, :])[0] == expected
        np.testing.assert_array_equal(by_bits, by_int)


def test_google_prr_differs_between_secrets(interop_params: Params) -> None:
    # Not a constant function of the Bloom filter: with f = 1/2 the chance that 8 secrets give the
    # same 16-bit PRR is negligible (each pair agrees on a bit with probability 5/8 at most).
    prrs = {google_prr(b"client-%d" % i, 0b1001, interop_params).tobytes() for i in range(8)}
    assert len(prrs) > 1


# --- f resolution -------------------------------------------------------------------------------------

@pytest.mark.parametrize(("prob_f", "expected"), [(0.0, 0.0), (0.5, 0.5), (0.25, 0.25), (1.0, 1.0),
                                                  (0.3, 39 / 128), (0.001, 1 / 128), (127.5 / 128, 1.0)])
def test_google_effective_prob_f(prob_f: float, expected: float) -> None:
    # #{r in 0..127 : r < 128 f} / 128, counted by hand: 0.3 * 128 = 38.4 -> r = 0..38 -> 39 values.
    assert google_effective_prob_f(prob_f) == expected


def test_google_prr_mask_rate_is_effective_f() -> None:
    # f = 0.3 -> effective 39/128: bits replaced by uniform noise.  With an all-zero Bloom filter a PRR
    # bit is 1 with probability f_eff / 2 = 0.15234 (not 0.15).  n = 20000 clients x 32 bits; the
    # standard error of the rate is about 0.0014 (clients are independent, bits within a digest are
    # too), so 0.15 lies about 1.6 SE away and 5 SE bounds give a false failure below 1e-6.
    params = Params(num_bloombits=32, num_hashes=2, num_cohorts=1, prob_p=0.5, prob_q=0.75, prob_f=0.3)
    n = 20_000
    prr = google_prr_batch([b"s%d" % i for i in range(n)], np.zeros(n, dtype=np.int64), params)
    rate = prr.mean()
    se = np.sqrt(0.1523 * (1 - 0.1523) / prr.size)
    assert abs(rate - google_effective_prob_f(0.3) / 2) < 5 * se
    ones = np.ones((n, 32), dtype=np.uint8)
    prr_ones = google_prr_batch([b"s%d" % i for i in range(n)], ones, params)
    assert abs(prr_ones.mean() - (1 - google_effective_prob_f(0.3) / 2)) < 5 * se


# --- end to end ----------------------------------------------------------------------------------------

def test_decode_with_google_hashed_map_equals_decode_with_their_map(tmp_path: Path, interop_dir: Path,
                                                                    interop_params: Params) -> None:
    out = tmp_path / "map.csv"
    assert main(["hash-candidates", "--hashing", "google", "--params", str(interop_dir / "params.csv"),
                 str(interop_dir / "candidates.txt"), "-o", str(out)]) == 0
    counts = read_counts(interop_dir / "counts.csv", interop_params)
    ours = Decoder().decode(counts, read_map(out, interop_params))
    theirs = Decoder().decode(counts, read_map(interop_dir / "map.csv", interop_params))
    assert ours.strings == theirs.strings
    for name in ("estimate", "std_error", "proportion", "pvalue", "significant", "group"):
        np.testing.assert_array_equal(getattr(ours, name), getattr(theirs, name))
    assert ours.significant.any()


# --- bad input -------------------------------------------------------------------------------------------

def test_google_prr_fail_more_than_32_bits() -> None:
    params = Params(num_bloombits=64, num_hashes=2, num_cohorts=1, prob_p=0.5, prob_q=0.75, prob_f=0.5)
    with pytest.raises(InvalidParameterError, match=r"num_bloombits <= 32 .*Got num_bloombits=64"):
        google_prr(b"secret", 1, params)


def test_google_bloom_bits_fail_more_than_16_hashes() -> None:
    params = Params(num_bloombits=64, num_hashes=17, num_cohorts=1, prob_p=0.5, prob_q=0.75, prob_f=0.5)
    with pytest.raises(InvalidParameterError, match=r"num_hashes <= 16"):
        google_bloom_bits("v", 0, params)
    with pytest.raises(InvalidParameterError, match=r"num_hashes <= 16"):
        hash_candidates_google(["v"], params)


def test_google_bloom_bits_fail_cohort_out_of_range(interop_params: Params) -> None:
    with pytest.raises(InvalidParameterError, match=r"'cohort'"):
        google_bloom_bits("v", interop_params.num_cohorts, interop_params)


def test_google_prr_fail_str_secret_without_echoing_it(interop_params: Params) -> None:
    with pytest.raises(InvalidParameterError, match=r"'secret' parameter of google_prr must be bytes") as info:
        google_prr("topsecret", 1, interop_params)  # type: ignore[arg-type]
    assert "topsecret" not in str(info.value)


@pytest.mark.parametrize("bloom", [-1, 2**16, [0, 1, 2] + [0] * 13, [1] * 15])
def test_google_prr_fail_bad_bloom(interop_params: Params, bloom: object) -> None:
    with pytest.raises(InvalidParameterError, match=r"'bloom' parameter of google_prr"):
        google_prr(b"c1", bloom, interop_params)  # type: ignore[arg-type]


def test_google_prr_batch_fail_length_mismatch(interop_params: Params) -> None:
    with pytest.raises(InvalidParameterError, match=r"one Bloom filter per secret \(2\)\. Got 1"):
        google_prr_batch([b"a", b"b"], [3], interop_params)


def test_hash_candidates_cli_fail_unknown_hashing(interop_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["hash-candidates", "--hashing", "md5", "--params", str(interop_dir / "params.csv"),
              str(interop_dir / "candidates.txt")])
    assert info.value.code == 2
    assert "invalid choice" in capsys.readouterr().err


def test_google_bits_with_k_of_256_and_more_are_the_digest_bytes() -> None:
    # Found by a tester: k >= 256 raised OverflowError (a uint8 byte mod a Python int 256 in numpy 2).
    # A byte mod k >= 256 is the byte itself: only bits below 256 are reachable, as google/rappor's.
    import hashlib

    from rappor import Params
    from rappor.collect import google_bloom_bits_table, google_bloom_filter

    for k in (256, 300):
        params = Params(num_bloombits=k, num_hashes=2, num_cohorts=4, prob_p=0.5, prob_q=0.75, prob_f=0.5)
        table = google_bloom_bits_table(["a", "b"], params)
        for s, value in enumerate(["a", "b"]):
            for c in range(4):
                digest = hashlib.md5(c.to_bytes(4, "big") + value.encode()).digest()  # uint32_be(cohort) || value
                assert table[s, c].tolist() == [digest[0], digest[1]]
        assert set(google_bloom_filter("a", 0, params).nonzero()[0]) == set(table[0, 0].tolist())
