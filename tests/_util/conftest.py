"""Fixtures of the shared plumbing's tests."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest


@pytest.fixture
def null_device(tmp_path: Path) -> Path:
    """A character device to write to: a private copy of /dev/null where we may create one (root).

    Never the system's /dev/null as root: code that renames over its target would replace
    the machine's device.  Without root it cannot, and /dev/null is safe to use.
    """
    node = tmp_path / "null"
    try:
        os.mknod(node, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    except (PermissionError, AttributeError):
        if os.geteuid() == 0:  # pragma: no cover - root without CAP_MKNOD
            pytest.skip("cannot create a device node, and /dev/null must not be risked as root")
        return Path(os.devnull)
    return node
