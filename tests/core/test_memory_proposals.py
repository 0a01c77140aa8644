"""Memories the agents write, the pure part: what a proposal may hold, how a
template asks for no review, and what a later agent is told."""

from __future__ import annotations

import pytest

from agentdeck.core.memory_proposals import (
    KINDS,
    LEARNED_HEADING,
    TEXT_MAX_BYTES,
    MemoryProposal,
    ProposalState,
    build_learned,
    checked_id,
    checked_state,
    propose,
    skips_review,
)
from agentdeck.core.templates import parse_template
from agentdeck.errors import TemplateError, UsageError


def made(text: str = "tests need -p no:cacheprovider", **kw: object) -> MemoryProposal:
    args: dict[str, object] = {
        "agent_id": "a1", "template": "engineer", "project": "/p", "text": text,
        "kind": "command", "auto": False, "now": 1_800_000_000.0,
    }  # fmt: skip
    args.update(kw)
    return propose(**args)  # type: ignore[arg-type]


def test_a_proposal_waits_unless_auto_and_round_trips() -> None:
    waiting = made()
    assert waiting.state is ProposalState.PENDING and waiting.decided_by is None
    assert waiting.id.startswith("mp") and checked_id(waiting.id) == waiting.id
    auto = made(auto=True)
    assert auto.state is ProposalState.ACCEPTED and auto.decided_by == "template:auto"
    assert MemoryProposal.from_dict(auto.to_dict()) == auto
    assert made(template=None).template == ""


@pytest.mark.parametrize(
    ("text", "kind", "said"),
    [
        ("", "fact", "empty"),
        ("  \x1b\x07 ", "fact", "empty"),
        ("a\x00b", "fact", "NUL"),
        ("x" * (TEXT_MAX_BYTES + 1), "fact", "at most 2048 bytes"),
        ("é" * (TEXT_MAX_BYTES // 2 + 1), "fact", "at most 2048 bytes"),
        ("fine", "instruction", "kind is one of"),
        ("fine", None, "kind is one of"),
        (["a list"], "fact", "is a string"),
    ],
)
def test_bad_proposals_are_refused(text: object, kind: object, said: str) -> None:
    with pytest.raises(UsageError, match=said):
        made(text=text, kind=kind)


def test_the_text_is_scrubbed_and_stripped_of_escapes() -> None:
    key = "sk-ant-api03-" + "A" * 90
    kept = made(text=f"use ANTHROPIC_API_KEY={key} \x1b[31mred\u202e")
    assert key not in kept.text and "\x1b" not in kept.text and "\u202e" not in kept.text
    assert made(kind=" Pitfall ").kind == "pitfall" and "pitfall" in KINDS


def test_states_and_ids_are_checked() -> None:
    assert checked_state("all") is None and checked_state("accepted") is ProposalState.ACCEPTED
    with pytest.raises(UsageError):
        checked_state("maybe")
    for bad in ("", "mp123", "../etc", "MP0123456789AB", 5):
        with pytest.raises(UsageError):
            checked_id(bad)


def test_learned_context_is_newest_first_within_the_budget_with_provenance() -> None:
    old = made(text="OLD-LEARNING", auto=True, now=1_700_000_000.0)
    new = made(text="NEW-LEARNING", auto=True, now=1_800_000_000.0)
    pending = made(text="PENDING-LEARNING")
    told = build_learned([old, new, pending], budget_tokens=1000)
    assert told.startswith(LEARNED_HEADING)
    assert told.index("NEW-LEARNING") < told.index("OLD-LEARNING")
    assert "PENDING" not in told and "(from agent a1, 2027-01-15)" in told
    assert build_learned([], budget_tokens=1000) == ""
    assert build_learned([new], budget_tokens=10) == ""
    small = build_learned([made(text="x" * 2000, auto=True), new], budget_tokens=100)
    assert "NEW-LEARNING" in small and "xxxx" not in small
    assert len(small) / 3.5 <= 100


def test_a_template_says_memory_review() -> None:
    data = {"name": "t", "description": "d", "memory_review": "auto"}
    assert parse_template(data, "body", "t.md").memory_review == "auto"
    assert parse_template({**data, "memory_review": None}, "b", "t.md").memory_review is None
    with pytest.raises(TemplateError, match="memory_review: must be one of inbox, auto"):
        parse_template({**data, "memory_review": "yes"}, "b", "t.md")


def test_only_a_user_or_built_in_template_skips_review() -> None:
    assert skips_review("auto", "user") and skips_review("auto", "built-in")
    assert not skips_review("auto", "project")
    assert not skips_review("inbox", "user") and not skips_review(None, "built-in")
