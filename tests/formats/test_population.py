"""rappor.formats._population: reading a population file (``string,count``)."""

from __future__ import annotations

import numpy as np
import pytest

from rappor.exceptions import ReportFormatError
from rappor.formats import read_population


def test_read_population(tmp_path):
    path = tmp_path / "pop.csv"
    path.write_bytes("\ufeffstring,count\r\na,3\r\n\"b,c\",1\r\nx,y,4\r\n".encode())
    pop = read_population(path)
    assert pop.strings == ("a", "b,c", "x,y")
    np.testing.assert_allclose(pop.probabilities, np.array([3, 1, 4]) / 8)


@pytest.mark.parametrize(("text", "message", "line"), [
    ("a,1\nb\n", "expected 'string,count'", 2),
    ("a,1\nb,zz\n", "expected a number", 2),
    ("a,1\nb,-2\n", "count >= 0", 2),
    ("a,1\na,2\n", "appears twice", 2),
])
def test_read_population_fail_names_line(tmp_path, text, message, line):
    path = tmp_path / "pop.csv"
    path.write_text(text)
    with pytest.raises(ReportFormatError, match=message) as info:
        read_population(path)
    assert info.value.line == line and info.value.path == str(path)
