"""Whatever a hook payload holds, the daemon's bridge answers calmly.

10,000 generated payloads (``tests/hooks/payloads.py``: seeded, fast, plus
deep nesting and lone surrogates, which JSON from a socket can carry) go
through a real Deck's ``hooks.handle`` in process, many sessions at once over
a few session ids; ~300 more come from hypothesis's structured strategy. No
exception, exit 0, a stdout of a documented shape or nothing, at most one
stderr line; afterwards the store is intact, every session is one agent on
the board, and a well-formed session still works end to end.
"""

from __future__ import annotations

import asyncio
import json
import logging
import random
import re
import threading
import time
from collections import Counter
from collections.abc import AsyncIterator, Coroutine, Iterator
from concurrent.futures import Future
from pathlib import Path
from typing import Any, TypeVar

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentdeck.core.agent import AgentSource, AgentState
from agentdeck.daemon import compose
from agentdeck.daemon.deck import Deck
from agentdeck.hooks.payload import MAX_NESTING
from agentdeck.hooks.protocol import HookReply, HookRequest
from agentdeck.settings import Settings
from tests.hooks.payloads import hook_payloads, nesting, random_payload, texts

T = TypeVar("T")
logger = logging.getLogger(__name__)

PAYLOADS = 10_000
STRUCTURED_EXAMPLES = 300
SEED = 20_260_601
SESSIONS = 24  # a few ids, so most payloads land on an agent that already exists
BATCH = 32  # payloads handled at once (several sessions, and the same one twice)
DEEPEST = 990  # the deepest nesting Python's json.loads reads off the socket
CALL_TIMEOUT = 120.0
DECISIONS = {"allow", "deny", "ask"}
CALLS = [
    ("Bash", {"command": "ls -la"}),  # no decision: Claude Code's own
    ("Bash", {"command": "sudo rm -rf /"}),  # deny
    ("Bash", {"command": "git push"}),  # ask
    ("Read", {"file_path": "README.md"}),
]


def session_ids(rnd: random.Random) -> list[str]:
    return [f"f022{n:04x}-{rnd.getrandbits(32):08x}-4000-8000-fuzz" for n in range(SESSIONS)]


def nested(depth: int) -> Any:
    value: Any = "bottom"
    for level in range(depth):
        value = [value] if level % 2 else {"k": value}
    return value


def lone_surrogates(rnd: random.Random) -> str:
    """What ``JSON.stringify`` of a string cut mid-pair sends, decoded."""
    return "cut " + chr(rnd.randint(0xD800, 0xDFFF)) + rnd.choice(["", "x", "\ud83d"])


def fuzzed(rnd: random.Random, sessions: list[str], projects: list[Path]) -> HookRequest:
    payload = random_payload(rnd)
    r = rnd.random()
    if r < 0.85:
        payload["session_id"] = rnd.choice(sessions)
    elif r < 0.9:
        payload.pop("session_id", None)  # or it keeps its random value
    if rnd.random() < 0.5:
        payload["cwd"] = str(rnd.choice(projects))
    r = rnd.random()
    if r < 0.02:
        key = rnd.choice(["tool_input", "tool_response", "error", "prompt", "message"])
        payload[key] = nested(rnd.randint(1, DEEPEST))
    elif r < 0.05:
        key = rnd.choice(["prompt", "tool_name", "last_assistant_message", "cwd", "session_id"])
        payload[key] = lone_surrogates(rnd)
    elif r < 0.06:
        payload["tool_response"] = {"stdout": lone_surrogates(rnd), "stderr": ""}
    elif r < 0.07:
        payload["hook_event_name"] = rnd.choice([None, "", 3, ["PreToolUse"], "_on_", "handle"])
    if payload["hook_event_name"] == "PreToolUse" and rnd.random() < 0.3:
        payload["tool_name"], payload["tool_input"] = rnd.choice(CALLS)
    env: dict[str, str] = {}
    if rnd.random() < 0.7:
        env["CLAUDE_PROJECT_DIR"] = rnd.choice([str(rnd.choice(projects)), "", "~nobody-x/p"])
    if rnd.random() < 0.3:
        env["CLAUDE_PID"] = rnd.choice(["1", "0", "-7", "x", "99999999999999999999", "4.5"])
    return HookRequest(event=payload, env=env)


