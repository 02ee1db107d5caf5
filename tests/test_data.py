"""The example data in data/ is what data/make_sample.py makes (the README and data/README.md say so)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

DATA = Path(__file__).parent.parent / "data"


def test_make_sample_reproduces_the_shipped_data_byte_for_byte(tmp_path: Path) -> None:
    """Run the script in a scratch copy (it writes beside itself) and compare every file it writes with the
    repository's: the quick start's and the sample's figures then rest on data anyone can regenerate."""
    shutil.copy(DATA / "make_sample.py", tmp_path / "make_sample.py")
    subprocess.run([sys.executable, str(tmp_path / "make_sample.py")], check=True, timeout=300, cwd=tmp_path)
    made = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*") if p.is_file() and p.name != "make_sample.py")
    assert {str(p.parent) for p in made} >= {"sample", "quickstart"}
    different = [str(p) for p in made if (tmp_path / p).read_bytes() != (DATA / p).read_bytes()]
    assert different == []
