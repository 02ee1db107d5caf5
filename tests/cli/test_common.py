"""Helpers shared by the subcommands (rappor.cli._common): strict JSON, flags named in library errors."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from rappor.cli._common import UsageError, flags, json_text
from rappor.exceptions import InvalidParameterError


def _strict(text: str) -> object:
    """Parse as a strict JSON parser does: NaN, Infinity and -Infinity are errors."""
    def refuse(constant: str) -> None:
        raise ValueError(f"not JSON: {constant}")

    return json.loads(text, parse_constant=refuse)


def test_json_text_is_strict_json_with_null_for_nan_and_infinity() -> None:
    data = {"p": math.nan, "e": math.inf, "m": -math.inf, "n": np.float64("nan"), "i": np.int64(3),
            "l": [np.float32(0.5), (1, math.nan)], "ok": 0.25}
    with pytest.raises(ValueError, match="not JSON: NaN"):
        _strict(json.dumps(data, default=float))  # what metrics.json held before
    assert _strict(json_text(data)) == {"p": None, "e": None, "m": None, "n": None, "i": 3, "l": [0.5, [1, None]],
                                        "ok": 0.25}


def test_flags_turns_a_parameter_error_into_a_usage_error_naming_the_flag() -> None:
    with pytest.raises(UsageError, match=r"^argument --epsilon-inf: must be a finite float > 0.0. Got nan instead.$"):
        with flags({"epsilon_inf": "--epsilon-inf"}):
            raise InvalidParameterError("The 'epsilon_inf' parameter of plan must be a finite float > 0.0. "
                                        "Got nan instead.")
    with pytest.raises(InvalidParameterError, match="^The 'other' parameter"):  # not a flag: unchanged
        with flags({"epsilon_inf": "--epsilon-inf"}):
            raise InvalidParameterError("The 'other' parameter of plan must be 1.")
