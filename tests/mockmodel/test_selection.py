"""Stateless turn selection, replayed over hand-built request histories."""

from __future__ import annotations

from typing import Any

import pytest

from agentdeck.mockmodel import Scenario, parse_scenario
from agentdeck.mockmodel.selection import find_cwd, resolve_paths, route, select
from tests.mockmodel.bodies import assistant, body, env_block, tool_result, user


def scenario(data: dict[str, Any]) -> Scenario:
    return parse_scenario({"name": "s", **data}, "s.yaml")


def text(t: str) -> dict[str, Any]:
    return {"reply": [{"text": t}]}


FIX = scenario(
    {
        "turns": [
            {"reply": [{"tool_use": {"name": "Bash", "input": {"command": "pytest"}}}]},
            {"when": {"tool_result_contains": "failed"}, "reply": [{"text": "read"}]},
            text("edit"),
            text("done"),
        ]
    }
)


def turn_of(s: Scenario, request: dict[str, Any]) -> int | None:
    return select([s], request).turn_index


def test_sequential_turns_follow_history() -> None:
    first = body(user("fix it"), env_block("/w"))
    assert turn_of(FIX, first) == 0
    second = body(user("fix it"), env_block("/w"), assistant(tool="1"), tool_result("1 failed"))
    assert turn_of(FIX, second) == 1
    third = body(*second["messages"], assistant("read", tool="2"), tool_result("code"))
    assert turn_of(FIX, third) == 2
    fourth = body(*third["messages"], assistant("edit", tool="3"), tool_result("ok"))
    assert turn_of(FIX, fourth) == 3


def test_condition_not_met_skips_the_turn() -> None:
    passed = body(user("fix it"), assistant(tool="1"), tool_result("all passed"))
    assert turn_of(FIX, passed) == 2  # turn 1 needs "failed"; turn 2 has no condition
    after = body(*passed["messages"], assistant("edit", tool="2"), tool_result("ok"))
    assert turn_of(FIX, after) == 3


def test_exhausted_script_falls_back() -> None:
    msgs = [user("go"), assistant(tool="0"), tool_result("failed")]
    for i, said in enumerate(("read", "edit", "done")):
        msgs += [assistant(said, tool=str(i)), tool_result("failed")]
    assert turn_of(FIX, body(*msgs)) is None


def test_fallback_leaves_the_pointer_in_place() -> None:
    s = scenario({"turns": [{"when": {"user_text_contains": "hello"}, **text("hi")}, text("next")]})
    # "nope" has no eligible turn... except the unconditional one: pointer jumps to it.
    assert turn_of(s, body(user("nope"))) == 1
    gated = scenario({"turns": [{"when": {"user_text_contains": "hello"}, **text("hi")}]})
    assert turn_of(gated, body(user("nope"))) is None
    # The fallback reply in history does not consume the gated turn.
    later = body(user("nope"), assistant("OK."), user("hello there"))
    assert turn_of(gated, later) == 0


def test_user_text_follow_up_and_reminders_are_ignored() -> None:
    chat = scenario(
        {"turns": [text("first"), {"when": {"user_text_contains": "again"}, **text("second")}]}
    )
    assert turn_of(chat, body(user("hi"))) == 0
    follow = body(user("hi"), assistant("first"), user("say it again"))
    assert turn_of(chat, follow) == 1
    other = body(user("hi"), assistant("first"), user("something else"))
    assert turn_of(chat, other) is None
    # The reminder block mentions "fix"; first_user_text_contains must not see it.
    picky = scenario({"turns": [{"when": {"first_user_text_contains": "fix"}, **text("x")}]})
    assert turn_of(picky, body(user("hello"))) is None
    assert turn_of(picky, body(user("please fix"))) == 0


def test_consecutive_assistant_messages_are_one_turn() -> None:
    split = body(user("go"), assistant(tool="1"), assistant("more"), tool_result("failed"))
    assert turn_of(FIX, split) == 1


def test_assistant_messages_the_script_did_not_produce_do_not_advance_it() -> None:
    # Resuming a session that died mid-tool, the CLI adds its own assistant line.
    chat = scenario({"turns": [text("Starting."), text("Finished.")]})
    resumed = body(
        user("go"),
        assistant("Starting."),
        tool_result("[interrupted]"),
        assistant("No response requested."),
        user("carry on"),
    )
    assert turn_of(chat, resumed) == 1
    # An interrupted stream leaves a prefix of the scripted text: it still counts.
    partial = body(user("go"), assistant("Star"), user("again"))
    assert turn_of(chat, partial) == 1


def test_all_when_keys_must_hold() -> None:
    both = scenario(
        {
            "turns": [
                {
                    "when": {"tool_result_contains": "boom", "system_prompt_contains": "SPECIAL"},
                    **text("x"),
                }
            ]
        }
    )
    history = (user("go"), assistant(tool="1"), tool_result("boom"))
    assert turn_of(both, body(*history)) is None
    assert turn_of(both, body(*history, system="a SPECIAL prompt")) == 0


def test_conversations_are_picked_by_condition() -> None:
    s = scenario(
        {
            "turns": [text("main")],
            "conversations": [
                {"when": {"system_prompt_contains": "REVIEWER"}, "turns": [text("r1"), text("r2")]}
            ],
        }
    )
    sub = select([s], body(user("review"), system="You are REVIEWER."))
    assert (sub.conversation, sub.turn_index) == (0, 0)
    sub2 = select([s], body(user("review"), assistant("r1"), user("more"), system="REVIEWER"))
    assert (sub2.conversation, sub2.turn_index) == (0, 1)
    main = select([s], body(user("hi")))
    assert (main.conversation, main.turn_index) == (None, 0)
    assert main.turn is not None and main.turn.reply[0].text == "main"  # type: ignore[union-attr]


def test_routing_by_name_match_and_default() -> None:
    plain = parse_scenario({"name": "plain", "turns": [text("p")]}, "p.yaml")
    fixer = parse_scenario(
        {"name": "fixer", "match": {"first_user_text_contains": "fix"}, "turns": [text("f")]},
        "f.yaml",
    )
    both = [fixer, plain]
    assert route(both, body(user("please fix"))) is fixer
    assert route(both, body(user("hello"))) is plain
    assert route(both, body(user("please fix")), "plain") is plain
    assert route([fixer], body(user("hello"))) is None
    assert select([fixer], body(user("hello"))).turn_index is None
    with pytest.raises(KeyError):
        route(both, body(user("x")), "missing")


def test_cwd_and_relative_paths() -> None:
    request = body(user("go"), env_block("/tmp/my work"))
    assert find_cwd(request) == "/tmp/my work"
    assert find_cwd(body(user("go"), system="CWD: /srv/app\nDate: today")) == "/srv/app"
    assert find_cwd(body(user("go"))) is None
    resolved = resolve_paths({"file_path": "a/../b.py", "content": "x"}, "/tmp/w")
    assert resolved == {"file_path": "/tmp/w/b.py", "content": "x"}
    assert resolve_paths({"file_path": "/abs"}, "/tmp/w") == {"file_path": "/abs"}
    assert resolve_paths({"file_path": "rel"}, None) == {"file_path": "rel"}
