"""``agentdeck replay`` of a run with Read, Bash, Edit (of a file of the start state)
and a call the profile asks about, answered while recording: the real Claude Code,
the scripted model upstream, one recording shared by the module's replays.

The replay runs the governor again: the ask is asked again and answered here. A
start state changed before the agent starts shows as divergences naming the Read
and the Edit; ``--template`` replays it as a template would run it."""

from __future__ import annotations

import asyncio
import json
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path
from typing import IO, Any

import pytest
import yaml

from agentdeck.cli.replay import template_source
from agentdeck.core.agent import AgentSpec, AgentState
from agentdeck.core.events import EventType
from agentdeck.daemon.compose import build_runner
from agentdeck.errors import TemplateError, UsageError
from agentdeck.runner.recording.replay import ReplayReport
from agentdeck.runner.recording.replay_run import replay
from agentdeck.runner.runner import Runner
from agentdeck.settings import Settings
from agentdeck.store.store import Store
from tests.conftest import make_settings
from tests.support.deckcli import Done, deck, deck_env, spawn

pytestmark = [pytest.mark.anyio, pytest.mark.cli]

INPUT = "the recorded input\n"
FINAL = "Read it, edited it and made made.txt."


def _use(name: str, **tool_input: str) -> dict[str, Any]:
    return {"reply": [{"tool_use": {"name": name, "input": tool_input}}]}


TURNS = [
    _use("Read", file_path="input.txt"),
    _use("Bash", command="cat input.txt", description="show it"),
    _use("Edit", file_path="input.txt", old_string="recorded", new_string="edited"),
    _use("Bash", command="touch made.txt", description="make it"),  # the profile asks
    {"reply": [{"text": FINAL}]},
]


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


class Recorded:
    def __init__(self, settings: Settings, agent_id: str, work: Path, profile: str) -> None:
        self.settings = settings
        self.agent_id = agent_id
        self.work = work
        self.profile = profile
        self.calls: list[str] = []
        self.final = ""
        self.asked: list[str] = []


@pytest.fixture(scope="module")
async def recorded(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Recorded]:
    tmp = tmp_path_factory.mktemp("replay-approval")
    settings = make_settings(tmp)
    settings.ensure_home()
    scenario = tmp / "edit.yaml"
    scenario.write_text(yaml.safe_dump({"name": "edit", "turns": TURNS}))
    profile = tmp / "asks.yaml"
    profile.write_text(
        yaml.safe_dump(
            {
                "name": "asks",
                "default": "ask",
                "approval_timeout_seconds": 60,
                "allow": ["Read", "Edit(/**)", "Bash(cat:*)"],
            }
        )
    )
    work = tmp / "work"
    work.mkdir()
    (work / "input.txt").write_text(INPUT)
    _git(work, "init", "-q")
    _git(work, "add", "input.txt")
    _git(work, "commit", "-q", "-m", "start")
    store = Store.open(settings.db_path)
    runner = build_runner(store, settings)
    try:
        session = await runner.start(
            AgentSpec(
                prompt="edit the input",
                cwd=str(work),
                scenario=str(scenario),
                record=True,
                profile=str(profile),
            )
        )
        asked = await _answering(runner, session.wait_finished(timeout=120))
        assert session.agent.state == AgentState.DONE, session.agent.last_error
        out = Recorded(settings, session.agent.id, work, str(profile))
        out.calls, out.final = await _calls(store, session.agent.id)
        out.asked = asked
    finally:
        try:
            await runner.shutdown()
        finally:
            await store.close()
    assert (work / "input.txt").read_text() == "the edited input\n"
    yield out


def _git(cwd: Path, *args: str) -> str:
    who = ("-c", "user.name=t", "-c", "user.email=t@t")
    return subprocess.run(
        ("git", "-C", str(cwd), *who, *args), check=True, text=True, capture_output=True
    ).stdout


async def _answering(runner: Runner, work: Any) -> list[str]:
    """``work`` awaited while every approval it asks for is allowed; the tools asked."""
    asked: list[str] = []
    task = asyncio.ensure_future(work)
    try:
        while not task.done():
            for approval in await runner.governor.approvals.list_approvals():
                asked.append(approval.tool)
                await runner.governor.answer(approval.id, "allow", by="user:test")
            await asyncio.wait({task}, timeout=0.05)
        task.result()
    finally:
        task.cancel()
    return asked


