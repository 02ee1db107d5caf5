"""Secrets never leak, and the real client draws its noise from the OS CSPRNG.

A full run (keygen -> encode -> sum-bits -> decode) and the Python API (reprs, str,
exceptions, warnings, logging) are searched for the key and for every derived client
secret, raw and in hexadecimal; none may appear anywhere.
"""

from __future__ import annotations

import base64
import logging
import os
import pickle
import random
import warnings
from pathlib import Path

import numpy as np
import pytest

import rappor
from rappor import Encoder, InsecureKeyFileWarning, Params
from rappor.cli._main import build_parser, main
from rappor.client import client_secret, encode_clients
from rappor.formats._keys import read_key_file, write_key_file

PARAMS = Params(num_bloombits=16, num_hashes=2, num_cohorts=4, prob_p=0.5, prob_q=0.75, prob_f=0.5)
PARAMS_CSV = "k,h,m,p,q,f\n16,2,4,0.5,0.75,0.5\n"
CLIENTS = [f"user{i}" for i in range(30)]


def _forms(secret: bytes) -> list[bytes]:
    """Every way a secret could be printed: raw, hex (both cases), base64, Python repr."""
    return [secret, secret.hex().encode(), secret.hex().upper().encode(), base64.b64encode(secret),
            repr(secret).encode()[2:-1]]


def _assert_clean(blob: bytes, secrets: list[bytes], where: str) -> None:
    for secret in secrets:
        for form in _forms(secret):
            assert form not in blob, f"a secret appears in {where}"


