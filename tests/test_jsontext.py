"""``jsontext`` reads and writes JSON exactly as the ``json`` module does."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentdeck import jsontext

SCALARS = (
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True, allow_infinity=True)
    | st.text()
)  # fmt: skip
PLAIN = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=4)
    | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=20,
)


def same(a: Any, b: Any) -> bool:
    """Equal, NaN included (NaN != NaN)."""
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a):
        return math.isnan(b)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


@settings(max_examples=300)
@given(PLAIN, st.sampled_from([None, 2]), st.booleans())
def test_dumps_writes_what_json_writes(value: Any, indent: int | None, ascii_only: bool) -> None:
    assert jsontext.dumps(value, indent=indent, ensure_ascii=ascii_only) == json.dumps(
        value, indent=indent, ensure_ascii=ascii_only
    )


@settings(max_examples=300)
@given(PLAIN, st.sampled_from([None, 2]), st.sampled_from(["", " ", "\n\t "]))
def test_loads_reads_what_json_reads(value: Any, indent: int | None, space: str) -> None:
    text = space + json.dumps(value, indent=indent, ensure_ascii=False) + space
    assert same(jsontext.loads(text), json.loads(text))
    assert same(jsontext.loads(text.encode()), json.loads(text.encode()))


def test_keys_that_are_not_text_are_written_as_json_writes_them() -> None:
    value = {1: "a", 2.5: "b", False: "c", None: "d", float("inf"): "e"}
    assert jsontext.dumps(value) == json.dumps(value)


@pytest.mark.parametrize("text", ["", "  ", "{", '{"a": 1', "[1] x", "nul", '{"a" 1}', "[1,]"])
def test_bad_text_raises_json_s_own_error(text: str) -> None:
    with pytest.raises(json.JSONDecodeError) as expected:
        json.loads(text)
    with pytest.raises(json.JSONDecodeError) as got:
        jsontext.loads(text)
    assert (got.value.msg, got.value.pos) == (expected.value.msg, expected.value.pos)


def test_what_is_not_plain_data_is_json_s_to_refuse() -> None:
    with pytest.raises(TypeError, match="not JSON serializable"):
        jsontext.dumps({"when": object()})
    looped: list[Any] = []
    looped.append(looped)
    with pytest.raises(ValueError, match="Circular reference"):
        jsontext.dumps(looped)
