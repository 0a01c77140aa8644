"""Structured results: the JSON Schema an agent's final result must match. Pure.

A template (``output_schema:``) or a run names one: a schema of its own, or a
built-in's name (``status``). The schema is hostile input (a model can write
templates): it is bounded in size and depth, and a ``$ref`` may only point inside
it (``#...``): never to a file or a URL, which nothing here would fetch anyway.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from agentdeck.errors import UsageError

SCHEMA_MAX_BYTES = 16 * 1024
SCHEMA_MAX_DEPTH = 12
RESULT_MAX_BYTES = 16 * 1024
PROBLEMS_SHOWN = 5
# Where an agent's row keeps them (its ``extra``).
STRUCTURED_RESULT = "structured_result"
STRUCTURED_TOLD = "structured_told"

# The built-in schemas a template names by their name.
BUILTIN: dict[str, dict[str, Any]] = {
    "status": {
        "type": "object",
        "properties": {
            "status": {"enum": ["COMPLETE", "PARTIAL", "FAILED"]},
            "summary": {"type": "string", "maxLength": 4000},
        },
        "required": ["status", "summary"],
        "additionalProperties": False,
    },
}

# Keys that make a validator reach outside the schema.
_REMOTE_KEYS = ("$ref", "$dynamicRef", "$recursiveRef")


def resolve_schema(value: Any) -> dict[str, Any]:
    """The schema ``value`` names (a built-in's name, or a JSON Schema object),
    checked; a :class:`UsageError` says what is wrong."""
    if isinstance(value, str):
        name = value.strip()
        if name not in BUILTIN:
            raise UsageError(
                f"unknown output schema {name[:40]!r} (built-in: {', '.join(BUILTIN)}; "
                "or give a JSON Schema object)"
            )
        return BUILTIN[name]
    if not isinstance(value, Mapping):
        raise UsageError("an output schema is a built-in's name or a JSON Schema object")
    try:
        text = json.dumps(value, sort_keys=True, allow_nan=False)
    except (TypeError, ValueError, RecursionError) as exc:
        raise UsageError(f"the output schema is not plain JSON: {exc}") from None
    if len(text.encode()) > SCHEMA_MAX_BYTES:
        raise UsageError(f"the output schema is larger than {SCHEMA_MAX_BYTES:,} bytes")
    schema: dict[str, Any] = json.loads(text)
    _check_tree(schema, 0)
    if schema.get("type") != "object":
        raise UsageError('an output schema\'s top level must be {"type": "object", ...}')
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import SchemaError

    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as exc:
        raise UsageError(f"the output schema is not a valid JSON Schema: {exc.message}") from None
    return schema


def _check_tree(node: Any, depth: int) -> None:
    if depth > SCHEMA_MAX_DEPTH:
        raise UsageError(f"the output schema is nested deeper than {SCHEMA_MAX_DEPTH} levels")
    if isinstance(node, dict):
        for key, child in node.items():
            if key in _REMOTE_KEYS and not (isinstance(child, str) and child.startswith("#")):
                raise UsageError(
                    f"the output schema's {key} may only point inside it ('#/...'), "
                    "not to a file or a URL"
                )
            if key == "$id" or (key == "$schema" and child != _DRAFT):
                raise UsageError(f"the output schema may not set {key}")
            _check_tree(child, depth + 1)
    elif isinstance(node, list):
        for child in node:
            _check_tree(child, depth + 1)


_DRAFT = "https://json-schema.org/draft/2020-12/schema"


def problems(schema: Mapping[str, Any], value: Any) -> list[str]:
    """What is wrong with ``value`` as a result for ``schema`` (empty: it matches).
    ``None`` (no structured result at all) is a problem of its own."""
    if value is None:
        return ["no structured result was given (call the StructuredOutput tool with it)"]
    try:
        size = len(json.dumps(value, allow_nan=False).encode())
    except (TypeError, ValueError, RecursionError):
        return ["the result is not plain JSON"]
    if size > RESULT_MAX_BYTES:
        return [f"the result is larger than {RESULT_MAX_BYTES:,} bytes"]
    from jsonschema import Draft202012Validator

    validator = Draft202012Validator(dict(schema))
    found = sorted(validator.iter_errors(value), key=lambda e: list(e.absolute_path))
    return [_line(e.absolute_path, e.message) for e in found[:PROBLEMS_SHOWN]]


def _line(path: Any, message: str) -> str:
    where = "/".join(str(p) for p in path) or "(top)"
    return f"{where}: {message[:300]}"


def follow_up(found: list[str]) -> str:
    """The one message an agent gets when its result does not match."""
    listed = "\n".join(f"- {p}" for p in found)
    return (
        "Your final result does not match the required output schema:\n"
        f"{listed}\n"
        "Call the StructuredOutput tool once more with a result that matches it. "
        "This is the only reminder: another result that does not match ends the run as failed."
    )


def judge(
    schema: Mapping[str, Any], value: Any, *, failed: bool, told: bool
) -> tuple[str, list[str]]:
    """What a run's result means for its structured result: ``("accepted", [])``,
    ``("tell", problems)`` (not a match: the agent is told, once), ``("fail",
    problems)`` (told already: the run ends failed), or ``("error", [])`` (the
    result is an error of its own: nothing to judge)."""
    if failed:
        return "error", []
    found = problems(schema, value)
    if not found:
        return "accepted", []
    return ("fail" if told else "tell"), found


def scrubbed(value: Any, scrub: Callable[[str], str]) -> Any:
    """``value`` with ``scrub`` applied to every string in it (keys too)."""
    if isinstance(value, str):
        return scrub(value)
    if isinstance(value, list):
        return [scrubbed(v, scrub) for v in value]
    if isinstance(value, dict):
        return {scrub(str(k)): scrubbed(v, scrub) for k, v in value.items()}
    return value