def check(request: HookRequest, reply: HookReply) -> str:
    """A reply Claude Code can take: exit 0, nothing or one documented JSON
    object on stdout, at most one stderr line. Returns what kind it was."""
    where = f"{request.event.get('hook_event_name')!r}: {reply}"
    if reply.fallback:  # the daemon cannot decide: the client applies its fallback
        assert len(reply.reason.splitlines()) == 1, where
        if nesting(request.event) > MAX_NESTING:
            assert reply.reason.startswith("the hook payload nests deeper"), where
            return "fallback: too deep"
        assert request.event["hook_event_name"] == "PreToolUse", where
        assert reply.reason == "the session reported no working directory", where
        return "fallback: no cwd"
    assert nesting(request.event) <= MAX_NESTING, where
    assert reply.exit == 0, where
    assert len(reply.stderr.splitlines()) <= 1, where
    if reply.stderr:
        assert reply.stdout == "" and reply.stderr.startswith("agentdeck: "), where
        return "complaint"
    if not reply.stdout:
        return "nothing"
    out = json.loads(reply.stdout)["hookSpecificOutput"]
    name = request.event["hook_event_name"]
    assert out["hookEventName"] == name, where
    if name == "PreToolUse":
        assert set(out) == {"hookEventName", "permissionDecision", "permissionDecisionReason"}
        assert out["permissionDecision"] in DECISIONS, where
        assert isinstance(out["permissionDecisionReason"], str), where
        return f"decision: {out['permissionDecision']}"
    assert name == "SessionStart" and set(out) == {"hookEventName", "additionalContext"}
    assert isinstance(out["additionalContext"], str) and out["additionalContext"], where
    return "context"


def reported(request: HookRequest) -> str | None:
    """The session a request reports for, if the bridge takes it as one (as
    stored: a lone surrogate becomes U+FFFD)."""
    if nesting(request.event) > MAX_NESTING:
        return None
    name, session = request.event.get("hook_event_name"), request.event.get("session_id")
    if isinstance(name, str) and name and isinstance(session, str) and session:
        return re.sub("[\ud800-\udfff]", "\ufffd", session)
    return None


