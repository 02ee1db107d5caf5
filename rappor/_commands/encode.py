"""Encode client values into RAPPOR reports.

INPUT is a CSV file with the header 'client,value', one row per report (a client
may appear several times).  Fields are used exactly as written (a space after a
comma is part of the value); quote fields that contain commas, quotes or newlines.

Each client's secret is derived from the key file and the client id (HMAC-SHA256,
see docs/client.md), so re-running the command gives every client the same cohort
and the same permanent randomized responses; only the instantaneous responses are
fresh.  The output CSV has the header 'client,cohort,irr', with 'irr' a
google/rappor bit string (character 0 = bit k-1).

With '--on-error skip' bad data rows are left out and written, with their line
numbers and reasons, to a rejects file (see docs/reliability.md).

Create a key with 'rappor keygen -o KEY'.
"""

from __future__ import annotations

import argparse
import itertools
import os
import sys
import warnings
from typing import Any

import numpy as np

from .._io import STDIO, atomic_output, csv_field, display_name
from .._rejects import RejectSink, RejectsWriter, resolve_rejects_path
from .._workers import WorkerPool
from ..exceptions import InsecureRandomnessWarning
from ..params import Params
from ._common import (CommandFiles, add_on_error_arguments, add_output_argument, add_params_argument, integer,
                      load_params)
from ._encode_input import iter_chunks

NAME = "encode"
HELP = "encode client values into reports (client,value -> client,cohort,irr)"
ORDER = 20

#: Rows encoded per vectorized call (bounds memory: about 100 bytes per row and bit).
CHUNK_ROWS = 65536

_SPECIAL = frozenset(',"\r\n')


def configure(parser: argparse.ArgumentParser) -> None:
    """Register the arguments of ``rappor encode``."""
    parser.add_argument("input", nargs="?", default="-", metavar="INPUT",
                        help="CSV with header 'client,value' ('-' for stdin) [default: stdin]")
    add_params_argument(parser)
    parser.add_argument("--key-file", required=True, metavar="KEY",
                        help="key file (hex text from 'rappor keygen'); client secrets are derived from it")
    add_output_argument(parser, help_text="output CSV 'client,cohort,irr' ('-' for stdout)")
    parser.add_argument("--seed", type=integer(0), default=None, metavar="INT",
                        help="draw the instantaneous noise from numpy's generator with this seed instead of "
                             "the operating system's CSPRNG: reproducible, NOT secure; for tests and "
                             "simulation only [default: none, the OS CSPRNG]")
    add_on_error_arguments(parser, kept="the good rows are encoded")
    parser.add_argument("--jobs", type=integer(1), default=None, metavar="N",
                        help="worker processes for large inputs [default: number of CPUs, at most 8]")


def files(args: argparse.Namespace) -> CommandFiles:
    """INPUT, ``--params`` and ``--key-file`` in; ``-o`` (and the rejects file with ``--on-error skip``) out."""
    outputs = [("-o", args.output)]
    if args.on_error == "skip":
        outputs.append(("--rejects", resolve_rejects_path(args.output, args.rejects, "reports")))
    return CommandFiles(inputs=[("INPUT", args.input), ("--params", args.params), ("--key-file", args.key_file)],
                        outputs=outputs)


def _default_jobs() -> int:
    try:
        return max(1, min(8, len(os.sched_getaffinity(0))))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, min(8, os.cpu_count() or 1))


_WORKER: dict[str, Any] = {}


def _init_worker(params: Params, key: bytes, seed: int | None) -> None:
    _WORKER.update(params=params, key=key, seed=seed)


def _encode_chunk(index: int, clients: list[str], values: list[str]) -> tuple[int, str]:
    """Encode one chunk; its number of rows and its rendered output rows (runs in a worker or inline)."""
    from ..encoder import encode_clients

    seed = _WORKER["seed"]
    # One generator per chunk, keyed by the chunk's index: the output for a given
    # --seed does not depend on --jobs.
    rng = None if seed is None else np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(index,)))
    batch = encode_clients(_WORKER["params"], _WORKER["key"], clients, values, rng=rng)
    # Client ids need quoting only if one holds a comma, quote or line break: checked once.
    names = clients if _SPECIAL.isdisjoint("".join(clients)) else [csv_field(c) for c in clients]
    return len(clients), "".join(map("{},{},{}\n".format, names, batch.cohorts.tolist(), batch.bitstrings()))


def run(args: argparse.Namespace) -> int:
    """Encode INPUT and write ``client,cohort,irr``."""
    from ..encoder import read_key_file

    params = load_params(args)
    key = read_key_file(args.key_file)
    if args.seed is not None:
        warnings.warn("--seed: the instantaneous noise comes from numpy's generator seeded with "
                      f"{args.seed}, not from the operating system's CSPRNG; these reports are NOT private "
                      "against anyone who knows or guesses the seed (use --seed for tests and simulation only)",
                      InsecureRandomnessWarning, stacklevel=2)
    jobs = _default_jobs() if args.jobs is None else args.jobs
    if args.on_error == "raise":
        _encode_file(args, params, key, jobs, None)
        return 0
    rejects_path = resolve_rejects_path(args.output, args.rejects, "reports")
    # Both files are committed only if the whole input was read: a fatal error leaves neither.
    # The rejects hold raw client values: readable by their owner only.
    with atomic_output(rejects_path, private=True) as fh:
        sink = RejectsWriter(fh)
        written = _encode_file(args, params, key, jobs, sink)
    where = display_name(rejects_path) if rejects_path != STDIO else "<stdout>"
    sys.stderr.write(f"rappor: skipped {sink.count} bad row(s); {written} reports written; "
                     f"rejected rows are in {where}\n")
    return 0


def _encode_file(args: argparse.Namespace, params: Params, key: bytes, jobs: int,
                 rejects: RejectSink | None) -> int:
    """Encode INPUT into OUTPUT (atomically); return the number of reports written.

    Rows are parsed (and rejected) in this process, in input order, so the output and
    the rejects do not depend on ``jobs``.
    """
    chunks = enumerate(iter_chunks(args.input, rejects, CHUNK_ROWS))
    written = 0
    with atomic_output(args.output) as out:
        head = list(itertools.islice(chunks, 2))
        todo = itertools.chain(head, chunks)
        out.write("client,cohort,irr\n")
        if len(head) < 2 or jobs == 1:
            # One chunk or one job: no worker processes.
            _init_worker(params, key, args.seed)
            try:
                for index, (clients, values) in todo:
                    size, text = _encode_chunk(index, clients, values)
                    out.write(text)
                    written += size
            finally:
                _WORKER.clear()
            return written
        with WorkerPool(jobs, _encode_chunk, setup=_init_worker, setup_args=(params, key, args.seed)) as pool:
            for size, text in pool.imap((index, clients, values) for index, (clients, values) in todo):
                out.write(text)
                written += size
    return written
