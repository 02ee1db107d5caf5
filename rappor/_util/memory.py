"""Memory estimates, checked before large allocations (private).

RAPPOR's tables grow with the parameters as well as with the data: a counts table
holds ``m * (k + 1)`` integers, a candidate map ``S * m * h`` row indices.  Parameters
such as ``k = m = 2**32`` ask for more memory than any machine has, and numpy then
fails with ``ValueError: array is too big`` or the process is killed by the kernel
without a word.  The functions here estimate the bytes an operation will need from
``k``, ``h``, ``m`` and the number of candidates, and :func:`check_memory` refuses with
an :class:`~rappor.exceptions.InsufficientMemoryError` (estimate, limit and where the
limit comes from) *before* anything is allocated.

The limit
---------
``RAPPOR_MEMORY_LIMIT``, when set: a number of bytes, optionally with a suffix ``K``,
``M``, ``G`` or ``T`` (powers of 1024, e.g. ``8G``), or ``none`` to turn the check off.
Otherwise the smallest of

* ``MemAvailable`` of ``/proc/meminfo`` (what the kernel can give a new allocation
  without swapping; ``sysconf(SC_AVPHYS_PAGES)`` where there is no ``/proc``);
* the room left under a cgroup v2 limit (``memory.max - memory.current``);
* the room left under the soft ``RLIMIT_AS`` (``ulimit -v``) after the address space
  already mapped.

Estimates are of the peak, rounded up; they are checked only when they exceed
:data:`CHECK_ABOVE` (64 MiB), so small runs never read ``/proc``.
"""

from __future__ import annotations

import os
import resource
from pathlib import Path
from typing import Protocol

from ..exceptions import InsufficientMemoryError, InvalidParameterError

__all__ = [
    "CHECK_ABOVE",
    "ENV_VAR",
    "check_counts_table",
    "check_decode",
    "check_design",
    "check_encode",
    "Shape",
    "check_memory",
    "counts_table_bytes",
    "decode_bytes",
    "design_bytes",
    "encode_bytes",
    "format_bytes",
    "memory_limit",
]


class Shape(Protocol):
    """What these checks read of :class:`rappor.Params`: the dimensions of the tables they size."""

    @property
    def num_bloombits(self) -> int: ...

    @property
    def num_hashes(self) -> int: ...

    @property
    def num_cohorts(self) -> int: ...

#: Environment variable that overrides the limit (bytes, ``8G``, or ``none``).
ENV_VAR = "RAPPOR_MEMORY_LIMIT"
#: Estimates below this many bytes are not checked.
CHECK_ABOVE = 64 << 20

