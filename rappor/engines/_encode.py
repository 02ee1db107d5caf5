"""Encoding files of client values: :func:`encode_file` (``client,value`` in, ``client,cohort,irr`` out).

This module owns the batch encoding of files, which ``rappor encode`` runs: the input
is read in chunks by :func:`rappor.formats.iter_client_values`, each chunk
is encoded by :func:`rappor.client.encode_clients` (in worker processes,
:class:`rappor._util.workers.WorkerPool`, when asked), and the rows are written in input
order by :func:`rappor.formats._reports_csv.report_rows` into an atomic output.  The
output does not depend on the number of workers.

:func:`encode_variables_file` is the same pipeline for several variables per client
(``client,NAME1,NAME2,...`` in, ``client,cohort,NAME1,NAME2,...`` out: the reports file
of ``rappor decode-assoc``), with the same streaming, workers, rejects and atomic
output.
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import os
import warnings
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from .._util.csv_text import csv_field
from .._util.memory import check_encode
from .._util.outputs import atomic_output
from .._util.paths import PathLike, display_name
from .._util.rejects import OnError, RejectSink, check_on_error
from .._util.validation import check_int
from ..client import encode_clients
from ..formats._client_values import iter_client_values, iter_client_variables
from ..formats._reports_csv import HEADER, report_rows
from ..params import Params, boolean_params

if TYPE_CHECKING:
    from ..analysis.discovery._spec import DiscoverySpec

__all__ = ["encode_discovery_file", "encode_file", "encode_variables_file"]

#: Rows encoded per vectorized call, and per task of a worker, at most ...
CHUNK_ROWS = 65536
#: ... and at most this many report bits (rows x k) per call: a chunk takes about 16 bytes
#: per bit (:data:`rappor._util.memory.ENCODE_BYTES_PER_BIT`), so about 64 MiB whatever k is.
#: With 65,536 rows at any k, k = 4,096 needed 4 GB per worker and k = 2**32 was killed
#: by the kernel without a word.
CHUNK_BITS = 1 << 22
#: Rows per chunk of discovery reports, at most: at k = 256, chunks of 16,384 rows took twice
#: the page faults of 4,096 (110,000 against 45,000 for 200,000 reports; system time 0.24-0.43 s
#: against 0.13-0.18 s, user time alike).
DISCOVERY_CHUNK_ROWS = 4096


def chunk_rows(params: Params) -> int:
    """Rows per chunk at these parameters: :data:`CHUNK_ROWS`, fewer when ``k > 64``."""
    return max(1, min(CHUNK_ROWS, CHUNK_BITS // params.num_bloombits))


def default_jobs() -> int:
    """Worker processes used when none are asked for: the CPUs this process may run on, at most 8."""
    try:
        return max(1, min(8, len(os.sched_getaffinity(0))))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, min(8, os.cpu_count() or 1))


#: What :func:`_encode_chunk` needs, set once per process (a worker, or this one).
_WORKER: dict[str, Any] = {}


def _init_worker(params: Params | None, key: bytes, seed: int | None, names: Sequence[str] = (),
                 booleans: Sequence[str] = (), spec: DiscoverySpec | None = None, share: float | None = None) -> None:
    _WORKER.update(params=params, key=key, seed=seed, names=list(names), booleans=frozenset(booleans), spec=spec,
                   share=share)


def _chunk_rng(index: int, *spawn: int) -> np.random.Generator | None:
    """One generator per chunk (and variable), keyed by the chunk's index: the output for
    a given seed does not depend on the number of workers.  None: the OS CSPRNG."""
    seed = _WORKER["seed"]
    return None if seed is None else np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(index, *spawn)))


def _encode_chunk(index: int, clients: list[str], values: list[str]) -> tuple[int, str]:
    """Encode one chunk: its number of rows and its output rows (runs in a worker or inline)."""
    batch = encode_clients(_WORKER["params"], _WORKER["key"], clients, values, rng=_chunk_rng(index))
    return len(clients), report_rows(clients, batch)


def _encode_discovery_chunk(index: int, clients: list[str], values: list[str]) -> tuple[int, str, str]:
    """Encode one chunk with discovery: (rows, discovery report rows, full-string report rows).

    Without a share every row is a discovery report; with one, each client's role
    (:func:`rappor.discovery.client.discovery_roles`) picks its report.  The two kinds draw
    their noise from separate streams of the chunk.
    """
    from ..analysis.discovery._client import discovery_roles, encode_discovery_clients

    spec, share, key = _WORKER["spec"], _WORKER["share"], _WORKER["key"]
    if share is None:
        batch = encode_discovery_clients(spec, key, clients, values, rng=_chunk_rng(index))
        return len(clients), report_rows(clients, batch), ""
    roles = discovery_roles(key, clients, share).tolist()
    texts = []
    for kind, role in enumerate((True, False)):
        ids = [c for c, r in zip(clients, roles) if r is role]
        vals = [v for v, r in zip(values, roles) if r is role]
        if not ids:
            texts.append("")
        elif role:
            texts.append(report_rows(ids, encode_discovery_clients(spec, key, ids, vals, rng=_chunk_rng(index, kind))))
        else:
            texts.append(report_rows(ids, encode_clients(_WORKER["params"], key, ids, vals,
                                                         rng=_chunk_rng(index, kind))))
    return len(clients), texts[0], texts[1]


def _encode_variables_chunk(index: int, clients: list[str], columns: list[list[str]]) -> tuple[int, str]:
    """Encode one chunk of several variables: one report per variable per client, one row per client."""
    params: Params = _WORKER["params"]
    bitstrings = []
    cohorts: list[int] = []
    for j, (name, values) in enumerate(zip(_WORKER["names"], columns)):
        boolean = name in _WORKER["booleans"]
        batch = encode_clients(boolean_params(params) if boolean else params, _WORKER["key"], clients, values,
                               rng=_chunk_rng(index, j), variable=name, boolean=boolean)
        cohorts = batch.cohorts.tolist()  # the same for every variable: derived from the client's secret
        bitstrings.append(batch.bitstrings())
    ids = [csv_field(c) for c in clients]
    return len(clients), "".join(",".join(row) + "\n" for row in zip(ids, map(str, cohorts), *bitstrings))


def encode_file(input: PathLike, output: PathLike, params: Params, key: bytes, *,  # noqa: A002
                seed: int | None = None, jobs: int | None = 1, on_error: OnError = "raise",
                rejects: RejectSink | None = None, progress: Callable[[int], None] | None = None) -> int:
    """Encode a ``client,value`` CSV into a reports CSV ``client,cohort,irr``; return the reports written.

    Every row gives one report, ``encode_clients(params, key, [client], [value])``: the
    client's secret, cohort and permanent randomized responses derive from ``key`` and
    its id (HMAC-SHA256, see ``docs/client.md``), so encoding the file again gives the
    same cohorts and PRRs and fresh instantaneous responses.  Rows are read, checked
    (and rejected) in this process, in input order, so the output and the rejects do
    not depend on ``jobs``.

    Parameters
    ----------
    input : str or os.PathLike
        The ``client,value`` CSV (:mod:`rappor.formats`), or ``"-"`` for
        standard input.
    output : str or os.PathLike
        The reports CSV (:mod:`rappor.formats`), written atomically: it
        appears complete or not at all; ``"-"`` writes to standard output.
    params : Params
    key : bytes
        The collection's key, at least 16 bytes (:func:`rappor.formats.read_key_file`).
    seed : int or None, default=None
        ``None`` draws the instantaneous noise from the operating system's CSPRNG.  An
        int draws it from numpy's generator seeded with it (one stream per chunk of
        :func:`chunk_rows` rows): reproducible, and **not private** against anyone who
        knows or guesses the seed; for tests and simulation only.
    jobs : int or None, default=1
        Worker processes; ``None`` uses :func:`default_jobs`.  An input of one chunk is
        encoded in this process whatever ``jobs`` is.
    on_error : {"raise", "skip"}, default="raise"
        ``"skip"`` leaves bad data rows out and appends each to ``rejects`` (see
        :func:`rappor.formats.iter_client_values`).
    rejects : list or None, default=None
        Where skipped rows go; required with ``"skip"``.
    progress : callable or None, default=None
        Called with the number of rows of each chunk once it is written (a progress bar).

    Returns
    -------
    int
        The number of reports written.

    Raises
    ------
    ReportFormatError
        For a bad header, or a bad row with ``on_error="raise"`` (naming file and line).
    RapporIOError
        If the input cannot be read or the output cannot be written.
    InvalidParameterError
        For bad arguments (``jobs < 1``, a short key, ...).
    InsufficientMemoryError
        If even one report per process cannot fit in memory (``k = 2**32``), before
        anything is read.
    """
    sink = check_on_error(on_error, rejects, "encode_file")
    workers = default_jobs() if jobs is None else check_int(jobs, "jobs", "encode_file", low=1)
    if seed is not None:
        seed = check_int(seed, "seed", "encode_file", low=0)
    rows = chunk_rows(params)
    check_encode(params, rows, processes=workers)  # one report alone may not fit (k = 2**32)
    chunks = iter_client_values(input, chunk_size=rows, on_error=on_error, rejects=sink)
    return _encode_chunks(chunks, [output], lambda: HEADER, _encode_chunk, workers, (params, key, seed), progress)


def _encode_chunks(chunks: Iterator[tuple[list[str], Any]], outputs: Sequence[PathLike],
                   header: Callable[[], str], encode: Callable[..., tuple[Any, ...]], workers: int,
                   setup_args: tuple[Any, ...], progress: Callable[[int], None] | None = None) -> int:
    """Encode ``chunks`` with ``encode`` (inline or in ``workers`` processes) into the atomic ``outputs``.

    ``encode`` returns ``(rows, text, ...)``, one text per output; the outputs share
    ``header`` and are committed together, or none of them.
    """
    numbered = enumerate(chunks)
    written = 0
    with contextlib.ExitStack() as stack:
        outs = [stack.enter_context(atomic_output(path)) for path in outputs]
        head = list(itertools.islice(numbered, 2))  # reads the input's header
        todo = itertools.chain(head, numbered)
        for out in outs:
            out.write(header())

        def write(result: tuple[Any, ...]) -> None:
            nonlocal written
            for out, text in zip(outs, result[1:]):
                out.write(text)
            written += result[0]
            if progress is not None:
                progress(result[0])

        if len(head) < 2 or workers == 1:
            # One chunk or one job: no worker processes.
            _init_worker(*setup_args)
            try:
                for index, (clients, values) in todo:
                    write(encode(index, clients, values))
            finally:
                _WORKER.clear()
            return written
        from .._util.workers import WorkerPool  # multiprocessing: imported only when workers run (`import rappor` stays light)

        with WorkerPool(workers, encode, setup=_init_worker, setup_args=setup_args) as pool:
            for result in pool.imap((index, clients, values) for index, (clients, values) in todo):
                write(result)
    return written


def encode_variables_file(input: PathLike, output: PathLike, params: Params, key: bytes, *,  # noqa: A002
                          booleans: Sequence[str] = (), seed: int | None = None, jobs: int | None = 1,
                          on_error: OnError = "raise", rejects: RejectSink | None = None,
                          progress: Callable[[int], None] | None = None) -> int:
    """Encode a ``client,NAME1,NAME2,...`` CSV into ``client,cohort,NAME1,NAME2,...``; return the clients written.

    Every row is one client's values of several variables (association analysis,
    ``docs/association.md``).  Each variable is encoded with
    ``encode_clients(..., variable=NAME, boolean=NAME in booleans)``: its own permanent
    response, domain-separated by its name, in the client's cohort; a boolean column
    (``1``/``0``/``true``/``false``) as one bit.  The output holds each variable's IRR as
    a google/rappor bit string, the reports file of ``rappor decode-assoc``.  Reading,
    workers, seeds, rejects and the atomic output are those of :func:`encode_file`.

    Parameters
    ----------
    input, output, params, key, seed, jobs, on_error, rejects, progress
        As :func:`encode_file` (a bad boolean is a bad row too).
    booleans : sequence of str, default=()
        The header names of the boolean columns.

    Returns
    -------
    int
        The number of clients (rows) written.

    Raises
    ------
    ReportFormatError
        For a bad header (fewer than two variables, repeated names, a ``booleans`` name
        that is not among them) or a bad row with ``on_error="raise"`` (naming file and line).
    RapporIOError, InvalidParameterError
        As :func:`encode_file`.
    """
    sink = check_on_error(on_error, rejects, "encode_variables_file")
    workers = default_jobs() if jobs is None else check_int(jobs, "jobs", "encode_variables_file", low=1)
    if seed is not None:
        seed = check_int(seed, "seed", "encode_variables_file", low=0)
    names: list[str] = []
    bools = list(booleans)
    rows = chunk_rows(params)
    check_encode(params, rows, processes=workers)
    chunks = iter_client_variables(input, names, booleans=bools, chunk_size=rows, on_error=on_error,
                                   rejects=sink)

    def header() -> str:
        return ",".join(["client", "cohort", *(csv_field(n) for n in names)]) + "\n"

    return _encode_chunks(chunks, [output], header, _encode_variables_chunk, workers,
                          (params, key, seed, names, bools), progress)


class _DiscoveryInputTally:
    """What a discovery search cannot use in a ``client,value`` input: empty values, values longer than
    the layout's ``max_length`` bytes, and clients with more than one row (the accounting of
    ``docs/discovery.md``, section 4, is for one report a client).

    Client ids are kept as 64-bit hashes (8 bytes a row), so a repeat is found whatever its chunk.
    """

    def __init__(self, max_length: int) -> None:
        self.max_length = max_length
        self.empty = 0
        self.long = 0
        self.hashes: list[npt.NDArray[np.uint64]] = []

    def watch(self, chunks: Iterable[tuple[list[str], list[str]]]) -> Iterator[tuple[list[str], list[str]]]:
        for clients, values in chunks:
            lengths = [len(v.encode("utf-8", "surrogatepass")) for v in values]
            self.empty += sum(1 for n in lengths if n == 0)
            self.long += sum(1 for n in lengths if n > self.max_length)
            digests = [hashlib.blake2b(c.encode("utf-8", "surrogatepass"), digest_size=8).digest() for c in clients]
            self.hashes.append(np.frombuffer(b"".join(digests), dtype=np.uint64).copy())
            yield clients, values

    def repeated(self) -> int:
        """Rows whose client has an earlier row."""
        if not self.hashes:
            return 0
        ids = np.sort(np.concatenate(self.hashes))
        return int(np.count_nonzero(ids[1:] == ids[:-1]))

    def warn(self, where: str) -> None:
        from ..exceptions import RapporWarning

        if self.empty:
            warnings.warn(f"{where}: {self.empty:,} empty value(s): discovery finds strings of at least one byte, "
                          "so their reports count only towards the total", RapporWarning, stacklevel=3)
        if self.long:
            warnings.warn(f"{where}: {self.long:,} value(s) longer than max_length {self.max_length} bytes: their "
                          f"reports carry the first {self.max_length} bytes, which discovery cannot confirm as a "
                          "whole value (raise max_length in the discovery parameters to find them)",
                          RapporWarning, stacklevel=3)
        repeats = self.repeated()
        if repeats:
            warnings.warn(f"{where}: {repeats:,} row(s) repeat an earlier row's client: each client should send "
                          "one discovery report (the privacy accounting of 'rappor privacy --discovery-params' "
                          "is per report; a client's several values spend its budget several times)",
                          RapporWarning, stacklevel=3)


def encode_discovery_file(input: PathLike, output: PathLike, spec: DiscoverySpec, key: bytes, *,  # noqa: A002
                          share: float | None = None, params: Params | None = None,
                          full_output: PathLike | None = None, seed: int | None = None, jobs: int | None = 1,
                          on_error: OnError = "raise", rejects: RejectSink | None = None,
                          progress: Callable[[int], None] | None = None) -> int:
    """Encode a ``client,value`` CSV into discovery reports ``client,cohort,irr`` (wire cohorts); return the rows read.

    Every row gives one discovery report,
    ``encode_discovery_clients(spec, key, [client], [value])``
    (:func:`rappor.discovery.client.encode_discovery_clients`): the reports file of
    ``rappor sum-bits --params <wire params>`` and ``rappor discover --reports``.  With
    ``share`` (the client split of ``docs/discovery.md``), a client sends a discovery
    report if its role says so (:func:`rappor.discovery.client.discovery_roles`, derived
    from its secret) and its full-string report under ``params`` to ``full_output``
    otherwise: each client sends one kind, whichever rows it has.  Reading, workers,
    seeds, rejects and the atomic outputs are those of :func:`encode_file` (both outputs
    are committed together or not at all).

    Parameters
    ----------
    input, key, seed, jobs, on_error, rejects, progress
        As :func:`encode_file`.
    output : str or os.PathLike
        The discovery reports CSV (under ``spec.wire_params``).
    spec : DiscoverySpec
        The discovery layout and parameters of one slot.
    share : float or None, default=None
        The share of clients sending a discovery report; ``None``: every row.
    params, full_output : Params and path, required with ``share``
        The full-string parameters and reports CSV of the other clients.

    Returns
    -------
    int
        The number of rows encoded (both kinds).
    """
    from ..analysis.discovery._spec import DiscoverySpec
    from ..exceptions import InvalidParameterError

    if not isinstance(spec, DiscoverySpec):
        msg = f"The 'spec' parameter of encode_discovery_file must be a DiscoverySpec. Got {spec!r} instead."
        raise InvalidParameterError(msg)
    if (share is None) != (params is None) or (share is None) != (full_output is None):
        msg = "encode_discovery_file: 'share', 'params' and 'full_output' go together (the client split) or not at all."
        raise InvalidParameterError(msg)
    sink = check_on_error(on_error, rejects, "encode_discovery_file")
    workers = default_jobs() if jobs is None else check_int(jobs, "jobs", "encode_discovery_file", low=1)
    if seed is not None:
        seed = check_int(seed, "seed", "encode_discovery_file", low=0)
    wire = spec.wire_params
    widest = wire if params is None or params.num_bloombits <= wire.num_bloombits else params
    rows = min(chunk_rows(widest), DISCOVERY_CHUNK_ROWS)
    check_encode(widest, rows, processes=workers)
    chunks = iter_client_values(input, chunk_size=rows, on_error=on_error, rejects=sink)
    outputs = [output] if full_output is None else [output, full_output]
    tally = _DiscoveryInputTally(spec.max_length)
    written = _encode_chunks(tally.watch(chunks), outputs, lambda: HEADER, _encode_discovery_chunk, workers,
                             (params, key, seed, (), (), spec, share), progress)
    tally.warn(display_name(input))
    return written
