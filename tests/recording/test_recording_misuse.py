"""What users get wrong with recordings, and what they are told: a cassette cut or
edited by hand, a recording still being written, a bad profile or output file,
and the plain case of a run recorded in a fresh (empty) workspace."""

from __future__ import annotations

import base64
import json
import shutil
import signal
import subprocess
from pathlib import Path
from typing import Any

import pytest

from agentdeck.core.agent import AgentState
from agentdeck.core.events import EventType
from agentdeck.errors import UsageError
from agentdeck.runner.recording.cassette import CassetteWriter, read_lines
from agentdeck.runner.recording.export import scenario_of
from agentdeck.runner.recording.replay import ReplayReport, recorded_exchanges
from agentdeck.runner.recording.replay_run import cut_note
from agentdeck.store.store import Store
from tests.support.deckcli import Done, deck, deck_argv, deck_env, spawn
from tests.support.waiting import eventually

pytestmark = [pytest.mark.cli]


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, str], str, Path]:
    """A run recorded as the README shows it: no --cwd, so a fresh empty workspace."""
    env = deck_env(tmp_path_factory.mktemp("misuse"))
    ran = deck(env, "run", "--record", "--scenario", "three-turns", "say one and two", "--json")
    assert ran.code == 0, ran.err
    agent_id = ran.json()["agent"]["id"]
    cassette = Path(env["AGENTDECK_HOME"]) / "recordings" / f"{agent_id}.jsonl"
    assert cassette.is_file()
    return env, agent_id, cassette


def _said(done: Done, *texts: str) -> None:
    assert "Traceback" not in done.err, done.err
    for text in texts:
        assert text in done.err, done.err


def test_a_run_recorded_in_an_empty_workspace_replays(recorded: Any) -> None:
    env, agent_id, _ = recorded
    done = deck(env, "replay", agent_id, "--json")
    assert done.code == 0, done.err
    report = done.json()
    assert (report["diverged"], report["state"], report["requests"]) == (False, "done", 3)


def test_a_bad_profile_makes_no_replay_workspace(recorded: Any) -> None:
    env, agent_id, _ = recorded
    replays = Path(env["AGENTDECK_HOME"]) / "replays"
    before = set(replays.iterdir()) if replays.is_dir() else set()
    for profile in ("nosuch", "nosuch.yaml"):
        done = deck(env, "replay", agent_id, "--profile", profile)
        assert done.code == 2
        _said(done, profile)
    assert (set(replays.iterdir()) if replays.is_dir() else set()) == before


def _damaged(cassette: Path, name: str, change: Any) -> str:
    """A copy of ``cassette`` under agent id ``name``, its lines changed by ``change``."""
    lines = cassette.read_text().splitlines()
    path = cassette.with_name(f"{name}.jsonl")
    path.write_bytes(change(lines))
    return name


def _lines(lines: list[str]) -> bytes:
    return ("\n".join(lines) + "\n").encode()


def _edited(kind: str, edit: Any) -> Any:
    def change(lines: list[str]) -> bytes:
        out = []
        for line in lines:
            record = json.loads(line)
            if record["kind"] == kind:
                edit(record)
            out.append(json.dumps(record))
        return _lines(out)

    return change


def test_a_damaged_cassette_is_said_with_its_line_and_hides_no_other(recorded: Any) -> None:
    env, agent_id, cassette = recorded
    names = [
        _damaged(cassette, "notutf8", lambda lines: _lines(lines[:2]) + b"\xff\xfe\n"),
        _damaged(cassette, "notjson", lambda lines: _lines([*lines[:3], "{oops", *lines[3:]])),
        _damaged(cassette, "badb64", _edited("chunk", lambda r: r.update(b64="!!", text=None))),
        _damaged(cassette, "nonumber", _edited("request", lambda r: r.update(n=None))),
        _damaged(cassette, "badstart", _edited("start", lambda r: r.update(checkpoint="x"))),
        _damaged(cassette, "badmeta", _edited("meta", lambda r: r.update(ts="yesterday"))),
    ]
    for name in names:
        for args in (
            ("recordings", "show", name),
            ("scenario", "export", name),
            ("replay", name),
        ):
            done = deck(env, *args)
            # replay's 1 is a divergence: that it could not run is its 2
            assert done.code == (2 if args[0] == "replay" else 1), (args, done.out)
            _said(done, f"the recording of {name} is damaged: line ", f"recordings rm {name}")
    listed = deck(env, "recordings", "ls", "--json")
    assert listed.code == 0, listed.err
    problems = {i["agent_id"]: i["problem"] for i in listed.json()}
    assert problems.pop(agent_id) is None
    assert set(problems) == set(names) and all("damaged" in p for p in problems.values())
    table = deck(env, "recordings", "ls")
    assert table.code == 0 and "line 3" in table.out, table.err
    for name in names:
        assert deck(env, "recordings", "rm", name).code == 0