def _all_files(root: Path) -> dict[str, bytes]:
    return {str(p): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def test_secrets_full_cli_run_leaks_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                            caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    key_path = tmp_path / "secret" / "key"
    key_path.parent.mkdir()
    work = tmp_path / "work"
    work.mkdir()
    (work / "params.csv").write_text(PARAMS_CSV)
    (work / "in.csv").write_text("client,value\n" + "".join(f"{c},v{i % 3}\n" for i, c in enumerate(CLIENTS * 3)))
    (work / "cands.txt").write_text("v0\nv1\nv2\nv3\n")
    assert main(["keygen", "-o", str(key_path)]) == 0
    key = read_key_file(key_path)
    secrets = [key] + [client_secret(key, c) for c in CLIENTS]
    runs = [
        ["encode", "--params", str(work / "params.csv"), "--key-file", str(key_path), str(work / "in.csv"),
         "-o", str(work / "reports.csv")],
        ["encode", "--params", str(work / "params.csv"), "--key-file", str(key_path), str(work / "in.csv")],
        ["sum-bits", "--params", str(work / "params.csv"), str(work / "reports.csv"), "-o", str(work / "counts.csv")],
        ["hash-candidates", "--params", str(work / "params.csv"), str(work / "cands.txt"), "-o", str(work / "map.csv")],
        # Failing runs: their messages must not show the key either.
        ["encode", "--params", str(work / "params.csv"), "--key-file", str(work / "in.csv"), str(work / "in.csv")],
        ["encode", "--params", str(work / "reports.csv"), "--key-file", str(key_path), str(work / "in.csv")],
    ]
    if "decode" in _commands():
        runs.append(["decode", "--params", str(work / "params.csv"), "--counts", str(work / "counts.csv"),
                     "--map", str(work / "map.csv"), "-o", str(work / "results.csv"), "--all",
                     "--summary", str(work / "summary.json")])
    os.chmod(key_path, 0o644)  # world-readable: the warning must name the file, not its content
    chunks: list[bytes] = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for argv in runs:
            main(argv)
            captured = capsys.readouterr()
            chunks += [captured.out.encode(), captured.err.encode()]
    chunks += [str(w.message).encode() for w in caught]
    chunks += [r.getMessage().encode() for r in caplog.records]
    assert b"can be read by every user" in b"".join(chunks)  # the insecure-key warning did fire
    assert (work / "reports.csv").exists() and (work / "counts.csv").exists()
    _assert_clean(b"\n".join(chunks), secrets, "stdout/stderr/warnings/logs")
    for name, data in _all_files(work).items():
        _assert_clean(data, secrets, name)


def _commands() -> set[str]:
    parser = build_parser()
    sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    return set(sub.choices)  # type: ignore[attr-defined]


def test_secrets_python_api_leaks_nothing(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    key = bytes(range(7, 39))
    secret = client_secret(key, "alice")
    secrets = [key, secret]
    texts: list[str] = []
    enc = Encoder(PARAMS, secret, rng=0)
    trace = enc.trace("v1")
    report = enc.encode("v1")
    batch = enc.encode_batch(["v1", "v2"])
    clients = encode_clients(PARAMS, key, ["alice", "bob"], ["v1", "v2"], rng=0)
    texts += [repr(enc), str(enc), repr(trace), repr(report), repr(batch), repr(clients), format(enc),
              repr(Encoder(PARAMS, secret))]
    # Errors raised with the secret in hand.
    attempts = [
        lambda: Encoder(PARAMS, secret[:10]),
        lambda: Encoder(PARAMS, secret, cohort=99),
        lambda: Encoder(PARAMS, secret.hex()),  # type: ignore[arg-type]
        lambda: pickle.dumps(enc),
        lambda: enc.encode(12345),  # type: ignore[arg-type]
        lambda: client_secret(key[:5], "alice"),
        lambda: encode_clients(PARAMS, key, ["a"], ["v", "w"]),
        lambda: encode_clients(PARAMS, key, [b"raw"], ["v"]),  # type: ignore[list-item]
    ]
    for attempt in attempts:
        with pytest.raises(Exception) as info:  # noqa: PT011 - any error type; we check its text
            attempt()
        texts += [str(info.value), repr(info.value), "".join(map(str, info.value.args))]
    assert not hasattr(enc, "__dict__")  # slots only: no attribute holds the raw secret
    texts += [repr(getattr(enc, name, None)) for name in dir(enc) if not name.startswith("__")]
    texts += [r.getMessage() for r in caplog.records]
    _assert_clean("\n".join(texts).encode(), secrets, "the Python API's text")


def test_secrets_world_readable_key_file_warns(tmp_path: Path) -> None:
    path = tmp_path / "key"
    write_key_file(path, bytes(range(32)))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert read_key_file(path) == bytes(range(32))  # 0600: silent
    os.chmod(path, 0o644)
    with pytest.warns(InsecureKeyFileWarning, match="can be read by every user") as record:
        read_key_file(path)
    _assert_clean(str(record[0].message).encode(), [bytes(range(32))], "the warning")
    # Any access beyond the owner's warns: group-readable, and writable by others (a
    # replaced key would silently change every client's cohort and PRR).
    for mode, says in ((0o640, "can be read by its group"), (0o602, "can be changed by every user"),
                       (0o620, "can be changed by its group"), (0o666, "can be read and changed by every user")):
        os.chmod(path, mode)
        with pytest.warns(InsecureKeyFileWarning, match=says):
            read_key_file(path)


def test_secrets_keygen_file_is_private(tmp_path: Path) -> None:
    assert main(["keygen", "-o", str(tmp_path / "key")]) == 0
    assert (os.stat(tmp_path / "key").st_mode & 0o777) == 0o600


# ---------------------------------------------------------------- randomness of the real client

class _Forbidden(Exception):
    pass


def _forbid(*args: object, **kwargs: object) -> None:
    raise _Forbidden("a seeded or global generator was used on the real client path")


@pytest.fixture
def no_weak_randomness(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Make numpy's and the stdlib's generators raise; count bytes read from os.urandom."""
    # (Generator and SeedSequence stay: isinstance checks need the classes; nothing can build one.)
    for name in ("default_rng", "RandomState", "PCG64", "MT19937", "Philox", "SFC64", "seed", "random",
                 "rand", "randint", "integers", "bytes", "binomial", "uniform", "choice", "get_state"):
        if hasattr(np.random, name):
            monkeypatch.setattr(np.random, name, _forbid)
    for name in ("random", "getrandbits", "randint", "randrange", "randbytes", "seed", "choice", "Random",
                 "SystemRandom", "uniform"):
        if hasattr(random, name):
            monkeypatch.setattr(random, name, _forbid)
    used: list[int] = []
    real_urandom = os.urandom

    def counting_urandom(n: int) -> bytes:
        used.append(n)
        return real_urandom(n)

    monkeypatch.setattr(os, "urandom", counting_urandom)
    return used


def test_secrets_encoder_uses_only_os_csprng(no_weak_randomness: list[int]) -> None:
    enc = Encoder(PARAMS, bytes(range(32)))
    report = enc.encode("v1")
    batch = enc.encode_batch(["v1", "v2", "v3"])
    clients = encode_clients(PARAMS, bytes(range(32)), ["a", "b"], ["v1", "v2"])
    assert report.num_bloombits == 16 and len(batch) == 3 and len(clients) == 2
    # One uint32 per bit per report: 4 bytes x 16 bits for 1, 3 and 2 reports.
    assert sum(no_weak_randomness) == 4 * 16 * (1 + 3 + 2)


def test_secrets_encode_command_uses_only_os_csprng(tmp_path: Path, no_weak_randomness: list[int],
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "params.csv").write_text(PARAMS_CSV)
    (tmp_path / "in.csv").write_text("client,value\na,v1\nb,v2\nc,v1\n")
    write_key_file(tmp_path / "key", bytes(range(32)))
    assert main(["encode", "--params", str(tmp_path / "params.csv"), "--key-file", str(tmp_path / "key"),
                 str(tmp_path / "in.csv"), "-o", str(tmp_path / "r.csv"), "--jobs", "1"]) == 0
    assert sum(no_weak_randomness) == 4 * 16 * 3
    assert main(["keygen", "-o", str(tmp_path / "key2")]) == 0
    assert no_weak_randomness[-1] == 32


def test_secrets_weak_randomness_guard_is_effective(no_weak_randomness: list[int]) -> None:
    """The guard itself works: a seeded encoder is caught (so the tests above can fail)."""
    with pytest.raises(_Forbidden):
        Encoder(PARAMS, bytes(range(32)), rng=0)
    with pytest.raises(_Forbidden):
        rappor.simulation.simulate_reports(PARAMS, ["v"], [0], [0])
