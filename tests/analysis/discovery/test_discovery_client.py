"""The discovery client's batch path and its file and command-line forms agree bit for bit with DiscoveryEncoder."""

from __future__ import annotations

import csv
import hashlib
import hmac
import math
from pathlib import Path

import numpy as np
import pytest

from rappor import Encoder, Params, write_key_file
from rappor._util.csv_text import csv_field
from rappor.cli import main
from rappor.analysis.discovery import DiscoverySpec
from rappor.analysis.discovery._client import (
    DiscoveryEncoder,
    discovery_cohort,
    discovery_role,
    discovery_roles,
    discovery_slot,
    encode_discovery_clients,
)
from rappor.client import client_secret
from rappor.exceptions import InvalidParameterError
from rappor.formats import write_discovery_params, write_params
from rappor.formats import read_reports
from rappor.client._hashing import split_bit_indices
from rappor.client._reports import ReportBatch

KEY = bytes(range(40, 72))
#: Values of every kind a client may hold: short, exactly a slot's length, longer than
#: max_length, empty, multi-byte UTF-8, with a comma, a quote and a line break.
VALUES = ["a", "ab", "abc", "example.com", "x" * 40, "", "日本語のサイト.jp", "evil\nline.com", 'a,"b"', "\x00\x7f"]


def _spec(h: int = 1, p: float = 0.0, q: float = 1.0, m: int = 4) -> DiscoverySpec:
    params = Params(num_bloombits=64, num_hashes=h, num_cohorts=m, prob_p=p, prob_q=q,
                    prob_f=2.0 / (1.0 + math.exp(2.0)))
    return DiscoverySpec(params=params, max_length=12, segment=2)


def _rows(n: int) -> tuple[list[str], list[str]]:
    # Repeated clients (one report per row), values cycling through VALUES.
    ids = [f"c{i % (n - 3)}" for i in range(n)]
    return ids, [VALUES[i % len(VALUES)] for i in range(n)]


@pytest.mark.parametrize(("h", "p", "q"), [(1, 0.0, 1.0), (1, 0.25, 0.75), (2, 0.5, 0.75), (3, 0.1, 0.9)])
def test_batch_equals_one_encoder_per_row(h: int, p: float, q: float) -> None:
    spec = _spec(h, p, q)
    ids, values = _rows(200)
    batch = encode_discovery_clients(spec, KEY, ids, values, rng=np.random.default_rng(5))
    rng = np.random.default_rng(5)  # the encoders draw the same noise, row after row
    for i, (cid, value) in enumerate(zip(ids, values)):
        report = DiscoveryEncoder(spec, client_secret(KEY, cid), rng=rng).encode(value)
        assert batch.cohorts[i] == report.cohort
        assert np.array_equal(batch[i].bits, report.bits), (i, value)
    assert batch.params == spec.wire_params


def test_split_bit_indices_equal_the_servers_split_hash() -> None:
    spec = _spec(h=3, m=8)
    values = [v.encode("utf-8") for v in VALUES]
    for slot in range(spec.levels):
        table = spec.bloom_bits(values, slot)  # (values, cohorts, hashes): every cohort at once
        heads, tails = zip(*(spec.split(v, slot) for v in values))
        for cohort in range(8):
            seeds = [spec.wire_cohort(slot, cohort)] * len(values)
            got = split_bit_indices(heads, tails, seeds, num_bloombits=64, num_hashes=3)
            assert np.array_equal(got, table[:, cohort, :])


def test_slot_cohort_and_role_follow_the_specification() -> None:
    # D = HMAC-SHA256(secret, "rappor/discovery/client"); U_j = bytes 8j..8j+7 big-endian.
    secret = b"s" * 32
    d = hmac.digest(secret, b"rappor/discovery/client", "sha256")
    u = [int.from_bytes(d[8 * j:8 * j + 8], "big") for j in range(3)]
    assert discovery_slot(secret, 16) == (u[0] * 16) >> 64
    assert discovery_cohort(secret, 32) == (u[1] * 32) >> 64
    assert discovery_role(secret, 0.75) == (u[2] < round(0.75 * 2**64))
    enc = DiscoveryEncoder(DiscoverySpec(params=_spec(m=32).params, max_length=30), secret)
    assert (enc.slot, enc.cohort) == (discovery_slot(secret, 16), discovery_cohort(secret, 32))


def test_roles_of_a_batch_equal_each_clients_role() -> None:
    ids = [f"client {i}" for i in range(300)] + ["client 7"]
    roles = discovery_roles(KEY, ids, 0.6)
    assert roles.tolist() == [discovery_role(client_secret(KEY, c), 0.6) for c in ids]
    assert 0.6 * 300 - 5 * math.sqrt(300 * 0.24) < roles[:300].sum() < 0.6 * 300 + 5 * math.sqrt(300 * 0.24)