def test_a_torn_last_line_is_skipped_and_a_resume_starts_a_line_of_its_own(
    recorded: Any, tmp_path: Path
) -> None:
    _, _, cassette = recorded
    path = tmp_path / "a1.jsonl"
    whole = cassette.read_bytes()
    path.write_bytes(whole + b'{"kind": "request", "n": 9, "me')  # a crash mid-line
    assert read_lines(path) == read_lines(cassette)
    writer = CassetteWriter(path, cap_bytes=10**7)  # the agent resumed
    writer.meta("a1", "http://127.0.0.1:1", "all")
    writer.close("done")
    records = read_lines(path)
    assert [r["kind"] for r in records].count("meta") == 2
    assert records[-1] == {**records[-1], "kind": "closed", "state": "done"}


def test_a_cut_exchange_is_not_exported_nor_answered(recorded: Any) -> None:
    _, _, cassette = recorded
    records = read_lines(cassette)
    last_end = max(i for i, r in enumerate(records) if r["kind"] == "end")
    cut = records[:last_end]  # the last exchange's end never written
    with pytest.raises(UsageError, match="was cut short"):
        scenario_of(cut, "x")
    assert len(recorded_exchanges(cut)) == len(recorded_exchanges(records)) - 1
    (note,) = cut_note(cut)
    assert "cut short" in note and "not replayed" in note
    assert cut_note(records) == []


def test_export_writes_a_whole_file_or_says_why(recorded: Any, tmp_path: Path) -> None:
    env, agent_id, _ = recorded
    kept = tmp_path / "kept.yaml"
    kept.write_text("mine\n")
    for target, why in (
        (tmp_path, "is a directory"),
        (tmp_path / "missing" / "x.yaml", "cannot write there"),
    ):
        done = deck(env, "scenario", "export", agent_id, "-o", str(target))
        assert done.code == 2
        _said(done, why)
    done = deck(env, "scenario", "export", agent_id, "-o", str(kept))
    assert done.code == 0 and "3 turns" in done.out, done.err
    assert kept.read_text().startswith("name: ")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kept.yaml"]  # no temp file left


@pytest.mark.anyio
async def test_a_recording_still_written_is_not_replayed_exported_or_removed(
    tmp_path: Path,
) -> None:
    env = deck_env(tmp_path)
    proc = spawn(
        env, "run", "--record", "--scenario", "long-tool", "--allow", "Bash(python3:*)", "go"
    )
    try:
        home = Path(env["AGENTDECK_HOME"])

        async def running() -> str | None:
            if not (home / "agentdeck.db").exists():
                return None
            async with Store.open(home / "agentdeck.db") as store:
                for agent in await store.list_agents():
                    cassette = home / "recordings" / f"{agent.id}.jsonl"
                    ended = cassette.is_file() and any(
                        r["kind"] == "end" for r in read_lines(cassette)
                    )
                    if agent.state == AgentState.RUNNING and ended:
                        return agent.id
            return None

        agent_id = await eventually(running, timeout=60, what="a recorded agent in its tool")
        cassette = home / "recordings" / f"{agent_id}.jsonl"
        before = cassette.read_bytes()
        for args, doing in (
            (("recordings", "rm", agent_id), "remove its recording"),
            (("scenario", "export", agent_id), "export its recording"),
            (("replay", agent_id), "replay its recording"),
        ):
            done = deck(env, *args)
            assert done.code == (2 if args[0] == "replay" else 1), (args, done.out)
            _said(
                done, f"agent {agent_id} is running; cannot {doing}", f"agentdeck kill {agent_id}"
            )
        assert cassette.read_bytes() == before
        assert not (home / "replays").exists() or not any((home / "replays").iterdir())
    finally:
        proc.terminate()
        proc.communicate(timeout=60)
    shutil.rmtree(tmp_path / "home", ignore_errors=True)


def test_base64_in_a_chunk_still_reads(recorded: Any, tmp_path: Path) -> None:
    """The writer's b64 chunks (bytes that are not UTF-8) pass the reader's check."""
    _, _, cassette = recorded
    path = tmp_path / "b1.jsonl"
    lines = cassette.read_text().splitlines()
    raw = base64.b64encode(b"\xff\x00bytes").decode()
    lines.append(json.dumps({"kind": "chunk", "n": 1, "t": 0.5, "b64": raw}))
    path.write_text("\n".join(lines) + "\n")
    assert read_lines(path)[-1]["b64"] == raw


