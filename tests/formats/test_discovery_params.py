"""Discovery parameters files: one slot's parameters with the clients' layout, and the plain kind before it."""

from __future__ import annotations

from pathlib import Path

import pytest

from rappor import Params
from rappor.analysis.discovery import DiscoverySpec
from rappor.exceptions import ReportFormatError
from rappor.formats import read_discovery_params, read_params, write_discovery_params, write_params

PARAMS = Params(num_bloombits=64, num_hashes=1, num_cohorts=8, prob_p=0.0, prob_q=1.0, prob_f=0.2384)


@pytest.mark.parametrize("weights", [None, (5, 5, 4, 3, 1, 1, 1)])
def test_round_trip_keeps_the_layout(tmp_path: Path, weights: tuple[int, ...] | None) -> None:
    spec = DiscoverySpec(params=PARAMS, max_length=12, segment=2, slot_weights=weights)
    path = tmp_path / "disc-params.csv"
    write_discovery_params(spec, path)
    params, layout = read_discovery_params(path)
    assert params == PARAMS
    assert DiscoverySpec(params=params, **layout) == spec
    assert path.read_text().splitlines()[0] == "k,h,m,p,q,f,max_length,segment,slot_weights"


def test_a_plain_file_has_no_layout(tmp_path: Path) -> None:
    # A file written before the layout columns keeps its meaning: the flags give the layout.
    path = tmp_path / "old.csv"
    write_params(PARAMS, path)
    assert read_discovery_params(path) == (PARAMS, {})


def test_read_params_refuses_a_discovery_file(tmp_path: Path) -> None:
    path = tmp_path / "disc-params.csv"
    write_discovery_params(DiscoverySpec(params=PARAMS, max_length=12), path)
    with pytest.raises(ReportFormatError, match=r"disc-params.csv:1: .*discovery parameters file.*wire parameters"):
        read_params(path)


@pytest.mark.parametrize(("row", "message"), [
    ("64,1,8,0,1,0.25,12,2,5 5 x", "slot weights as integers separated by spaces"),
    ("64,1,8,0,1,0.25,12,2,5 5 4", "column slot_weights must be a tuple of 7 integers"),
    ("64,1,8,0,1,0.25,12,2,5 5 4 3 1 1 0", "column slot_weights"),
    ("64,1,8,0,1,0.25,12,9,", "column segment"),
    ("64,1,8,0,1,0.25,twelve,2,", "expected an integer for 'max_length'"),
])
def test_bad_layouts_name_the_file_and_line(tmp_path: Path, row: str, message: str) -> None:
    path = tmp_path / "bad.csv"
    path.write_text(f"k,h,m,p,q,f,max_length,segment,slot_weights\n{row}\n")
    with pytest.raises(ReportFormatError, match=rf"bad.csv:2: .*{message}"):
        read_discovery_params(path)