async def _calls(store: Store, agent_id: str) -> tuple[list[str], str]:
    events = await store.read(agent_id=agent_id)
    calls = [str(e.data["tool"]) for e in events if e.type == EventType.TOOL_CALLED]
    turns = [e for e in events if e.type == EventType.TURN_COMPLETED]
    return calls, str(turns[-1].data.get("result", "")) if turns else ""


async def _replayed(
    settings: Settings, agent_id: str, **kw: Any
) -> tuple[ReplayReport, list[str], str, list[str]]:
    """The report, the replay's calls and final text, the tools it was asked about."""
    store = Store.open(settings.db_path)
    runner = build_runner(store, settings)
    try:
        result: list[ReplayReport] = []

        async def run() -> None:
            result.append(await replay(store, runner, agent_id, **kw))

        asked = await _answering(runner, run())
        (report,) = result
        calls, final = await _calls(store, report.agent_id or "")
        return report, calls, final, asked
    finally:
        try:
            await runner.shutdown()
        finally:
            await store.close()


async def test_the_replay_makes_the_same_calls_asks_again_and_says_the_same(
    recorded: Recorded,
) -> None:
    assert recorded.calls == ["Read", "Bash", "Edit", "Bash"] and recorded.final == FINAL
    assert recorded.asked == ["Bash"]  # the touch, answered while recording
    report, calls, final, asked = await _replayed(recorded.settings, recorded.agent_id)
    assert report.divergences == [] and not report.beyond, report.to_dict()
    assert (report.requests, report.recorded, report.state) == (5, 5, "done")
    assert calls == recorded.calls and final == recorded.final
    assert asked == ["Bash"]  # the governor ran again: the ask was asked again
    store = Store.open(recorded.settings.db_path)
    try:
        again = await store.get_agent(report.agent_id or "")
        events = await store.read(agent_id=again.id)
    finally:
        await store.close()
    (resolved,) = [e.data for e in events if e.type == EventType.PERMISSION_RESOLVED]
    assert resolved["decision"] == "allow" and resolved["by"] == "user:test"
    cwd = Path(again.cwd)
    assert cwd != recorded.work and again.spec.profile == recorded.profile
    assert (cwd / "input.txt").read_text() == "the edited input\n"  # the Edit ran there
    assert (cwd / "made.txt").exists()


async def test_a_changed_start_state_names_the_read_and_the_edit(recorded: Recorded) -> None:
    def changed(cwd: Path) -> None:
        (cwd / "input.txt").write_text("changed before the replay\n")

    report, calls, _, _ = await _replayed(recorded.settings, recorded.agent_id, prepared=changed)
    assert calls == ["Read", "Bash", "Edit", "Bash"]  # lenient: it went on by position
    by_tool = {d.tool: d for d in report.divergences}
    first = report.divergences[0]
    assert (first.turn, first.tool) == (2, "Read"), report.to_dict()
    assert "the recorded input" in first.diff and "changed before the replay" in first.diff
    assert first.tool_use_id and first.tool_use_id.startswith("toolu_")
    edit = by_tool["Edit"]  # its old string is no longer in the file: the Edit failed
    assert edit.turn == 4 and '"error": true' in edit.diff, edit.diff
    assert report.diverged and report.stopped_at is None


async def _deck(env: dict[str, str], *args: str) -> Done:
    """The CLI, as a user runs it (off the loop: the module's fixtures are async)."""
    return await asyncio.to_thread(deck, env, *args)


def _replays(settings: Settings) -> list[Path]:
    replays = settings.home_dir / "replays"
    return sorted(replays.iterdir()) if replays.exists() else []


def _line_with(stream: IO[str] | None, text: str) -> str:
    """The first line of ``stream`` holding ``text`` ("" at its end)."""
    assert stream is not None
    for line in stream:
        if text in line:
            return line
    return ""


