"""Bounded excerpts in messages and rejects (rappor._util.excerpt), and key files never echoed."""

from __future__ import annotations

from rappor._util.excerpt import EXCERPT_CHARS, KEY_HIDDEN, clip, excerpt
from rappor._util.rejects import RejectedRow


def test_excerpt_short_text_is_its_repr() -> None:
    assert excerpt("abc") == "'abc'"
    assert excerpt("it's") == '"it\'s"'
    assert excerpt("x" * EXCERPT_CHARS) == repr("x" * EXCERPT_CHARS)


def test_excerpt_long_text_is_bounded_and_gives_the_length() -> None:
    text = "abc" + "x" * 104_857_597
    shown = excerpt(text)
    assert shown == "'abc" + "x" * (EXCERPT_CHARS - 3) + "…' (104,857,600 characters)"
    assert len(shown) < 2 * EXCERPT_CHARS


def test_excerpt_escapes_control_characters_within_the_bound() -> None:
    shown = excerpt("\n" * 1000)
    assert "\n" not in shown and len(shown) < 4 * EXCERPT_CHARS + 40


def test_clip_keeps_short_rows_and_cuts_long_ones() -> None:
    assert clip("c1,9,0101") == "c1,9,0101"
    assert clip("y" * 200) == "y" * EXCERPT_CHARS + "… (200 characters)"


def test_excerpt_and_clip_never_show_a_key() -> None:
    key_text = bytes(range(32)).hex()  # 64 hex digits: what rappor keygen writes
    for text in (key_text, key_text + "\n", " " + key_text.upper() + " \r\n", "\ufeff" + key_text):
        assert excerpt(text) == KEY_HIDDEN and clip(text) == KEY_HIDDEN
    assert excerpt(key_text[:30]) == repr(key_text[:30])  # 15 bytes: too short to be a key


def test_rejected_row_text_is_clipped() -> None:
    row = RejectedRow(path="f", line=3, reason="r", text="z" * 10_000_000)
    assert row.text == "z" * EXCERPT_CHARS + "… (10,000,000 characters)"
