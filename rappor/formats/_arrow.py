"""Reports as Arrow columns: the columnar layout of Parquet report files and of the distributed engines' tables.

This module owns the layout and its conversions (:func:`batch_to_arrow`,
:func:`arrow_to_batch`); the files themselves (writing, finding, streaming, counting)
are :mod:`rappor.formats._parquet`'s, and the engines (:mod:`rappor.engines`) convert
their partitions with :func:`arrow_to_batch`.  pyarrow is needed only when one of
these functions runs (``pip install 'rappor[parquet]'``; without it a
:class:`~rappor.exceptions.MissingDependencyError` names that extra).

File layout (one row per report)
--------------------------------
``cohort``
    ``int32``, dictionary-encoded in the file (at most ``m`` distinct values).
``w0 .. w{W-1}``
    ``int64``, ``W = ceil(k / 64)``: the IRR bits packed little-endian, bit ``j`` is
    ``(w[j // 64] >> (j % 64)) & 1``; bits at or above ``k`` are 0.  The 64 bits are those
    of the ``uint64`` words of :class:`~rappor.ReportBatch` reinterpreted as signed,
    because Spark and many data-lake tools have no unsigned 64-bit type.
``bits`` (alternative to the ``w`` columns)
    ``fixed_size_binary(ceil(k / 8))``: the same bits as bytes, bit ``j`` is
    ``(b[j // 8] >> (j % 8)) & 1``.  Plain ``binary`` values of that length are accepted
    too (Spark writes binary columns that way).

Compression is zstd.  The file's key-value metadata holds ``rappor.params`` (JSON with the
keys ``k, h, m, p, q, f``) and ``rappor.layout`` (JSON naming the bit layout); on read,
parameters that differ from the expected ones raise
:class:`~rappor.exceptions.IncompatibleParamsError`.  Files without that metadata (written
by other tools) are accepted when their columns fit the expected parameters.

Packed columns are what make aggregation fast: list-of-bool columns are 40-55 times slower
to read and hex or 0/1 strings 10-20 times slower (measured).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import numpy.typing as npt

from .._util.lazy import import_optional
from ..client._reports import ReportBatch
from ..exceptions import IncompatibleParamsError, InvalidParameterError, ReportFormatError
from ..params import Params, check_same_params

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["Layout", "arrow_to_batch", "batch_to_arrow", "check_file_params", "report_columns", "word_columns"]

PARAMS_KEY = b"rappor.params"
LAYOUT_KEY = b"rappor.layout"
LAYOUT_VERSION = 1

Layout = Literal["words", "bits"]


def _pyarrow() -> Any:
    """The ``pyarrow`` module, with ``pyarrow.parquet`` loaded: every use of pyarrow in rappor goes through here.

    Raises
    ------
    MissingDependencyError
        If pyarrow is not installed (an :class:`ImportError` naming the extra to install,
        :func:`rappor._util.lazy.import_optional`).
    """
    import_optional("pyarrow.parquet", "Parquet reports")
    return import_optional("pyarrow", "Parquet reports")


def word_columns(params: Params) -> list[str]:
    """Names of the packed-word columns ``w0 .. w{W-1}`` for ``params``."""
    return [f"w{j}" for j in range(params.num_words)]


def _layout_json(params: Params, layout: Layout) -> bytes:
    k = params.num_bloombits
    if layout == "words":
        desc = {
            "version": LAYOUT_VERSION,
            "columns": ["cohort", *word_columns(params)],
            "bits": f"bit j = (w[j // 64] >> (j % 64)) & 1 for j < {k}; int64 holds the uint64 bits",
        }
    else:
        desc = {
            "version": LAYOUT_VERSION,
            "columns": ["cohort", "bits"],
            "bits": f"fixed_size_binary({(k + 7) // 8}); bit j = (b[j // 8] >> (j % 8)) & 1 for j < {k}",
        }
    return json.dumps(desc, sort_keys=True).encode()


def _schema(params: Params, layout: Layout) -> pa.Schema:
    pa = _pyarrow()
    if layout == "words":
        fields = [pa.field("cohort", pa.int32(), nullable=False)]
        fields += [pa.field(name, pa.int64(), nullable=False) for name in word_columns(params)]
    else:
        nbytes = (params.num_bloombits + 7) // 8
        fields = [pa.field("cohort", pa.int32(), nullable=False), pa.field("bits", pa.binary(nbytes), nullable=False)]
    metadata = {
        PARAMS_KEY: json.dumps(params.as_dict(), sort_keys=True).encode(),
        LAYOUT_KEY: _layout_json(params, layout),
    }
    return pa.schema(fields, metadata=metadata)


def batch_to_arrow(batch: ReportBatch, *, layout: Layout = "words") -> pa.RecordBatch:
    """Convert a :class:`ReportBatch` to an Arrow record batch in the columnar layout."""
    pa = _pyarrow()
    params = batch.params
    schema = _schema(params, layout)
    n = len(batch)
    cohorts = pa.array(batch.cohorts.astype(np.int32), type=pa.int32())
    if layout == "words":
        signed = batch.words.view(np.int64)
        columns = [pa.array(np.ascontiguousarray(signed[:, j]), type=pa.int64()) for j in range(params.num_words)]
    else:
        nbytes = (params.num_bloombits + 7) // 8
        raw = np.ascontiguousarray(batch.words.astype("<u8", copy=False)).view(np.uint8).reshape(n, -1)
        data = np.ascontiguousarray(raw[:, :nbytes]).tobytes()
        columns = [pa.FixedSizeBinaryArray.from_buffers(pa.binary(nbytes), n, [None, pa.py_buffer(data)])]
    return pa.RecordBatch.from_arrays([cohorts, *columns], schema=schema)


def _file_params(metadata: dict[bytes, bytes] | None, source: str) -> Params | None:
    if not metadata or PARAMS_KEY not in metadata:
        return None
    try:
        values = json.loads(metadata[PARAMS_KEY])
        return Params.from_dict(values)
    except (ValueError, KeyError, TypeError) as exc:
        msg = f"the 'rappor.params' metadata is not valid parameters: {exc}"
        raise ReportFormatError(msg, path=source) from None


def check_file_params(metadata: dict[bytes, bytes] | None, params: Params, source: str) -> None:
    """Raise :class:`IncompatibleParamsError` if the file's stored parameters differ from ``params``."""
    found = _file_params(metadata, source)
    if found is not None:
        try:
            check_same_params(params, found, source)
        except IncompatibleParamsError as exc:
            raise IncompatibleParamsError(str(exc)) from None