def test_batch_refuses_bad_input() -> None:
    spec = _spec()
    with pytest.raises(InvalidParameterError, match="length of client_ids"):
        encode_discovery_clients(spec, KEY, ["a"], ["x", "y"])
    with pytest.raises(InvalidParameterError, match="values.*UTF-8"):
        encode_discovery_clients(spec, KEY, ["a"], ["\ud800"])
    with pytest.raises(InvalidParameterError, match="DiscoverySpec"):
        encode_discovery_clients(spec.params, KEY, ["a"], ["x"])  # type: ignore[arg-type]
    with pytest.raises(InvalidParameterError, match="key"):
        encode_discovery_clients(spec, b"short", ["a"], ["x"])


def _read(path: Path, params: Params) -> tuple[list[str], ReportBatch]:
    with path.open(newline="") as fh:
        clients = [row[0] for row in csv.reader(fh)][1:]
    return clients, read_reports(path, params)


def _files(tmp_path: Path, spec: DiscoverySpec, rows: list[tuple[str, str]]) -> tuple[Path, Path, Path]:
    tmp_path.mkdir(parents=True, exist_ok=True)
    key = tmp_path / "client.key"
    write_key_file(key, KEY)
    dparams = tmp_path / "disc-params.csv"
    write_params(spec.params, dparams)
    values = tmp_path / "values.csv"
    values.write_bytes(("client,value\n" + "".join(f"{csv_field(c)},{csv_field(v)}\n" for c, v in rows)).encode())
    return key, dparams, values


def test_cli_encode_discovery_equals_discovery_encoder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = _spec(h=1, p=0.25, q=0.75)
    ids, values = _rows(300)
    key, dparams, inp = _files(tmp_path, spec, list(zip(ids, values)))
    out = tmp_path / "disc-reports.csv"
    assert main(["encode", "--discovery-params", str(dparams), "--max-length", "12", "--key-file", str(key),
                 str(inp), "-o", str(out), "--seed", "9", "--jobs", "1"]) == 0
    assert "NOT private" in capsys.readouterr().err  # --seed: numpy noise, announced
    clients, batch = _read(out, spec.wire_params)
    assert clients == ids
    # One chunk: its noise is the stream of SeedSequence(9, spawn_key=(0,)) (rappor.file_encoder._chunk_rng).
    rng = np.random.default_rng(np.random.SeedSequence(9, spawn_key=(0,)))
    for i, (cid, value) in enumerate(zip(ids, values)):
        report = DiscoveryEncoder(spec, client_secret(KEY, cid), rng=rng).encode(value)
        assert batch.cohorts[i] == report.cohort and np.array_equal(batch[i].bits, report.bits)


def test_cli_encode_client_split(tmp_path: Path) -> None:
    # Without instantaneous noise, each report is its client's PRR: comparable whatever the noise stream.
    spec = _spec()
    full = Params(num_bloombits=16, num_hashes=2, num_cohorts=8, prob_p=0.0, prob_q=1.0, prob_f=0.5)
    ids, values = _rows(400)
    key, dparams, inp = _files(tmp_path, spec, list(zip(ids, values)))
    write_params(full, tmp_path / "params.csv")
    assert main(["encode", "--params", str(tmp_path / "params.csv"), "--discovery-params", str(dparams),
                 "--max-length", "12", "--discovery-share", "0.6", "--key-file", str(key), str(inp),
                 "-o", str(tmp_path / "reports.csv"), "--discovery-output", str(tmp_path / "disc.csv")]) == 0
    full_ids, full_batch = _read(tmp_path / "reports.csv", full)
    disc_ids, disc_batch = _read(tmp_path / "disc.csv", spec.wire_params)
    roles = dict(zip(ids, discovery_roles(KEY, ids, 0.6).tolist()))
    assert len(full_ids) + len(disc_ids) == len(ids)
    assert all(roles[c] for c in disc_ids) and not any(roles[c] for c in full_ids)
    expect_full = [(c, v) for c, v in zip(ids, values) if not roles[c]]
    expect_disc = [(c, v) for c, v in zip(ids, values) if roles[c]]
    assert [c for c, _ in expect_full] == full_ids and [c for c, _ in expect_disc] == disc_ids
    for i, (cid, value) in enumerate(expect_full):
        assert np.array_equal(full_batch[i].bits, Encoder(full, client_secret(KEY, cid)).encode(value).bits)
    for i, (cid, value) in enumerate(expect_disc):
        report = DiscoveryEncoder(spec, client_secret(KEY, cid)).encode(value)
        assert disc_batch.cohorts[i] == report.cohort and np.array_equal(disc_batch[i].bits, report.bits)


