"""The bridge core on the real daemon, the real Claude Code CLI and the scripted
model, with an in-memory platform standing in for the chat."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from agentdeck.bridges.platform import Conversation, PromptKind
from agentdeck.bridges.text import open_fence
from agentdeck.settings import Settings
from tests.bridges.memplatform import (
    ALICE,
    CHANNEL,
    MALLORY,
    MemoryPlatform,
    agent_of,
    bridged,
    message,
    settled,
)
from tests.support.served import serving
from tests.support.waiting import eventually

pytestmark = [pytest.mark.anyio, pytest.mark.cli]

CODE = "\n".join(f"    total += compute({i})  # step {i}" for i in range(60))
FENCED = (
    f"Here is the code:\n```python\ndef run():\n    total = 0\n{CODE}\n    return total\n```\nDone."
)


def scenario(tmp_path: Path, name: str, turns: list[dict[str, Any]]) -> str:
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump({"name": name, "turns": turns}))
    return str(path)


WAIT_FOR_GO = "while [ ! -f go ]; do sleep 0.05; done; echo gate-open"


def gated(tmp_path: Path, turns: list[dict[str, Any]]) -> tuple[Path, dict[str, Any]]:
    """The workspace ``work`` and the agent defaults of the "gated" scenario ``turns``,
    whose Bash ``WAIT_FOR_GO`` waits for ``work/go`` (a sandboxed agent sees only its
    workspace)."""
    work = tmp_path / "work"
    work.mkdir()
    play = scenario(tmp_path, "gated", turns)
    return work, {"scenario": play, "allow": ["Bash"], "cwd": str(work)}


def texts(platform: MemoryPlatform) -> str:
    return "\n".join(platform.said())


async def test_a_message_becomes_a_prompt_and_the_reply_comes_back_chunked(
    settings: Settings, tmp_path: Path
) -> None:
    play = scenario(
        tmp_path,
        "code",
        [
            {"reply": [{"tool_use": {"name": "Bash", "input": {"command": "seq 1 600"}}}]},
            {"reply": [{"text": FENCED}]},
        ],
    )
    platform = MemoryPlatform(limit=400)
    defaults = {"scenario": play, "allow": ["Bash(seq *)"]}
    async with (
        serving(settings) as served,
        bridged(served, platform, tmp_path / "b.json", agent=defaults) as bridge,
    ):
        # Not served: another channel, a bot. Then a member in the channel.
        await bridge.handle(message(platform, "psst", conversation=Conversation("elsewhere")))
        await bridge.handle(message(platform, "beep", from_bot=True))
        first = message(platform, "show me the code")
        await bridge.handle(first)
        agent = await agent_of(served, bridge)
        assert agent["spec"]["prompt"] == "show me the code"
        await settled(served, agent["id"], 1)
        await eventually(
            _async(lambda: "Done." in texts(platform)), timeout=30, what="the reply's end"
        )
        async with served.api() as api:
            agents = (await api.get("/api/agents")).json()["agents"]
        assert [a["id"] for a in agents] == [agent["id"]], "only the allowed channel's message"
    said = platform.said()
    assert said[0] == "▸ Bash: seq 1 600"
    [attached] = [m for m in platform.messages.values() if m.kind == "attachment"]
    assert attached.data.decode().split() == [str(i) for i in range(1, 601)]
    chunks = said[1:]
    assert len(chunks) >= 4, chunks
    assert all(len(c) <= 400 and open_fence(c) is None for c in chunks)
    assert all(c.startswith("```python\n") for c in chunks[1:-1])
    # The code is all there, in order, each line once.
    lines = [line for c in chunks for line in c.splitlines() if "compute(" in line]
    assert lines == CODE.splitlines()
    assert platform.said(Conversation("elsewhere")) == []
    assert first.message_id and platform.incoming[first.message_id].reactions == ["👀"]
    assert (CHANNEL.key, True) in platform.busy and platform.busy[-1] == (CHANNEL.key, False)


async def test_a_message_while_the_agent_works_is_queued_and_answered_in_order(
    settings: Settings, tmp_path: Path
) -> None:
    play = scenario(
        tmp_path,
        "two",
        [
            {"delay": 1.0, "reply": [{"text": "FIRST-ANSWER"}]},
            {"when": {"user_text_contains": "second"}, "reply": [{"text": "SECOND-ANSWER"}]},
        ],
    )
    platform = MemoryPlatform()
    async with (
        serving(settings) as served,
        bridged(served, platform, tmp_path / "b.json", agent={"scenario": play}) as bridge,
    ):
        await bridge.handle(message(platform, "first question"))
        second = message(platform, "second question", author=MALLORY)
        await bridge.handle(second)
        agent = await agent_of(served, bridge)
        await settled(served, agent["id"], 2)
        await eventually(_async(lambda: len(platform.said()) == 2), timeout=30, what="both answers")
        async with served.api() as api:
            events = (await api.get("/api/events", params={"agent": agent["id"]})).json()
        sent = [e["data"]["text"] for e in events["events"] if e["type"] == "user_message_sent"]
    assert platform.said() == ["FIRST-ANSWER", "SECOND-ANSWER"]
    assert sent == ["first question", "second question"]
    assert platform.incoming[second.message_id].reactions == ["⏳"]
    actions = (tmp_path / "b-actions.jsonl").read_text().splitlines()
    assert '"actor": "memory:2:mallory", "action": "queued"' in actions[1]
    # Who did what from chat is in the daemon's audit log too (digests, not texts).
    acts = [(e.tool, e.answered_by) for e in await _audit(settings) if e.agent_id == agent["id"]]
    assert ("chat:start", "user:bridge:memory:1:alice") in acts
    assert ("chat:message", "user:bridge:memory:2:mallory") in acts
    assert all("second question" not in str(e) for e in await _audit(settings))


def ask_profile(tmp_path: Path, timeout: float = 600) -> str:
    path = tmp_path / "asks.yaml"
    path.write_text(
        yaml.safe_dump(
            {
                "name": "asks",
                "default": "ask",
                "allow": ["Read"],
                "approval_timeout_seconds": timeout,
            }
        )
    )
    return str(path)


TOUCH = [
    {"reply": [{"tool_use": {"name": "Bash", "input": {"command": "touch made.txt"}}}]},
    {"reply": [{"text": "Made it."}]},
]


async def test_an_approval_is_answered_by_an_allowed_member_only(
    settings: Settings, tmp_path: Path
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    defaults = {
        "scenario": scenario(tmp_path, "touch", TOUCH),
        "profile": ask_profile(tmp_path),
        "cwd": str(work),
    }
    platform = MemoryPlatform()
    async with (
        serving(settings) as served,
        bridged(served, platform, tmp_path / "b.json", agent=defaults) as bridge,
    ):
        await bridge.handle(message(platform, "make the file"))
        prompt = await eventually(
            _async(lambda: platform.prompts()), timeout=60, what="the approval prompt"
        )
        asked = prompt[0]
        assert asked.prompt is not None and asked.prompt.kind is PromptKind.APPROVAL
        assert "asks to use Bash: touch made.txt" in asked.text
        request = asked.prompt.request_id

        refused = await bridge.decide(MALLORY, request, "allow")
        assert refused.startswith("You may not answer approvals here")
        async with served.api() as api:
            still = (await api.get(f"/api/approvals/{request}")).json()
        assert still["state"] == "pending" and not asked.closed

        assert await bridge.decide(ALICE, request, "allow") == "Allowed."
        await eventually(_async(lambda: asked.closed), timeout=30, what="the prompt to close")
        assert asked.text.endswith("✅ Allowed by alice.")
        agent = await agent_of(served, bridge)
        await settled(served, agent["id"], 1)
        await eventually(
            _async(lambda: "Made it." in texts(platform)), timeout=30, what="the reply"
        )
        async with served.api() as api:
            answered = (await api.get(f"/api/approvals/{request}")).json()
        again = await bridge.decide(ALICE, request, "deny")
    assert (work / "made.txt").exists()
    assert answered["state"] == "allowed"
    assert answered["answered_by"] == "user:bridge:memory:1:alice"
    assert again == "This request is no longer open."
    audit = await _audit(settings)
    assert any(e.answered_by == "user:bridge:memory:1:alice" for e in audit)


async def test_an_unanswered_approval_is_denied_at_its_timeout_and_says_so(
    settings: Settings, tmp_path: Path
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    defaults = {
        "scenario": scenario(tmp_path, "touch", TOUCH),
        "profile": ask_profile(tmp_path, timeout=2),
        "cwd": str(work),
    }
    platform = MemoryPlatform()
    async with (
        serving(settings) as served,
        bridged(served, platform, tmp_path / "b.json", agent=defaults) as bridge,
    ):
        await bridge.handle(message(platform, "make the file"))
        prompts = await eventually(_async(lambda: platform.prompts()), timeout=60, what="prompt")
        await eventually(_async(lambda: prompts[0].closed), timeout=60, what="the timeout")
        agent = await agent_of(served, bridge)
        await settled(served, agent["id"], 1)
    assert prompts[0].text.endswith("⌛ Denied: nobody answered before the timeout.")
    assert not (work / "made.txt").exists()


async def test_a_bridge_restart_in_the_middle_of_a_reply_loses_and_repeats_nothing(
    settings: Settings, tmp_path: Path
) -> None:
    work, defaults = gated(
        tmp_path,
        [
            {
                "reply": [
                    {"text": "PART-ONE before the wait."},
                    {"tool_use": {"name": "Bash", "input": {"command": WAIT_FOR_GO}}},
                ]
            },
            {"reply": [{"text": "PART-TWO after the wait."}]},
        ],
    )
    gate = work / "go"
    platform = MemoryPlatform()
    state = tmp_path / "b.json"
    async with serving(settings) as served:
        async with bridged(served, platform, state, agent=defaults) as bridge:
            await bridge.handle(message(platform, "go on"))
            await eventually(
                _async(lambda: "▸ Bash: while" in texts(platform)), timeout=60, what="PART-ONE"
            )
            agent = await agent_of(served, bridge)
        # The bridge is gone; the agent goes on and finishes meanwhile.
        gate.write_text("")
        await settled(served, agent["id"], 1)
        async with bridged(served, platform, state, agent=defaults):
            await eventually(
                _async(lambda: "PART-TWO" in texts(platform)), timeout=30, what="PART-TWO"
            )
            # The turn's end is delivered too: the conversation takes a new message.
            await eventually(
                _async(lambda: platform.busy[-1] == (CHANNEL.key, False)), what="the turn's end"
            )
    said = texts(platform)
    assert said.count("PART-ONE") == 1 and said.count("PART-TWO") == 1
    assert said.count("▸ Bash: while") == 1
    assert said.index("PART-ONE") < said.index("▸ Bash") < said.index("PART-TWO")


async def test_a_ten_thousand_character_reply(settings: Settings, tmp_path: Path) -> None:
    words = [f"word{i:05d}" for i in range(1000)]
    body = "\n".join(" ".join(words[i : i + 10]) for i in range(0, 1000, 10))
    code = "\n".join(f"line_{i} = {i}" for i in range(150))
    reply = f"{body[:4000]}\n```\n{code}\n```\n{body[4000:]}"
    assert len(reply) >= 10_000
    play = scenario(tmp_path, "long", [{"reply": [{"text": reply}]}])
    platform = MemoryPlatform(limit=2000)
    async with (
        serving(settings) as served,
        bridged(served, platform, tmp_path / "b.json", agent={"scenario": play}) as bridge,
    ):
        await bridge.handle(message(platform, "tell me everything"))
        agent = await agent_of(served, bridge)
        await settled(served, agent["id"], 1)
        await eventually(
            _async(lambda: "word00999" in texts(platform)), timeout=30, what="the whole reply"
        )
    chunks = platform.said()
    assert len(chunks) >= 5
    assert all(len(c) <= 2000 and open_fence(c) is None for c in chunks)
    fences = {"```"}
    got = [line for c in chunks for line in c.splitlines() if line not in fences]
    assert got == [line for line in reply.splitlines() if line not in fences]


async def _audit(settings: Settings) -> list[Any]:
    from agentdeck.store.store import Store

    store = Store.open(settings.db_path)
    try:
        return list(await store.read_audit_tail(limit=100))
    finally:
        await store.close()


def _async(probe: Any) -> Any:
    """A plain condition as the coroutine ``eventually`` polls (with its deadline)."""

    async def run() -> Any:
        return probe()

    return run


async def test_a_question_for_a_person_is_answered_from_the_chat(
    settings: Settings, tmp_path: Path
) -> None:
    ask = {
        "tool_use": {
            "name": "mcp__deck__ask_orchestrator",
            "input": {"question": "Which colour, red or blue?"},
        }
    }
    play = scenario(
        tmp_path,
        "asks",
        [
            {"reply": [ask]},
            {"when": {"tool_result_contains": "blue"}, "reply": [{"text": "Going with blue."}]},
        ],
    )
    platform = MemoryPlatform()
    async with (
        serving(settings) as served,
        bridged(served, platform, tmp_path / "b.json", agent={"scenario": play}) as bridge,
    ):
        await bridge.handle(message(platform, "paint it"))
        [asked] = await eventually(
            _async(lambda: platform.prompts()), timeout=60, what="the question"
        )
        assert asked.prompt is not None and asked.prompt.kind is PromptKind.ASK
        assert asked.text.endswith("asks: Which colour, red or blue?")
        ask_id = asked.prompt.request_id
        refused = await bridge.reply(MALLORY, ask_id, "red")
        assert refused.startswith("You may not answer agents' questions here")
        assert await bridge.reply(ALICE, ask_id, "  ") == "An empty answer is no answer."
        assert await bridge.reply(ALICE, ask_id, "blue") == "Answered."
        await eventually(_async(lambda: asked.closed), timeout=30, what="the question to close")
        await eventually(
            _async(lambda: "Going with blue." in texts(platform)), timeout=60, what="the reply"
        )
        async with served.api() as api:
            answered = (await api.get(f"/api/asks/{ask_id}")).json()
    assert asked.text.endswith("↳ alice answered: blue")
    assert answered["answered_by"] == "user:bridge:memory:1:alice"
    assert answered["answer"] == "blue"


async def test_with_interrupt_a_message_while_busy_stops_the_turn_and_goes_next(
    settings: Settings, tmp_path: Path
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    hang = {"tool_use": {"name": "Bash", "input": {"command": "sleep 600"}}}
    play = scenario(
        tmp_path,
        "hang",
        [
            {"reply": [{"text": "Starting a long job."}, hang]},
            {"when": {"user_text_contains": "instead"}, "reply": [{"text": "OK, instead."}]},
        ],
    )
    platform = MemoryPlatform()
    defaults = {"scenario": play, "allow": ["Bash(sleep *)"], "cwd": str(work)}
    async with (
        serving(settings) as served,
        bridged(
            served, platform, tmp_path / "b.json", agent=defaults, on_busy="interrupt"
        ) as bridge,
    ):
        await bridge.handle(message(platform, "run the job"))
        await eventually(
            _async(lambda: "▸ Bash: sleep 600" in texts(platform)), timeout=60, what="the job"
        )
        await bridge.handle(message(platform, "do this instead"))
        await eventually(
            _async(lambda: "OK, instead." in texts(platform)), timeout=60, what="the new turn"
        )
        agent = await agent_of(served, bridge)

        async def two_turns() -> list[dict[str, Any]] | None:
            async with served.api() as api:
                found = (await api.get("/api/events", params={"agent": agent["id"]})).json()
            events: list[dict[str, Any]] = found["events"]
            done = [e for e in events if e["type"] == "turn_completed"]
            return events if len(done) == 2 else None

        events = await eventually(two_turns, timeout=30, what="both turns' ends")
    sent = [e["data"]["text"] for e in events if e["type"] == "user_message_sent"]
    assert sent == ["run the job", "do this instead"]
    turns = [e["data"] for e in events if e["type"] == "turn_completed"]
    # The first turn was cut short: its `sleep 600` did not run out (how the CLI
    # reports the stop varies with when it lands: aborted_streaming, or completed).
    assert turns[0]["duration_ms"] < 60_000 and turns[1]["terminal_reason"] == "completed"


async def test_always_allows_the_same_call_again_for_this_agent_only(
    settings: Settings, tmp_path: Path
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    touch = {"tool_use": {"name": "Bash", "input": {"command": "touch made.txt"}}}
    play = scenario(
        tmp_path,
        "twice",
        [{"reply": [touch]}, {"reply": [touch]}, {"reply": [{"text": "Touched twice."}]}],
    )
    defaults = {"scenario": play, "profile": ask_profile(tmp_path), "cwd": str(work)}
    platform = MemoryPlatform()
    async with (
        serving(settings) as served,
        bridged(served, platform, tmp_path / "b.json", agent=defaults) as bridge,
    ):
        await bridge.handle(message(platform, "touch it twice"))
        [asked] = await eventually(_async(lambda: platform.prompts()), timeout=60, what="prompt")
        assert asked.prompt is not None
        request = asked.prompt.request_id
        assert await bridge.decide(ALICE, request, "allow", always=True) == "Allowed."
        await eventually(
            _async(lambda: "Touched twice." in texts(platform)), timeout=60, what="the reply"
        )
        async with served.api() as api:
            answered = (await api.get(f"/api/approvals/{request}")).json()
    assert len(platform.prompts()) == 1, "the second call was allowed by the grant"
    assert answered["remember"] == "session"
    assert texts(platform).count("▸ Bash: touch made.txt") == 2


async def test_memory_finds_what_an_agent_of_the_chat_did(
    settings: Settings, tmp_path: Path
) -> None:
    from agentdeck.bridges import commands

    play = scenario(
        tmp_path,
        "remember",
        [
            {"reply": [{"tool_use": {"name": "Bash", "input": {"command": "echo zebrafish"}}}]},
            {"reply": [{"text": "Echoed."}]},
        ],
    )
    platform = MemoryPlatform()
    defaults = {"scenario": play, "allow": ["Bash(echo *)"]}
    async with (
        serving(settings) as served,
        bridged(served, platform, tmp_path / "b.json", agent=defaults) as bridge,
    ):
        assert await commands.memory(bridge, "  ") == "Search for what? /memory QUERY"
        assert await commands.memory(bridge, "zebrafish") == "Nothing remembered about 'zebrafish'."
        await bridge.handle(message(platform, "echo it"))
        agent = await agent_of(served, bridge)
        await settled(served, agent["id"], 1)

        async def found() -> str | None:
            said = await commands.memory(bridge, "zebrafish")
            return said if said.startswith("- ") else None

        said = await eventually(found, timeout=30, what="the observation")
        # Punctuation is no search syntax: a hostile query is an answer, not an error.
        odd = await commands.memory(bridge, 'zebra" OR * NEAR(')
    assert "Bash(echo zebrafish)" in said, said
    assert odd.startswith(("- ", "Nothing remembered")), odd


async def test_status_stop_resume_and_cost_act_for_the_member_who_asked(
    settings: Settings, tmp_path: Path
) -> None:
    from agentdeck.bridges import commands

    work, defaults = gated(
        tmp_path,
        [
            {"reply": [{"tool_use": {"name": "Bash", "input": {"command": WAIT_FOR_GO}}}]},
            {"reply": [{"text": "Gate passed."}]},
            {"reply": [{"text": "Resumed."}]},
        ],
    )
    platform = MemoryPlatform()
    async with (
        serving(settings) as served,
        bridged(served, platform, tmp_path / "b.json", agent=defaults) as bridge,
    ):
        assert await commands.status(bridge, CHANNEL) == commands.NO_AGENT
        await bridge.handle(message(platform, "wait at the gate"))
        agent = await agent_of(served, bridge)

        async def using_bash() -> str | None:
            said = await commands.status(bridge, CHANNEL)
            return said if said.endswith("using Bash") else None

        status = await eventually(using_bash, timeout=60, what="the agent in its Bash call")
        assert await commands.stop(bridge, MALLORY, CHANNEL) == "Stopping the current turn."
        stopped = await settled(served, agent["id"], 1)
        cost = await commands.cost(bridge, CHANNEL)
        # A live agent is not resumed (it takes a message); an ended one is.
        refused = await commands.resume(bridge, ALICE, CHANNEL)
        async with served.api() as api:
            killed = await api.post(f"/api/agents/{agent['id']}/kill", json={})
        assert killed.status_code == 200, killed.text
        await settled(served, agent["id"], 1)
        resumed = await commands.resume(bridge, ALICE, CHANNEL)
        busy = bridge.state.conversations[CHANNEL.key].busy
    assert status == f"{agent['name']} ({agent['id']}): running, 0 turn(s), using Bash"
    name = agent["name"]
    assert cost == (
        f"{name}: ${stopped['cost_usd']:.4f}, "
        f"{stopped['input_tokens']} tokens in, {stopped['output_tokens']} out"
    )
    assert refused.startswith("Not resumed: ") and "cannot resume a live agent" in refused
    assert resumed == "Resuming." and busy
    acts = [(e.tool, e.answered_by) for e in await _audit(settings) if e.agent_id == agent["id"]]
    assert ("chat:interrupt", "user:bridge:memory:2:mallory") in acts
    assert ("chat:resume", "user:bridge:memory:1:alice") in acts


def write_template(project: Path, name: str, tools: str) -> None:
    agents = project / ".claude" / "agents"
    agents.mkdir(parents=True, exist_ok=True)
    front = f"name: {name}\ndescription: {name} of the chat\ntools: {tools}"
    (agents / f"{name}.md").write_text(f"---\n{front}\n---\nYou are the {name}.\n")


async def test_new_agents_start_from_the_bridges_template_or_the_conversations_own(
    settings: Settings, tmp_path: Path
) -> None:
    from agentdeck.bridges import commands

    work = tmp_path / "work"
    write_template(work, "reviewer", "Read")
    write_template(work, "writer", "Read, Edit")
    play = scenario(tmp_path, "hi", [{"reply": [{"text": "Hi."}]}, {"reply": [{"text": "Hi."}]}])
    platform = MemoryPlatform()
    thread = Conversation(CHANNEL.channel, "t1")
    defaults = {"scenario": play, "cwd": str(work)}
    async with (
        serving(settings) as served,
        bridged(
            served, platform, tmp_path / "b.json", agent=defaults, template="reviewer"
        ) as bridge,
    ):
        await bridge.handle(message(platform, "review it"))
        reviewer = await agent_of(served, bridge)
        assert await commands.new(bridge, ALICE, thread, "", "writer") == (
            "Ready: the first message here starts the agent (writer)."
        )
        await bridge.handle(message(platform, "write it", conversation=thread))
        writer = await agent_of(served, bridge, thread)
    assert (reviewer["spec"]["template"], reviewer["spec"]["tools"]) == ("reviewer", ["Read"])
    assert (writer["spec"]["template"], writer["spec"]["tools"]) == ("writer", ["Read", "Edit"])


def test_agent_defaults_that_name_no_agent_setting_are_refused() -> None:
    from agentdeck.bridges.conversation import spec_of
    from agentdeck.errors import ConfigError

    spec = spec_of({"prompt": "hi", "scenario": "chat", "allow": ["Bash"]})
    assert (spec.prompt, spec.scenario, spec.allow) == ("hi", "chat", ("Bash",))
    with pytest.raises(ConfigError, match="agent defaults name no agent setting: agent, colour"):
        spec_of({"prompt": "hi", "agent": "reviewer", "colour": "red"})
    # A template's Claude Code keys (hooks run commands) never come raw from a config.
    hooks = {"hooks": {"SessionStart": [{"hooks": [{"type": "command", "command": "id"}]}]}}
    with pytest.raises(ConfigError, match="no agent setting: claude"):
        spec_of({"prompt": "hi", "claude": hooks})