def report_columns(names: Sequence[str], params: Params, source: str) -> list[str]:
    """The columns to read from a table with column ``names``: cohort plus words or bits."""
    if "cohort" not in names:
        raise ReportFormatError("expected a 'cohort' column", path=source)
    words = word_columns(params)
    if all(name in names for name in words):
        extra = f"w{params.num_words}"
        if extra in names:
            msg = f"found a column {extra!r}: the file holds more than {params.num_bloombits} bits per report"
            raise IncompatibleParamsError(f"{source}: {msg}")
        return ["cohort", *words]
    if "bits" in names:
        return ["cohort", "bits"]
    msg = f"expected columns 'cohort' and {', '.join(repr(w) for w in words)} (or a 'bits' column)"
    raise ReportFormatError(msg, path=source)


def _numpy_column(column: Any, name: str, source: str, first_row: int) -> npt.NDArray[Any]:
    pa = _pyarrow()
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    if pa.types.is_dictionary(column.type):
        column = column.dictionary_decode()
    if column.null_count:
        row = first_row + int(np.flatnonzero(np.asarray(column.is_null()))[0])
        raise ReportFormatError(f"row {row}: column {name!r} is null", path=source)
    if not pa.types.is_integer(column.type):
        raise ReportFormatError(f"column {name!r} must hold integers, found {column.type}", path=source)
    return np.asarray(column.to_numpy(zero_copy_only=False))


