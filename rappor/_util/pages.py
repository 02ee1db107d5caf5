"""Large arrays in anonymous memory mapped for them alone (private).

NumPy asks the kernel for transparent huge pages (``madvise(MADV_HUGEPAGE)``) on every
array of 4 MiB or more.  Where ``/sys/kernel/mm/transparent_hugepage/defrag`` is
``madvise`` (the default of many distributions), a page fault in such a region with no
free huge page at hand stalls in synchronous compaction instead of taking small pages
(numpy/numpy#31590).  A decode of a million candidates writes two such arrays once, the
map's row indices (0.5 GB) and the whitened design's values (1 GB): measured on the
project's 2-core machine after hashing 1 M candidates, writing 1 GB took 2.0-2.2 s of
system CPU in a NumPy array and 0.6-0.7 s in pages mapped here (4 KiB faults; the
kernel still gives huge pages where THP is ``always``).

:func:`empty` maps such arrays itself (``mmap``, zero-filled like any new anonymous
memory); the pages return to the system when the array and its views are gone.
"""

from __future__ import annotations

import mmap
from typing import Any

import numpy as np
import numpy.typing as npt

__all__ = ["LARGE", "empty"]

#: Arrays of at least this many bytes are mapped by :func:`empty` (smaller ones: ``np.empty``).
LARGE = 64 << 20


def empty(n: int, dtype: Any) -> npt.NDArray[Any]:
    """A writable 1-d array of ``n`` items of ``dtype`` (zero-filled when mapped).

    Returned as a view of the mapped array (``base`` an array of the same size, not the
    buffer): SciPy's sparse constructors compare a view's size with its ``base.size``
    (``_prune_array``), which a buffer does not have.
    """
    dt = np.dtype(dtype)
    nbytes = int(n) * dt.itemsize
    if nbytes < LARGE:
        return np.empty(n, dtype=dt)
    mapped = np.frombuffer(mmap.mmap(-1, nbytes), dtype=dt)
    return mapped[:]