def test_cli_layout_travels_in_the_parameters_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # The file holds the slot weights: encode and discover need no layout flag, a contradicting flag is refused.
    weighted = DiscoverySpec(params=_spec(m=8).params, max_length=12, segment=2, slot_weights=(5, 5, 4, 3, 1, 1, 1))
    ids, values = _rows(120)
    key, dparams, inp = _files(tmp_path, weighted, list(zip(ids, values)))
    write_discovery_params(weighted, dparams)
    out = tmp_path / "disc-reports.csv"
    assert main(["encode", "--discovery-params", str(dparams), "--key-file", str(key), str(inp), "-o", str(out)]) == 0
    _, batch = _read(out, weighted.wire_params)
    for i, (cid, value) in enumerate(zip(ids, values)):
        report = DiscoveryEncoder(weighted, client_secret(KEY, cid)).encode(value)
        assert batch.cohorts[i] == report.cohort and np.array_equal(batch[i].bits, report.bits)
    repeated = ["--max-length", "12", "--segment", "2", "--slot-weights", "5,5,4,3,1,1,1"]
    assert main(["encode", "--discovery-params", str(dparams), "--key-file", str(key), str(inp), "-o",
                 str(tmp_path / "again.csv"), *repeated]) == 0  # repeating the file's layout is allowed
    for flag, value in (("--slot-weights", "1,1,1,1,1,1,1"), ("--max-length", "30"), ("--segment", "1")):
        assert main(["discover", "--params", str(dparams), "--reports", str(out), "-o", str(tmp_path / "f.csv"),
                     flag, value]) == 2
        err = capsys.readouterr().err
        assert f"argument {flag}" in err and "contradicts" in err and "Traceback" not in err
    assert main(["discover", "--params", str(dparams), "--reports", str(out), "-o", str(tmp_path / "f.csv"),
                 "--quiet"]) == 0


@pytest.mark.parametrize(("extra", "message"), [
    ([], "one of --params or --discovery-params"),
    (["--discovery-params", "{d}/disc-params.csv", "--discovery-share", "0.5"], "--discovery-share needs both"),
    (["--params", "{d}/disc-params.csv", "--discovery-params", "{d}/disc-params.csv"], "needs --discovery-output"),
    (["--discovery-params", "{d}/disc-params.csv", "--bool", "x"], "--bool and --discovery-params"),
])
def test_cli_encode_discovery_refuses_bad_options(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                  extra: list[str], message: str) -> None:
    key, _, inp = _files(tmp_path, _spec(), [("a", "b")])
    args = [a.format(d=tmp_path) for a in extra]
    assert main(["encode", "--key-file", str(key), str(inp), "-o", str(tmp_path / "out.csv"), *args]) == 1
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
    assert not (tmp_path / "out.csv").exists()
    secret = hashlib.sha256(KEY).hexdigest()
    assert secret not in err


def test_slot_weights_set_each_slots_share() -> None:
    params = _spec().params
    plain = DiscoverySpec(params=params, max_length=12, segment=2)
    ones = DiscoverySpec(params=params, max_length=12, segment=2, slot_weights=(1,) * 7)
    weights = (5, 5, 4, 3, 1, 1, 1)
    weighted = DiscoverySpec(params=params, max_length=12, segment=2, slot_weights=weights)
    words = [int.from_bytes(hashlib.sha256(str(i).encode()).digest()[:8], "big") for i in range(20_000)]
    assert [plain.slot_of_word(w) for w in words] == [ones.slot_of_word(w) for w in words]
    counts = np.bincount([weighted.slot_of_word(w) for w in words], minlength=7)
    expect = 20_000 * np.array(weights) / sum(weights)
    assert np.all(np.abs(counts - expect) < 5 * np.sqrt(expect))  # 5 binomial standard errors at most
    # The batch path and the one-client encoder agree under weights too.
    ids, values = _rows(200)
    batch = encode_discovery_clients(weighted, KEY, ids, values)
    for i, (cid, value) in enumerate(zip(ids, values)):
        report = DiscoveryEncoder(weighted, client_secret(KEY, cid)).encode(value)
        assert batch.cohorts[i] == report.cohort and np.array_equal(batch[i].bits, report.bits)
    with pytest.raises(InvalidParameterError, match="slot_weights"):
        DiscoverySpec(params=params, max_length=12, segment=2, slot_weights=(1, 2))


