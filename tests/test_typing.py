"""The package type-checks under ``mypy --strict`` (configured in pyproject.toml).

The annotations are written against numpy 2's type stubs (``np.integer`` and ``np.ndarray``
without type parameters, for one): numpy 1.x's stubs flag 30-odd of them, although the code runs
the same.  So the check runs where numpy >= 2 is installed (the README's test command installs
the newest); the lower-bounds job (``.ci/lower-bounds``) runs everything else.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).parent.parent


def test_package_passes_mypy_strict(tmp_path: Path) -> None:
    pytest.importorskip("mypy")
    import numpy as np

    if int(np.__version__.split(".")[0]) < 2:
        pytest.skip(f"the annotations target numpy 2's stubs; numpy {np.__version__} is installed "
                    "(pip install 'numpy>=2' to run this check)")
    out = subprocess.run(
        [sys.executable, "-m", "mypy", "--cache-dir", str(tmp_path / "mypy_cache")],
        cwd=REPO, capture_output=True, text=True, timeout=600,
    )
    assert out.returncode == 0, out.stdout + out.stderr