_SUFFIXES = {"": 1, "B": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


def format_bytes(n: float) -> str:
    """``n`` bytes in the largest binary unit that keeps it at least 1 (``1.5 GiB``)."""
    for unit, size in (("EiB", 1 << 60), ("PiB", 1 << 50), ("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20),
                       ("KiB", 1 << 10)):
        if n >= size:
            return f"{n / size:.3g} {unit}"
    return f"{int(n)} bytes"


def _parse_limit(text: str) -> int | None:
    """Bytes given by ``RAPPOR_MEMORY_LIMIT`` (``None`` for ``none``); bad values are an error."""
    value = text.strip().upper().removesuffix("IB").removesuffix("B")
    if value in ("NONE", "OFF", "UNLIMITED"):
        return None
    number, unit = (value[:-1], value[-1]) if value[-1:] in _SUFFIXES and value[-1:] else (value, "")
    try:
        amount = float(number)
    except ValueError:
        amount = -1.0
    if not amount > 0 or amount == float("inf"):
        msg = (f"The {ENV_VAR} environment variable must be a positive size such as 8G, 512M or 1000000, or "
               f"'none'. Got {text!r} instead.")
        raise InvalidParameterError(msg)
    return int(amount * _SUFFIXES[unit])


def _meminfo_available() -> int | None:
    try:
        with open("/proc/meminfo", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):  # pragma: no cover - not POSIX
        return None


def _cgroup_room() -> int | None:
    """Bytes left under this process's cgroup v2 memory limit, if it has one."""
    try:
        entry = Path("/proc/self/cgroup").read_text().splitlines()
        rel = next(line.split("::", 1)[1] for line in entry if line.startswith("0::"))
        base = Path("/sys/fs/cgroup") / rel.lstrip("/")
        limit = (base / "memory.max").read_text().strip()
        if limit == "max":
            return None
        return max(0, int(limit) - int((base / "memory.current").read_text()))
    except (OSError, ValueError, StopIteration, IndexError):
        return None


def _address_space_room() -> int | None:
    """Bytes left under the soft ``RLIMIT_AS`` (``ulimit -v``), if one is set."""
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    if soft == resource.RLIM_INFINITY:
        return None
    try:
        mapped = int(Path("/proc/self/statm").read_text().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        mapped = 0
    return max(0, soft - mapped)


def memory_limit() -> tuple[int, str] | None:
    """The bytes an allocation may use now, and where that figure comes from.

    Returns
    -------
    (int, str) or None
        ``None`` when ``RAPPOR_MEMORY_LIMIT=none`` or nothing is known.
    """
    override = os.environ.get(ENV_VAR)
    if override is not None and override.strip():
        limit = _parse_limit(override)
        return None if limit is None else (limit, f"{ENV_VAR}={override.strip()}")
    found = [(room, source) for room, source in ((_meminfo_available(), "available memory (MemAvailable)"),
                                                 (_cgroup_room(), "room left under the cgroup memory limit"),
                                                 (_address_space_room(), "room left under ulimit -v"))
             if room is not None]
    return min(found) if found else None


def check_memory(needed: int, what: str, *, remedy: str = "use smaller parameters") -> None:
    """Refuse, before allocating, an operation that needs more memory than is available.

    Parameters
    ----------
    needed : int
        Estimated peak bytes.
    what : str
        The operation and the sizes behind the estimate, e.g. ``"a counts table of
        m = 4294967296 cohorts x (k + 1) = 4294967297 counts"``.
    remedy : str, default="use smaller parameters"
        What the user can do about it.

    Raises
    ------
    InsufficientMemoryError
        When ``needed`` exceeds :func:`memory_limit`.
    """
    if needed < CHECK_ABOVE:
        return
    limit = memory_limit()
    if limit is None or needed <= limit[0]:
        return
    room, source = limit
    msg = (f"{what} needs about {format_bytes(needed)} of memory, more than the {format_bytes(room)} of "
           f"{source}: {remedy} (or set {ENV_VAR}, e.g. {ENV_VAR}=64G, if the estimate is wrong)")
    raise InsufficientMemoryError(msg)


def counts_table_bytes(params: Shape) -> int:
    """Peak bytes of a counts table: ``m * (k + 1)`` int64, twice (the table and an :class:`Aggregate`'s copy)."""
    return 2 * 8 * params.num_cohorts * (params.num_bloombits + 1)


def check_counts_table(params: Shape) -> None:
    """:func:`check_memory` for a ``(num_cohorts, num_bloombits + 1)`` counts table."""
    m, k = params.num_cohorts, params.num_bloombits
    check_memory(counts_table_bytes(params),
                 f"a counts table of m = {m} cohorts x (k + 1) = {k + 1} counts")


#: Peak bytes per report bit of :func:`rappor.client.encode_clients` and the CSV rows of its
#: reports: 15.0-15.3 measured with tracemalloc at k = 1,024 to 2**20 (more per bit at small k,
#: where the per-report objects weigh; 34 at k = 16).
ENCODE_BYTES_PER_BIT = 16


def encode_bytes(params: Shape, n_reports: int) -> int:
    """Peak bytes of encoding ``n_reports`` reports at once (and formatting them as CSV rows)."""
    return ENCODE_BYTES_PER_BIT * n_reports * params.num_bloombits


def check_encode(params: Shape, n_reports: int, *, processes: int = 1) -> None:
    """:func:`check_memory` for encoding ``n_reports`` reports at once in each of ``processes`` processes."""
    k = params.num_bloombits
    where = f", in each of {processes} worker processes" if processes > 1 else ""
    check_memory(processes * encode_bytes(params, n_reports),
                 f"encoding {n_reports} report(s) of k = {k} bits at once{where}",
                 remedy="use a smaller k")


def design_bytes(params: Shape, n_candidates: int, *, block: int | None = None) -> int:
    """Peak bytes of building the candidate map (design matrix) of ``n_candidates`` strings.

    ``S * m * h`` stored entries at most (hashes that coincide store fewer): a float64
    value and a row index each (int32 while the matrix allows it), the index array
    held twice while the per-block pieces are joined; one int64 column pointer per
    candidate; plus the bit tables of one hashing block of ``block`` candidates
    (about 40 bytes per entry: indices, sort, mask and hash words).

    Parameters
    ----------
    params : Params
    n_candidates : int
    block : int or None, default=None
        Candidates hashed at once (``None``: all of them).
    """
    k, h, m = params.num_bloombits, params.num_hashes, params.num_cohorts
    entries = n_candidates * m * h
    index = 4 if m * k < 2**31 and entries < 2**31 else 8
    hashing = 40 * m * h * (n_candidates if block is None else min(block, n_candidates))
    return entries * (8 + 2 * index) + 8 * (n_candidates + 1) + hashing


def check_design(params: Shape, n_candidates: int, *, block: int | None = None, extra: int = 0,
                 total: int | None = None) -> None:
    """:func:`check_memory` for the candidate map of ``n_candidates`` strings (``extra`` bytes more).

    ``total``: the candidates of the whole list, when the map is made ``n_candidates`` at a time.
    """
    k, h, m = params.num_bloombits, params.num_hashes, params.num_cohorts
    what = f"{n_candidates:,} candidate{'s' if n_candidates != 1 else ''}"
    if total is not None:
        what += f" at a time (of {total:,})"
    check_memory(design_bytes(params, n_candidates, block=block) + extra,
                 f"the candidate map of {what} x m = {m} cohorts x h = {h} hashes (k = {k})",
                 remedy="use fewer candidates or smaller parameters")


def decode_bytes(design_bytes: int, n_rows: int, n_candidates: int, *, dense_columns: int) -> int:
    """Bytes a decode allocates on top of its inputs: twice the design, row and candidate vectors, a dense Gram.

    Measured with tracemalloc (k = 16 and 128, m = 64 and 128, h = 2, 1,000 to 50,000
    candidates, screened or not), a decode's peak above its inputs was 1.0 to 1.8 times
    the candidate map's sparse design (``design_bytes``: the rows of the cohorts with
    reports, the whitened copy with the non-candidate column, the screened columns)
    plus 70-130 MiB of modules imported on first use.  The estimate is twice the design,
    32 float64 vectors per (cohort, bit) row and per candidate, and the dense Gram
    matrix of ``dense_columns`` columns; it leaves out the imports and the arrays whose
    size depends on the fitted support (``rows x support``), so it stays below the real
    peak: :func:`check_decode` refuses only what cannot fit.

    Parameters
    ----------
    design_bytes : int
        Bytes of the candidate map's sparse matrix.
    n_rows : int
        ``num_cohorts * num_bloombits``.
    n_candidates : int
    dense_columns : int
        Columns of the largest dense Gram matrix the fit forms.
    """
    return 2 * design_bytes + 32 * 8 * (n_rows + n_candidates) + 8 * dense_columns**2


def check_decode(params: Shape, design_bytes: int, n_candidates: int, *, dense_columns: int) -> None:
    """:func:`check_memory` for decoding ``n_candidates`` candidates whose design takes ``design_bytes``."""
    k, h, m = params.num_bloombits, params.num_hashes, params.num_cohorts
    check_memory(decode_bytes(design_bytes, m * k, n_candidates, dense_columns=dense_columns),
                 f"decoding {n_candidates} candidates (a candidate map of {format_bytes(design_bytes)}; m = {m} "
                 f"cohorts x k = {k} bits, h = {h})", remedy="decode fewer candidates or use smaller parameters")
