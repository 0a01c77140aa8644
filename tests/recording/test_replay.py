"""``agentdeck replay``: a recorded run (the real Claude Code, the scripted model
upstream) restored into a fresh workspace and played against its cassette."""

from __future__ import annotations

import json
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from agentdeck.core.agent import AgentSpec, AgentState
from agentdeck.core.events import EventType
from agentdeck.daemon.compose import build_runner
from agentdeck.errors import NotFound, UsageError
from agentdeck.runner.recording.replay import BEYOND, Recorded, ReplayApp, ReplayReport
from agentdeck.runner.recording.replay_run import replay, restore, start_of
from agentdeck.settings import Settings
from agentdeck.store.store import Store
from tests.conftest import make_settings
from tests.support.deckcli import deck, deck_env

pytestmark = [pytest.mark.anyio, pytest.mark.cli]

TURNS = [
    {"reply": [{"tool_use": {"name": "Bash", "input": {"command": "cat input.txt"}}}]},
    {
        "reply": [
            {
                "tool_use": {
                    "name": "Write",
                    "input": {"file_path": "out.txt", "content": "copied\n"},
                }
            }
        ]
    },
    {"reply": [{"text": "Read the input and wrote out.txt."}]},
]


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
async def recorded(
    tmp_path_factory: pytest.TempPathFactory,
) -> AsyncIterator[tuple[Settings, str, list[Any], str]]:
    """One recorded run, shared by the module's replays (each in a runner of its own)."""
    tmp = tmp_path_factory.mktemp("replay")
    settings = make_settings(tmp)
    settings.ensure_home()
    scenario = tmp / "copy.yaml"
    scenario.write_text(yaml.safe_dump({"name": "copy", "turns": TURNS}))
    work = tmp / "work"
    work.mkdir()
    (work / "input.txt").write_text("the recorded input\n")
    _git(work, "init", "-q")
    _git(work, "add", "input.txt")
    _git(work, "commit", "-q", "-m", "start")
    (work / "draft.txt").write_text("not committed\n")  # in the start checkpoint only
    store = Store.open(settings.db_path)
    runner = build_runner(store, settings)
    try:
        session = await runner.start(
            AgentSpec(
                prompt="copy the input",
                cwd=str(work),
                scenario=str(scenario),
                record=True,
                allow=("Bash", "Write"),
            )
        )
        await session.wait_finished(timeout=90)
        assert session.agent.state == AgentState.DONE, session.agent.last_error
        calls, final = await _calls(store, session.agent.id)
    finally:
        try:
            await runner.shutdown()
        finally:
            await store.close()
    yield settings, session.agent.id, calls, final


def _git(cwd: Path, *args: str) -> str:
    who = ("-c", "user.name=t", "-c", "user.email=t@t")
    return subprocess.run(
        ("git", "-C", str(cwd), *who, *args), check=True, text=True, capture_output=True
    ).stdout


async def _calls(store: Store, agent_id: str) -> tuple[list[Any], str]:
    events = await store.read(agent_id=agent_id)
    calls = [e.data["tool"] for e in events if e.type == EventType.TOOL_CALLED]
    turns = [e for e in events if e.type == EventType.TURN_COMPLETED]
    return calls, turns[-1].data.get("result", "") if turns else ""


async def _replayed(settings: Settings, agent_id: str, **kw: Any) -> tuple[ReplayReport, Any]:
    store = Store.open(settings.db_path)
    runner = build_runner(store, settings)
    try:
        report = await replay(store, runner, agent_id, **kw)
        calls = await _calls(store, report.agent_id) if report.agent_id else ([], "")
        return report, calls
    finally:
        try:
            await runner.shutdown()
        finally:
            await store.close()


async def test_a_replay_makes_the_same_calls_and_says_no_divergence(recorded: Any) -> None:
    settings, agent_id, calls, final = recorded
    assert calls == ["Bash", "Write"]
    report, (calls_again, final_again) = await _replayed(settings, agent_id)
    assert report.divergences == [] and not report.beyond, report.to_dict()
    assert (report.requests, report.recorded, report.state) == (3, 3, "done")
    assert calls_again == calls and final_again == final
    store = Store.open(settings.db_path)
    try:
        again = await store.get_agent(report.agent_id or "")
    finally:
        await store.close()
    # the fresh workspace got the start state, and the agent worked there, not in the old one
    assert again.cwd != str(Path(settings.home).parent / "work")
    assert (Path(again.cwd) / "input.txt").read_text() == "the recorded input\n"
    assert (Path(again.cwd) / "out.txt").read_text() == "copied\n"
    assert (Path(again.cwd) / "draft.txt").read_text() == "not committed\n"
    recorded_head = _git(Path(settings.home).parent / "work", "rev-parse", "HEAD")
    assert _git(Path(again.cwd), "rev-parse", "HEAD") == recorded_head and len(recorded_head) == 41
    assert report.notes == []


def _no_bash(settings: Settings) -> str:
    path = Path(settings.home_dir) / "nobash.yaml"
    path.write_text("name: nobash\ndeny: ['Bash']\n")
    return str(path)


