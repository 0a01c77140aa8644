"""JSON as the ``json`` module reads and writes it, without importing it.

``import json`` loads ``re`` and ``enum`` (for the pure-Python scanner and the
string escapes, which the C accelerator makes unneeded): a third of a quick CLI
command's start-up. ``loads`` drives the same C scanner (``_json.make_scanner``)
that ``json.loads`` uses; ``dumps`` writes what ``json.dumps`` writes for the
plain data of an API answer (dicts, lists, strings, numbers, booleans, None),
with the C string escapes. Whatever is not plain (an error in the text, a value
of another type) is handed to ``json`` itself, so the results and the errors are
``json``'s own. ``tests/test_jsontext.py`` compares the two on generated data.
"""

from __future__ import annotations

TYPE_CHECKING = False  # not typing's: its import costs the quick path ~10 ms
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

_SPACE = " \t\n\r"  # JSON's whitespace (json.decoder.WHITESPACE)
_CONSTANTS = {"-Infinity": float("-inf"), "Infinity": float("inf"), "NaN": float("nan")}

try:
    import _json
except ImportError:  # an interpreter without the accelerator: json's own, as it is
    _json = None  # type: ignore[assignment]


class _Context:
    """What the C scanner reads of a ``JSONDecoder`` (its defaults)."""

    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    parse_constant = _CONSTANTS.__getitem__


# The C scanner takes any object with a decoder's attributes.
_scan: Callable[[str, int], tuple[Any, int]] | None = (
    None if _json is None else _json.make_scanner(_Context())  # type: ignore[arg-type]
)


def loads(data: str | bytes) -> Any:
    """``json.loads(data)``: the value, or json's own error for bad text."""
    text = data.decode() if isinstance(data, bytes) else data
    if _scan is None:
        return _json_module().loads(text)
    start = len(text) - len(text.lstrip(_SPACE))
    try:
        value, end = _scan(text, start)
    except StopIteration:
        return _json_module().loads(text)  # raises json's "Expecting value"
    if end != len(text) and text[end:].strip(_SPACE):
        return _json_module().loads(text)  # raises json's "Extra data"
    return value


def dumps(value: Any, *, indent: int | None = None, ensure_ascii: bool = True) -> str:
    """``json.dumps(value, indent=indent, ensure_ascii=ensure_ascii)``."""
    if _json is None:
        return str(_json_module().dumps(value, indent=indent, ensure_ascii=ensure_ascii))
    parts: list[str] = []
    try:
        escape = _json.encode_basestring_ascii if ensure_ascii else _json.encode_basestring
        _write(value, parts, escape, indent, 0)
    except (_NotPlain, RecursionError):  # json's own result, or its own error
        return str(_json_module().dumps(value, indent=indent, ensure_ascii=ensure_ascii))
    return "".join(parts)


class _NotPlain(Exception):
    """A value ``dumps`` leaves to ``json`` (its errors included)."""


def _number(value: float) -> str:
    if value != value:
        return "NaN"
    if value in (float("inf"), float("-inf")):
        return "Infinity" if value > 0 else "-Infinity"
    return float.__repr__(value)


def _key(key: Any, string: Callable[[str], str]) -> str:
    if isinstance(key, str):
        return string(key)
    if key is True or key is False or key is None:
        return string({True: "true", False: "false", None: "null"}[key])
    if isinstance(key, float):
        return string(_number(key))
    if isinstance(key, int):
        return string(int.__repr__(key))
    raise _NotPlain


def _write(
    value: Any, parts: list[str], string: Callable[[str], str], indent: int | None, level: int
) -> None:
    if isinstance(value, str):
        parts.append(string(value))
    elif value is None:
        parts.append("null")
    elif value is True:
        parts.append("true")
    elif value is False:
        parts.append("false")
    elif isinstance(value, int):
        parts.append(int.__repr__(value))
    elif isinstance(value, float):
        parts.append(_number(value))
    elif isinstance(value, list | tuple):
        if not value:
            parts.append("[]")
            return
        inner, item_sep, close = _layout(indent, level)
        parts.append("[" + inner)
        for i, item in enumerate(value):
            if i:
                parts.append(item_sep)
            _write(item, parts, string, indent, level + 1)
        parts.append(close + "]")
    elif isinstance(value, dict):
        if not value:
            parts.append("{}")
            return
        inner, item_sep, close = _layout(indent, level)
        parts.append("{" + inner)
        for i, (key, item) in enumerate(value.items()):
            if i:
                parts.append(item_sep)
            parts.append(_key(key, string) + ": ")
            _write(item, parts, string, indent, level + 1)
        parts.append(close + "}")
    else:
        raise _NotPlain


def _layout(indent: int | None, level: int) -> tuple[str, str, str]:
    """What opens a container's items, separates them, and closes them."""
    if indent is None:
        return "", ", ", ""
    here = "\n" + " " * (indent * (level + 1))
    return here, "," + here, "\n" + " " * (indent * level)


def _json_module() -> Any:
    import json

    return json