def _bytes_matrix(column: Any, nbytes: int, source: str, first_row: int) -> npt.NDArray[np.uint8]:
    """The values of a binary column as an ``(n, nbytes)`` uint8 matrix (each value must have ``nbytes``)."""
    pa = _pyarrow()
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    n = len(column)
    if column.null_count:
        row = first_row + int(np.flatnonzero(np.asarray(column.is_null()))[0])
        raise ReportFormatError(f"row {row}: column 'bits' is null", path=source)
    if pa.types.is_fixed_size_binary(column.type):
        width = column.type.byte_width
        if width != nbytes:
            msg = f"column 'bits' has {width} bytes per report, expected {nbytes}"
            raise IncompatibleParamsError(f"{source}: {msg}")
        data = np.frombuffer(column.buffers()[1], dtype=np.uint8)
        start = column.offset * nbytes
        return data[start : start + n * nbytes].reshape(n, nbytes)
    if pa.types.is_binary(column.type) or pa.types.is_large_binary(column.type):
        offset_type = np.int32 if pa.types.is_binary(column.type) else np.int64
        offsets = np.frombuffer(column.buffers()[1], dtype=offset_type)[column.offset : column.offset + n + 1]
        lengths = np.diff(offsets)
        if (lengths != nbytes).any():
            bad = int(np.flatnonzero(lengths != nbytes)[0])
            msg = f"row {first_row + bad}: column 'bits' has {int(lengths[bad])} bytes, expected {nbytes}"
            raise ReportFormatError(msg, path=source)
        data = np.frombuffer(column.buffers()[2], dtype=np.uint8) if n else np.zeros(0, np.uint8)
        return data[int(offsets[0]) : int(offsets[0]) + n * nbytes].reshape(n, nbytes)
    raise ReportFormatError(f"column 'bits' must be binary, found {column.type}", path=source)


def arrow_to_batch(table: Any, params: Params, *, source: str = "<arrow>", first_row: int = 0) -> ReportBatch:
    """Convert an Arrow table or record batch in the columnar layout to a :class:`ReportBatch`.

    Parameters
    ----------
    table : pyarrow.Table or pyarrow.RecordBatch
        Columns ``cohort`` and ``w0..w{W-1}`` (int64 or uint64), or ``cohort`` and ``bits``.
    params : Params
        Expected parameters.
    source : str, default="<arrow>"
        Name used in error messages.
    first_row : int, default=0
        0-based row number of the first row in the whole file, for error messages.

    Raises
    ------
    ReportFormatError
        Missing columns, nulls, non-integer cohorts, cohorts out of range, bits at or above ``k``.
    IncompatibleParamsError
        The columns hold a different number of bits than ``params`` says.
    """
    names = list(table.schema.names)
    columns = report_columns(names, params, source)
    n, w = table.num_rows, params.num_words
    cohorts = _numpy_column(table.column("cohort"), "cohort", source, first_row)
    outside = (cohorts < 0) | (cohorts >= params.num_cohorts)
    if outside.any():  # named by its row (ReportBatch's own check can only name the whole batch)
        bad = int(np.flatnonzero(outside)[0])
        msg = (f"row {first_row + bad}: expected a cohort, an integer in [0, {params.num_cohorts - 1}], "
               f"found {int(cohorts[bad])}")
        raise ReportFormatError(msg, path=source)
    if columns[1] == "bits":
        nbytes = (params.num_bloombits + 7) // 8
        raw = _bytes_matrix(table.column("bits"), nbytes, source, first_row)
        if nbytes == 8 * w:  # k a multiple of 64: the bytes are the words, no padding
            padded = np.ascontiguousarray(raw)
        else:
            padded = np.zeros((n, 8 * w), dtype=np.uint8)
            padded[:, :nbytes] = raw
        words = padded.view("<u8").reshape(n, w).astype(np.uint64, copy=False)
    else:
        words = np.empty((n, w), dtype=np.uint64)
        for j, name in enumerate(columns[1:]):
            words[:, j] = _numpy_column(table.column(name), name, source, first_row).view(np.uint64)
    try:
        return ReportBatch(params=params, cohorts=cohorts, words=words)
    except InvalidParameterError as exc:
        rows = f"rows {first_row}..{first_row + n - 1}" if n > 1 else f"row {first_row}"
        raise ReportFormatError(f"{rows}: {_strip_parameter_prefix(str(exc))}", path=source) from None


def _strip_parameter_prefix(message: str) -> str:
    for prefix in ("The 'cohorts' parameter of ReportBatch ", "The 'words' parameter of ReportBatch "):
        if message.startswith(prefix):
            what = "cohort" if "cohorts" in prefix else "bits"
            return f"{what}: {message[len(prefix):]}"
    return message