async def test_a_profile_that_denies_bash_diverges_at_that_call(recorded: Any) -> None:
    settings, agent_id, _, _ = recorded
    report, (calls, _) = await _replayed(settings, agent_id, profile=_no_bash(settings))
    assert report.diverged and report.stopped_at is None
    first = report.divergences[0]
    assert (first.turn, first.tool) == (2, "Bash")
    assert first.tool_use_id and first.tool_use_id.startswith("toolu_")
    assert "the recorded input" in first.diff and first.diff.startswith("--- recorded")
    assert report.requests == 3  # lenient: it went on by position
    assert json.loads(json.dumps(report.to_dict()))["divergences"][0]["tool"] == "Bash"


async def test_strict_stops_at_the_first_divergence(recorded: Any) -> None:
    settings, agent_id, _, _ = recorded
    report, (calls, _) = await _replayed(
        settings, agent_id, profile=_no_bash(settings), strict=True
    )
    assert report.stopped_at == 2 and len(report.divergences) == 1
    assert "Write" not in calls


async def test_an_unknown_recording_is_not_found(recorded: Any) -> None:
    settings, _, _, _ = recorded
    with pytest.raises(NotFound, match="no recording with id 'nope'"):
        await _replayed(settings, "nope")


def test_the_cli_reports_a_divergence_and_exits_1(recorded: Any) -> None:
    settings, agent_id, _, _ = recorded
    env = deck_env(Path(settings.home).parent)
    done = deck(env, "replay", agent_id, "--profile", _no_bash(settings), "--json")
    assert done.code == 1, done.err
    shown = json.loads(done.out)
    assert shown["diverged"] and shown["divergences"][0]["tool"] == "Bash"
    assert shown["divergences"][0]["turn"] == 2
    done = deck(env, "replay", agent_id, "--profile", _no_bash(settings), "--strict")
    assert done.code == 1 and "divergence at turn 2, after Bash (toolu_" in done.out
    assert "--strict: the agent was stopped at turn 2" in done.out
    done = deck(env, "replay", "nope")  # no divergence: it could not run at all
    assert done.code == 2 and "no recording with id 'nope'" in done.err
    assert done.out == ""


def test_the_cli_s_exit_codes_tell_a_faithful_replay_from_an_error(recorded: Any) -> None:
    """0 faithful, 1 diverged (above), 2 could not run: a CI script tells a failed
    replay from a changed agent by the code alone."""
    settings, agent_id, _, _ = recorded
    env = deck_env(Path(settings.home).parent)
    done = deck(env, "replay", agent_id)
    assert done.code == 0 and "no divergence" in done.out, done.err
    for args, said in (
        (("no-such-id",), "no recording with id 'no-such-id'"),
        ((agent_id, "--profile", "no-such-profile"), "no such profile"),
        ((agent_id, "--template", "no-such-template"), "no agent template named"),
    ):
        done = deck(env, "replay", *args)
        assert done.code == 2 and said in done.err, (args, done.err)
        assert "Traceback" not in done.err and "divergence" not in done.out
    helped = deck(env, "replay", "--help")
    assert "Exit codes: 0" in helped.out and "2 it could not run" in helped.out, helped.out


def _app(report: ReplayReport) -> ReplayApp:
    answer = Recorded(
        "/v1/messages", {"messages": []}, 200, {"content-type": "text/plain"}, (b"a", b"b")
    )
    return ReplayApp("tok", [answer], report, "/rec", "/new")


async def test_a_request_past_the_cassette_is_an_error_and_said() -> None:
    report = ReplayReport("a1")
    transport = httpx.ASGITransport(app=_app(report))
    async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
        first = await client.post("/r/tok/v1/messages", json={"messages": []})
        assert (first.status_code, first.content) == (200, b"ab")
        second = await client.post("/r/tok/v1/messages", json={"messages": []})
    assert second.status_code == 400 and BEYOND in second.json()["error"]["message"]
    assert report.beyond and report.diverged and report.to_dict()["beyond"] == BEYOND


async def test_only_the_route_token_reaches_the_cassette() -> None:
    report = ReplayReport("a1")
    transport = httpx.ASGITransport(app=_app(report))
    async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
        for path in ("/r/other/v1/messages", "/v1/messages", "/r/tok2/v1/messages"):
            assert (await client.post(path, json={})).status_code == 404
    assert report.requests == 0


async def test_a_missing_start_state_is_said(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="kept no start checkpoint"):
        start_of([{"kind": "meta"}, {"kind": "start", "checkpoint_error": "x"}], "a1")
    with pytest.raises(NotFound, match="checkpoint store of agent") as gone:
        await restore(tmp_path / "gone", "0" * 40, tmp_path / "new", "a1")
    assert str(tmp_path / "gone") in str(gone.value.hint)


async def test_a_side_request_is_answered_apart_and_not_counted() -> None:
    """A session-title request (no tools) recorded among the agent's own ones."""
    tools = {"tools": [{"name": "Bash"}], "messages": []}
    own = Recorded("/v1/messages", tools, 200, {}, (b"own",))
    side = Recorded("/v1/messages", {"tools": [], "messages": []}, 200, {}, (b"title",))
    report = ReplayReport("a1")
    app = ReplayApp("tok", [side, own], report, "/rec", "/new")
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
        assert (await client.post("/r/tok/v1/messages", json=tools)).content == b"own"
        assert (await client.post("/r/tok/v1/messages", json={"tools": []})).content == b"title"
        assert (await client.post("/r/tok/v1/messages", json={})).status_code == 400
    assert (report.requests, report.diverged) == (1, False)