class DeckThread:
    """A real Deck on its own event loop in a thread, so that hypothesis (which
    drives synchronous tests) and the batches below can both reach it."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.deck: Deck | None = None

    def call(self, coro: Coroutine[Any, Any, T]) -> T:
        future: Future[T] = asyncio.run_coroutine_threadsafe(coro, self.loop)
        return future.result(CALL_TIMEOUT)

    def handle(self, requests: list[HookRequest]) -> list[HookReply]:
        """Handle the requests concurrently, as the socket server would."""
        deck = self.deck
        assert deck is not None

        async def together() -> list[HookReply]:
            return list(await asyncio.gather(*(deck._hooks.handle(r) for r in requests)))

        return self.call(together())

    def __enter__(self) -> DeckThread:
        self.thread.start()
        self.deck = self.call(compose.open_deck(self.settings))
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            if self.deck is not None:
                self.call(self.deck.close())
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(CALL_TIMEOUT)
            self.loop.close()


@pytest.fixture(scope="module")
def fuzz_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("bridge-fuzz")


@pytest.fixture(scope="module")
def projects(fuzz_root: Path) -> list[Path]:
    out = []
    for name in ("alpha", "beta", "opted-out"):
        path = fuzz_root / name
        path.mkdir()
        out.append(path)
    (out[2] / ".agentdeck").mkdir()
    (out[2] / ".agentdeck" / "ignore").write_text("")
    return out


@pytest.fixture(scope="module")
def running(fuzz_root: Path) -> Iterator[DeckThread]:
    # Nobody answers the approval inbox here: a call the profile asks about is
    # answered "ask" (Claude Code's prompt) once the short deadline passes.
    settings = Settings(
        home=fuzz_root / "home",
        claude_config_dir=fuzz_root / "claude-config",
        hook_approval_seconds=0.05,
    )
    with DeckThread(settings) as deck:
        yield deck


def test_ten_thousand_payloads_are_answered_and_the_store_survives(
    running: DeckThread, projects: list[Path]
) -> None:
    rnd = random.Random(SEED)
    sessions = session_ids(rnd)
    requests = [fuzzed(rnd, sessions, projects) for _ in range(PAYLOADS)]
    kinds: Counter[str] = Counter()
    started = time.perf_counter()
    for at in range(0, PAYLOADS, BATCH):
        batch = requests[at : at + BATCH]
        for request, reply in zip(batch, running.handle(batch), strict=True):
            kinds[check(request, reply)] += 1
    elapsed = time.perf_counter() - started
    logger.info("%d payloads through the bridge in %.1f s: %s", PAYLOADS, elapsed, dict(kinds))
    every_kind = {"nothing", "complaint", "context", "fallback: too deep", "fallback: no cwd"}
    # deny-and-ask (the default): a call no deny or ask rule matches gets no decision.
    assert set(kinds) >= every_kind | {"decision: deny", "decision: ask"}
    assert "decision: allow" not in kinds

    deck = running.deck
    assert deck is not None
    assert deck._store.integrity_check() == "ok"
    agents = running.call(deck.list_agents(limit=100_000))
    seen = {s for s in map(reported, requests) if s is not None}
    assert all(a.source is AgentSource.EXTERNAL for a in agents)
    assert sorted(a.session_id or "" for a in agents) == sorted(seen), "one agent per session"
    assert len(seen) > SESSIONS, "random session ids made agents too"
    events = running.call(deck.events(agent_id=agents[0].id))
    assert events and events[0].type == "agent_spawned"


def test_a_clean_session_still_works_after_the_fuzz(
    running: DeckThread, projects: list[Path]
) -> None:
    project = projects[0]
    common = {"session_id": "after-fuzz-0001", "cwd": str(project), "transcript_path": "/t.jsonl"}

    def send(name: str, **fields: Any) -> HookReply:
        event = {**common, "hook_event_name": name, **fields}
        [reply] = running.handle([HookRequest(event=event, env={})])
        return reply

    call = {"tool_name": "Bash", "tool_input": {"command": "ls"}, "tool_use_id": "toolu_a1"}
    send("SessionStart", source="startup")
    assert send("PreToolUse", **call) == HookReply()  # no rule speaks: Claude Code decides
    send("PostToolUse", **call, tool_response={"stdout": "after-fuzz-marker", "stderr": ""})
    send("Stop", last_assistant_message="listed the files after the fuzz")
    send("SessionEnd", reason="other")
    deck = running.deck
    assert deck is not None
    [agent] = [
        a
        for a in running.call(deck.list_agents(limit=100_000))
        if a.session_id == "after-fuzz-0001"
    ]
    assert agent.state is AgentState.DONE and agent.turns == 1
    hits = running.call(deck._memory.search("after-fuzz-marker", project=str(project)))
    assert hits, "memory still records and finds"


@settings(
    deadline=None,
    derandomize=True,
    database=None,
    max_examples=STRUCTURED_EXAMPLES,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.function_scoped_fixture,
    ],
)
@given(
    payload=hook_payloads(),
    session=st.one_of(st.sampled_from(["hyp-a", "hyp-b", "hyp-c"]), texts),
    project_dir=st.one_of(st.none(), texts),
)
def test_structured_payloads_are_answered(
    running: DeckThread, payload: dict[str, Any], session: str, project_dir: str | None
) -> None:
    """Hypothesis's own strategy: its edge cases, and they shrink."""
    payload = {**payload, "session_id": session}
    env = {} if project_dir is None else {"CLAUDE_PROJECT_DIR": project_dir}
    request = HookRequest(event=payload, env=env)
    [reply] = running.handle([request])
    check(request, reply)


# -- what the fuzz found, one test each ---------------------------------------------


@pytest.fixture
async def open_deck(settings: Settings) -> AsyncIterator[Deck]:
    deck = await compose.open_deck(settings)
    try:
        yield deck
    finally:
        await deck.close()


def hook(name: str, project: Path | str, session: str = "regress-1", **fields: Any) -> HookRequest:
    event = {"session_id": session, "cwd": str(project), "hook_event_name": name, **fields}
    return HookRequest(event=event, env={})