@pytest.mark.parametrize("size", [1, 2, 7, 16, 32, 512, 2**20 + 3, 2**31 - 1])
def test_scale_words_is_the_exact_integer_quotient(size: int) -> None:
    from rappor.analysis.discovery._spec import scale_words

    edges = [0, 1, 2**32 - 1, 2**32, 2**63, 2**64 - 1, 2**64 - 2**32, 2**64 - 2**32 - 1]
    words = edges + [int.from_bytes(hashlib.sha256(str(i).encode()).digest()[:8], "big") for i in range(2000)]
    got = scale_words(np.array(words, dtype=np.uint64), size)
    assert got.tolist() == [(w * size) >> 64 for w in words]


def test_vectorized_slots_equal_slot_of_word() -> None:
    params = _spec().params
    words = [int.from_bytes(hashlib.sha256(str(i).encode()).digest()[:8], "big") for i in range(5000)]
    words += [0, 2**64 - 1]
    arr = np.array(words, dtype=np.uint64)
    for weights in (None, (5, 5, 4, 3, 1, 1, 1), (1, 2**20, 1, 7, 2**20, 3, 1)):
        spec = DiscoverySpec(params=params, max_length=12, segment=2, slot_weights=weights)
        assert spec.slots_of_words(arr).tolist() == [spec.slot_of_word(w) for w in words]
    # Weights summing past 2**31 take the exact Python-integer path.
    many = DiscoverySpec(params=params, max_length=4096, segment=2, slot_weights=(2**20,) * 2049)
    assert many.slots_of_words(arr[:300]).tolist() == [many.slot_of_word(w) for w in words[:300]]


@pytest.mark.parametrize("h", [1, 2, 3])
@pytest.mark.parametrize("f", [0.0, 1e-9, 0.2384, 0.5, 1.0])
def test_prr_from_indices_equals_the_bloom_matrix_rule(h: int, f: float) -> None:
    from rappor.client._randomizer import permanent_response_from_indices, permanent_response_from_words

    rng = np.random.default_rng(3)
    n, k = 400, 64
    indices = rng.integers(0, k, size=(n, h))  # repeated indices in a row are allowed (h > 1)
    words = rng.integers(0, 2**32, size=(n, k), dtype=np.uint32)
    words[0, :] = 2**32 - 1  # the extreme words: above 2t and below t
    words[1, :] = 0
    bloom = np.zeros((n, k), dtype=np.uint8)
    bloom[np.arange(n)[:, None], indices] = 1
    expect = permanent_response_from_words(bloom, words, f)
    assert np.array_equal(permanent_response_from_indices(indices, words, f), expect)
    big_endian = words.astype(">u4")  # the client hands the SHAKE stream over as big-endian words
    assert np.array_equal(permanent_response_from_indices(indices, big_endian, f), expect)


def test_roles_at_the_edges_of_the_share() -> None:
    ids = [f"client {i}" for i in range(100)]
    assert discovery_roles(KEY, ids, 1.0).all()
    assert not discovery_roles(KEY, ids, 0.0).any()


def test_cli_encode_discovery_warns_of_what_discovery_cannot_use(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """An empty value, a value over max_length and a client with two rows are encoded and counted aloud.

    Discovery cannot find an empty value or confirm one longer than max_length, and its
    accounting is for one report a client: each is named with its count (they were accepted
    silently), and the reports are written all the same (one per row).
    """
    spec = _spec(h=1, p=0.25, q=0.75)
    rows = [("a", "x"), ("a", "y"), ("b", ""), ("c", "z" * 13), ("d", "hello"), ("e", "w" * 13)]
    key, dparams, inp = _files(tmp_path, spec, rows)
    out = tmp_path / "disc-reports.csv"
    assert main(["encode", "--discovery-params", str(dparams), "--max-length", "12", "--key-file", str(key),
                 str(inp), "-o", str(out), "--jobs", "1"]) == 0
    err = capsys.readouterr().err
    assert f"{inp}: 1 empty value(s)" in err
    assert f"{inp}: 2 value(s) longer than max_length 12 bytes" in err
    assert f"{inp}: 1 row(s) repeat an earlier row's client" in err
    assert len(_read(out, spec.wire_params)[0]) == len(rows)
    key, dparams, inp = _files(tmp_path / "clean", spec, [("a", "x"), ("b", "y" * 12)])
    assert main(["encode", "--discovery-params", str(dparams), "--max-length", "12", "--key-file", str(key),
                 str(inp), "-o", str(out), "--jobs", "1"]) == 0
    assert "warning" not in capsys.readouterr().err  # 12 bytes fit; one row a client