async def test_the_cli_says_the_ask_and_takes_the_answer_of_another_terminal(
    recorded: Recorded,
) -> None:
    env = deck_env(recorded.work.parent)
    proc = spawn(env, "replay", recorded.agent_id, "--json")
    try:
        line = await asyncio.to_thread(_line_with, proc.stderr, "waiting for approval ")
        assert "(Bash): answer it with agentdeck approve " in line, line
        approval_id = line.split("waiting for approval ")[1].split(" ")[0]
        answered = await _deck(env, "approve", approval_id)
        assert answered.code == 0, answered.err
        out, err = await asyncio.to_thread(proc.communicate, timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err
    shown = json.loads(out)
    assert not shown["diverged"] and (shown["state"], shown["requests"]) == ("done", 5)


def _template(work: Path, name: str, text: str) -> None:
    agents = work / ".claude" / "agents"
    agents.mkdir(parents=True, exist_ok=True)
    (agents / f"{name}.md").write_text(text)


async def test_the_cli_replays_as_a_template_its_profile_overridden(recorded: Recorded) -> None:
    """A template without Bash, whose own profile asks about every call (and
    nobody answers), under an explicit --profile that allows them: the first
    divergence is the Bash it does not have, not the Read its profile would deny."""
    work = recorded.work
    (work / ".agentdeck").mkdir(exist_ok=True)
    (work / ".agentdeck" / "asks.yaml").write_text(
        "name: asksall\ndefault: ask\napproval_timeout_seconds: 1\n"
    )
    _template(
        work,
        "reader",
        "---\nname: reader\ndescription: Reads and edits.\ntools: Read, Edit\n"
        "profile: .agentdeck/asks.yaml\n---\nYou read files and edit them.\n",
    )
    allow = work.parent / "allow.yaml"
    allow.write_text(yaml.safe_dump({"name": "open", "allow": ["Read", "Edit(/**)", "Bash"]}))
    env = deck_env(work.parent)
    done = await _deck(
        env, "replay", recorded.agent_id, "--template", "reader", "--profile", str(allow), "--json"
    )
    assert done.code == 1, done.err
    shown = json.loads(done.out)
    assert shown["template"] == "reader" and shown["state"] == "done"
    first = shown["divergences"][0]
    assert (first["turn"], first["tool"]) == (3, "Bash"), shown  # Read was allowed
    assert "No such tool available: Bash" in first["diff"]
    notes = "\n".join(shown["notes"])
    assert "replayed as template reader" in notes
    assert "the system prompt differs from the recorded run's" in notes
    assert "tools: Read, Edit (recorded: every tool)" in notes
    assert f"profile: {allow}" in notes
    # without --profile, the template's own: the Read is asked, nobody answers, denied
    done = await _deck(env, "replay", recorded.agent_id, "--template", "reader")
    assert done.code == 1 and "(template reader, done): 5 requests, 5 recorded" in done.out
    first = done.out.split("divergence at turn ")[1]
    assert first.startswith("2, after Read (toolu_"), done.out
    assert "nobody answered the approval request" in first
    assert "waiting for approval " in done.err  # said, and left to expire


async def test_the_cli_refuses_an_unknown_or_hostile_template_and_runs_nothing(
    recorded: Recorded,
) -> None:
    before = _replays(recorded.settings)
    env = deck_env(recorded.work.parent)
    done = await _deck(env, "replay", recorded.agent_id, "--template", "nope")
    assert done.code == 2 and "no agent template named 'nope'" in done.err, done.err
    _template(recorded.work, "broken", "---\nname: broken\ndescription: [unclosed\n---\nx\n")
    done = await _deck(env, "replay", recorded.agent_id, "--template", "broken")
    assert done.code == 2 and "YAML error" in done.err, done.err
    assert _replays(recorded.settings) == before


@pytest.mark.parametrize(
    ("text", "error", "says"),
    [
        ("---\nname: huge\ndescription: d\n---\n" + "x" * 300_000, TemplateError, "256 KiB"),
        ("no front matter at all\n", TemplateError, "no front matter"),
        (
            "---\nname: loose\ndescription: d\npermissionMode: bypassPermissions\n---\nbody\n",
            TemplateError,
            "permissionMode",
        ),
    ],
    ids=["huge", "no-front-matter", "loosening"],
)
async def test_a_hostile_template_file_is_refused_before_anything_runs(
    recorded: Recorded, text: str, error: type[Exception], says: str
) -> None:
    name = text.split("name: ")[1].split("\n")[0] if "name: " in text else "bare"
    _template(recorded.work, name, text)
    before = _replays(recorded.settings)
    with pytest.raises(error, match=says):
        await _replayed(
            recorded.settings,
            recorded.agent_id,
            template=template_source(recorded.settings, name, recorded.profile),
            profile=recorded.profile,
        )
    assert _replays(recorded.settings) == before


def test_a_template_name_that_is_a_path_is_a_usage_error(settings: Settings) -> None:
    for name in ("../x", "/etc/passwd", "UPPER", "a" * 65, ""):
        with pytest.raises(UsageError, match="--template takes a template's name"):
            template_source(settings, name, None)
