"""core.output_schema: the schemas a template or a run names, held as hostile input,
and the results judged against them."""

from __future__ import annotations

from typing import Any

import pytest

from agentdeck.core.agent import AgentSpec
from agentdeck.core.output_schema import (
    BUILTIN,
    SCHEMA_MAX_DEPTH,
    follow_up,
    judge,
    problems,
    resolve_schema,
    scrubbed,
)
from agentdeck.core.redact import scrub
from agentdeck.core.templates import Template, apply_template, parse_template
from agentdeck.errors import TemplateError, UsageError

STATUS = BUILTIN["status"]


def test_the_builtin_status_schema() -> None:
    assert resolve_schema("status") is STATUS
    assert problems(STATUS, {"status": "COMPLETE", "summary": "done"}) == []
    found = problems(STATUS, {"status": "NEARLY"})
    assert any("summary" in p for p in found) and any(p.startswith("status:") for p in found)
    assert problems(STATUS, None) == [
        "no structured result was given (call the StructuredOutput tool with it)"
    ]


def test_an_own_schema_is_checked() -> None:
    own = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    assert resolve_schema(own) == own
    assert problems(own, {"n": 3}) == []
    assert problems(own, {"n": "three"}) == ["n: 'three' is not of type 'integer'"]


def nested(depth: int) -> dict[str, Any]:
    node: dict[str, Any] = {"type": "object"}
    for _ in range(depth):
        node = {"type": "object", "properties": {"a": node}}
    return node


@pytest.mark.parametrize(
    ("schema", "said"),
    [
        ({"type": "object", "$ref": "file:///etc/passwd"}, "only point inside it"),
        ({"type": "object", "$ref": "https://evil.example/s.json"}, "only point inside it"),
        (
            {"type": "object", "properties": {"x": {"$dynamicRef": "http://x/y"}}},
            "only point inside it",
        ),
        ({"type": "object", "$id": "https://evil.example/"}, "may not set $id"),
        ({"type": "object", "$schema": "https://evil.example/meta"}, "may not set $schema"),
        ({"type": "object", "description": "x" * 20_000}, "larger than"),
        (nested(SCHEMA_MAX_DEPTH), "nested deeper"),
        ({"type": "string"}, "top level must be"),
        ({"type": "object", "properties": {"a": {"type": 7}}}, "not a valid JSON Schema"),
        ({"type": "object", "minimum": float("nan")}, "not plain JSON"),
        ("nosuch", "unknown output schema"),
        (["status"], "a built-in's name or a JSON Schema object"),
    ],
)
def test_a_hostile_schema_is_refused(schema: Any, said: str) -> None:
    with pytest.raises(UsageError, match=None) as caught:
        resolve_schema(schema)
    assert said in str(caught.value)


def test_a_local_ref_is_fine() -> None:
    schema = {
        "type": "object",
        "$defs": {"s": {"enum": ["a", "b"]}},
        "properties": {"v": {"$ref": "#/$defs/s"}},
    }
    assert problems(resolve_schema(schema), {"v": "a"}) == []
    assert problems(schema, {"v": "c"}) == ["v: 'c' is not one of ['a', 'b']"]


def test_judged_once_then_failed() -> None:
    assert judge(STATUS, {"status": "FAILED", "summary": "no"}, failed=False, told=False) == (
        "accepted",
        [],
    )
    verdict, found = judge(STATUS, {}, failed=False, told=False)
    assert verdict == "tell" and found
    assert "StructuredOutput" in follow_up(found) and "only reminder" in follow_up(found)
    assert judge(STATUS, {}, failed=False, told=True)[0] == "fail"
    assert judge(STATUS, None, failed=True, told=False) == ("error", [])


def test_a_huge_result_is_refused() -> None:
    assert problems(STATUS, {"status": "COMPLETE", "summary": "x" * 20_000}) == [
        "the result is larger than 16,384 bytes"
    ]


def test_secrets_in_a_result_are_scrubbed() -> None:
    token = "ghp_" + "a" * 36
    out = scrubbed({"summary": f"used {token}", "list": [token, 3]}, scrub)
    assert token not in str(out) and out["list"][1] == 3


def front(schema: Any = None) -> dict[str, Any]:
    data: dict[str, Any] = {"name": "reporter", "description": "reports."}
    if schema is not None:
        data["output_schema"] = schema
    return data


def test_a_template_names_a_schema() -> None:
    template = parse_template(front("status"), "Report.", "t.md")
    assert template.output_schema == STATUS
    assert Template.from_dict(template.to_dict()) == template
    spec = apply_template(template, AgentSpec(prompt="go"))
    assert spec.output_schema == STATUS
    assert AgentSpec.from_dict(spec.to_dict()).output_schema == STATUS
    plain = parse_template(front(), "Report.", "t.md")
    assert apply_template(plain, AgentSpec(prompt="go")).to_dict()["output_schema"] is None


def test_a_template_with_a_hostile_schema_is_refused() -> None:
    hostile = {"type": "object", "$ref": "https://evil.example/x"}
    with pytest.raises(TemplateError) as caught:
        parse_template(front(hostile), "Report.", "t.md")
    assert "output_schema" in str(caught.value) and "only point inside it" in str(caught.value)