def test_a_capped_cassette_is_not_replayed_as_a_pass(tmp_path: Path) -> None:
    """Past the cap the exchanges kept no body: the replayed agent got empty answers,
    ended in error, and the replay said "no divergence" and exited 0."""
    env = deck_env(tmp_path, AGENTDECK_RECORDING_MAX_BYTES="2000")
    ran = deck(env, "run", "--record", "--scenario", "three-turns", "say one", "--json")
    assert ran.code == 0, ran.err
    agent_id = ran.json()["agent"]["id"]
    done = deck(env, "replay", agent_id)
    assert done.code == 2, done.out
    _said(done, f"the recording of {agent_id} was capped", "AGENTDECK_RECORDING_MAX_BYTES")
    assert not (Path(env["AGENTDECK_HOME"]) / "replays").exists()


def test_a_replay_that_ends_otherwise_than_the_recording_diverged() -> None:
    report = ReplayReport("a1", state="error", recorded_state="done", requests=3, recorded=3)
    assert report.ended_otherwise and report.diverged
    assert report.to_dict()["ended_otherwise"] is True
    assert not ReplayReport("a1", state="done", recorded_state="done").diverged
    assert not ReplayReport("a1", state="error", recorded_state=None).diverged
    stopped = ReplayReport("a1", state="error", recorded_state="done", stopped_at=2)
    assert not stopped.ended_otherwise  # the strict stop says why already


def test_a_side_request_is_no_turn_of_the_exported_scenario(recorded: Any) -> None:
    """A real model's recording holds Claude Code's side requests (a session title,
    no tools offered): as turn 1 of the scenario, the title would be played as the
    agent's first answer."""
    _, _, cassette = recorded
    records = read_lines(cassette)
    title = json.dumps({"content": [{"type": "text", "text": "Counting to two"}]})
    side = [
        {"kind": "request", "n": 99, "method": "POST", "path": "/v1/messages",
         "body": {"json": {"model": "haiku", "messages": [{"role": "user", "content": "t"}]}}},
        {"kind": "response", "n": 99, "status": 200, "headers": {}},
        {"kind": "chunk", "n": 99, "t": 0.1, "text": title},
        {"kind": "end", "n": 99, "outcome": "complete", "seconds": 0.1},
    ]  # fmt: skip
    first = next(i for i, r in enumerate(records) if r["kind"] == "request")
    with_side = [*records[:first], *side, *records[first:]]
    assert scenario_of(with_side, "x") == scenario_of(records, "x")
    assert "Counting to two" not in json.dumps(scenario_of(with_side, "x"))


GATED = "python3 -c \"import os, signal; os.path.exists('gate') or signal.pause()\""


def _gated_recording(tmp_path: Path, env: dict[str, str]) -> str:
    """A recorded run whose Bash waits for a file the replay's workspace lacks."""
    work = tmp_path / "work"
    work.mkdir()
    (work / ".gitignore").write_text("gate\n")  # not in the start checkpoint
    (work / "gate").write_text("")
    subprocess.run(("git", "init", "-q", str(work)), check=True)
    script = tmp_path / "gated.yaml"
    tool = {"tool_use": {"name": "Bash", "input": {"command": GATED}}}
    script.write_text(json.dumps({"name": "gated", "turns": [
        {"reply": [tool]}, {"reply": [{"text": "through"}]}]}))  # fmt: skip
    ran = deck(env, "run", "--record", "--scenario", str(script), "--cwd", str(work),
               "--allow", "Bash(python3:*)", "go", "--json")  # fmt: skip
    assert ran.code == 0, ran.err
    return str(ran.json()["agent"]["id"])


def _replaying(env: dict[str, str], recorded_id: str) -> subprocess.Popen[str]:
    """``agentdeck replay`` as a terminal starts it: SIGINT not ignored."""
    return subprocess.Popen(
        deck_argv("replay", recorded_id), env=env, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )  # fmt: skip


@pytest.mark.anyio
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
async def test_a_stopped_replay_leaves_its_agent_interrupted(
    tmp_path: Path, sig: signal.Signals
) -> None:
    """Ctrl-C shut the replay's runner down as if the turn had ended: the agent was
    left `done`, and nothing was printed. SIGTERM now stops it as it stops `run`."""
    env = deck_env(tmp_path)
    recorded_id = _gated_recording(tmp_path, env)
    proc = _replaying(env, recorded_id)
    try:
        home = Path(env["AGENTDECK_HOME"])

        async def in_its_tool() -> str | None:
            async with Store.open(home / "agentdeck.db") as store:
                for agent in await store.list_agents():
                    if agent.id != recorded_id and agent.state == AgentState.RUNNING:
                        called = await store.read(agent_id=agent.id, types=[EventType.TOOL_CALLED])
                        if called:
                            return agent.id
            return None

        replay_id = await eventually(in_its_tool, timeout=60, what="the replay in its tool")
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 128 + sig, (out, err)
    if sig == signal.SIGINT:  # the report of what it did
        assert f"as {replay_id} (interrupted)" in out and "interrupted (Ctrl-C)" in err
    async with Store.open(home / "agentdeck.db") as store:
        assert (await store.get_agent(replay_id)).state == AgentState.INTERRUPTED