@pytest.mark.anyio
async def test_an_impossible_claude_pid_is_ignored_and_does_not_poison_the_session(
    open_deck: Deck, tmp_path: Path
) -> None:
    """A pid past SQLite's integers failed every later write of the session."""
    for pid in ("99999999999999999999", "-7", "0", "4.5"):
        request = hook("UserPromptSubmit", tmp_path, prompt=f"pid {pid}")
        reply = await open_deck._hooks.handle(HookRequest(request.event, {"CLAUDE_PID": pid}))
        assert reply == HookReply()
    assert await open_deck._hooks.handle(hook("Stop", tmp_path, last_assistant_message="ok")) == (
        HookReply()
    )
    [agent] = await open_deck.list_agents()
    assert agent.pid is None and agent.turns == 1
    events = await open_deck.events(agent_id=agent.id)
    prompts = [e.data["text"] for e in events if e.type == "user_message_sent"]
    assert "pid 99999999999999999999" in prompts and "pid 4.5" in prompts


@pytest.mark.anyio
async def test_a_lone_surrogate_is_stored_as_a_replacement_character(
    open_deck: Deck, tmp_path: Path
) -> None:
    """JSON can carry half a surrogate pair (a string cut mid-pair); UTF-8 and
    so SQLite cannot: every write of such a payload failed."""
    cut = "tests pass \ud83d"
    session = "half-\udc00-pair"
    call = {"tool_name": "Bash", "tool_input": {"command": "echo \ud83d"}, "tool_use_id": "t1"}
    for request in (
        hook("UserPromptSubmit", tmp_path, session, prompt=cut),
        hook("PostToolUse", tmp_path, session, **call, tool_response={"stdout": cut}),
        hook("Stop", tmp_path, session, last_assistant_message=cut),
    ):
        assert await open_deck._hooks.handle(request) == HookReply()
    [agent] = await open_deck.list_agents()
    assert agent.session_id == "half-\ufffd-pair"
    texts = [e.data.get("text") for e in await open_deck.events(agent_id=agent.id)]
    assert "tests pass \ufffd" in texts
    assert await open_deck._memory.search("tests", project=str(tmp_path))


@pytest.mark.anyio
async def test_a_payload_nested_too_deep_falls_back_and_records_nothing(
    open_deck: Deck, tmp_path: Path
) -> None:
    """JSON from the socket nests up to ~990 levels; redaction and JSON
    encoding recursed past Python's limit on it."""
    deep = hook("PreToolUse", tmp_path, tool_name="mcp__x", tool_input=nested(DEEPEST))
    reply = await open_deck._hooks.handle(deep)
    assert reply.fallback and str(MAX_NESTING) in reply.reason
    assert await open_deck.list_agents() == []
    shallow = hook("PreToolUse", tmp_path, tool_name="mcp__x", tool_input=nested(MAX_NESTING - 1))
    assert not (await open_deck._hooks.handle(shallow)).fallback


@pytest.mark.anyio
async def test_pretooluse_without_a_working_directory_falls_back(open_deck: Deck) -> None:
    """The policy judges paths against the workspace: without one it raised."""
    request = hook("PreToolUse", "", tool_name="Bash", tool_input={"command": "ls"})
    reply = await open_deck._hooks.handle(request)
    assert reply == HookReply.fall_back("the session reported no working directory")
    [agent] = await open_deck.list_agents()
    [called] = [e for e in await open_deck.events(agent_id=agent.id) if e.type == "tool_called"]
    assert called.data["tool"] == "Bash", "the board still shows the call"


@pytest.mark.anyio
async def test_a_project_dir_naming_no_user_is_taken_literally(
    open_deck: Deck, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``~nobody/p`` and a NUL in a ``~user`` made pathlib raise; a NUL
    anywhere made the opt-out check raise."""
    monkeypatch.chdir(tmp_path)
    call = {"tool_name": "Bash", "tool_input": {"command": "ls"}, "tool_response": "a.txt"}
    for n, project_dir in enumerate(("~no-such-user-x/p", "~a\x00b/p", "/p\x00q")):
        env = {"CLAUDE_PROJECT_DIR": project_dir}
        for request in (
            hook("UserPromptSubmit", tmp_path, f"s{n}", prompt="hi"),
            hook("PostToolUse", tmp_path, f"s{n}", **call),
        ):
            assert await open_deck._hooks.handle(HookRequest(request.event, env)) == HookReply()
    cwds = sorted(a.cwd for a in await open_deck.list_agents())
    assert cwds == sorted(
        ["/p\x00q", str(tmp_path / "~no-such-user-x/p"), str(tmp_path / "~a\x00b/p")]
    )
