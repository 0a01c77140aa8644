"""Checkpoints and rewind with the real Claude Code CLI and the scripted model: an
agent edits a file (Edit), changes one with ``sed -i`` and deletes one with ``rm``
(Bash); a checkpoint was taken before each call; a dry run changes nothing; rewinds
put back what Edit and Bash changed, in a worktree and in a plain directory."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
import yaml

from agentdeck.settings import Settings
from agentdeck.store import Store
from tests.support.deckcli import Done, deck, deck_env
from tests.worktrees.conftest import make_repo

pytestmark = [pytest.mark.anyio, pytest.mark.cli]

FILES = {
    "calc.py": "def add(a, b):\n    return a - b\n",
    "notes.txt": "colour: red\n",
    "gone.txt": "keep me\n",
}


def scenario(root: Path) -> Path:
    calls = [
        ("Edit", {"file_path": "calc.py", "old_string": "a - b", "new_string": "a + b"}),
        ("Bash", {"command": "sed -i 's/red/blue/' notes.txt"}),
        ("Bash", {"command": "rm gone.txt"}),
    ]
    turns = [{"reply": [{"tool_use": {"name": n, "input": i}}]} for n, i in calls]
    path = root / "scenario.yaml"
    path.write_text(
        yaml.safe_dump({"name": "tinker", "turns": [*turns, {"reply": [{"text": "done"}]}]})
    )
    return path


async def cli(env: dict[str, str], *args: str) -> Done:
    return await asyncio.to_thread(deck, env, *args)


@pytest.mark.parametrize("where", ["worktree", "plain directory"])
async def test_rewind_puts_back_what_edit_and_bash_changed(
    settings: Settings, tmp_path: Path, where: str
) -> None:
    env = deck_env(tmp_path)
    if where == "worktree":
        base = make_repo(tmp_path / "repo", FILES)
        place = ["--worktree", "--cwd", str(base)]
    else:
        base = tmp_path / "plain"
        base.mkdir()
        for name, text in FILES.items():
            (base / name).write_text(text)
        place = ["--cwd", str(base)]
    run = await cli(
        env, "run", *place, "--name", "tinker", "--json", "--scenario", str(scenario(tmp_path)),
        "--allow", "Bash(sed *)", "--allow", "Bash(rm *)", "tinker with the files",
    )  # fmt: skip
    assert run.code == 0, run.err
    agent = run.json()["agent"]
    work = Path(agent["cwd"])
    assert (work / "calc.py").read_text().endswith("a + b\n")
    assert (work / "notes.txt").read_text() == "colour: blue\n"
    assert not (work / "gone.txt").exists()

    listed = await cli(env, "checkpoints", "tinker", "--json")
    assert listed.code == 0, listed.err
    timeline = json.loads(listed.out)
    assert [(c["n"], c["tool"]) for c in timeline] == [(1, "Edit"), (2, "Bash"), (3, "Bash")]
    assert timeline[1]["files"] == [{"status": "M", "path": "calc.py"}]  # Edit's doing
    assert timeline[1]["summary"].startswith("Bash(sed -i")
    assert timeline[2]["files"] == [{"status": "M", "path": "notes.txt"}]  # sed's doing
    text = await cli(env, "checkpoints", "tinker")
    assert "#3" in text.out and "Bash(rm gone.txt)" in text.out

    # A dry run shows what would change and changes nothing.
    dry = await cli(env, "rewind", "tinker", "--to", "2", "--dry-run")
    assert dry.code == 0, dry.err
    assert "restored  notes.txt" in dry.out and "restored  gone.txt" in dry.out
    assert "-colour: blue" in dry.out and "+colour: red" in dry.out
    assert not (work / "gone.txt").exists() and "blue" in (work / "notes.txt").read_text()

    # Back to before sed and rm: Bash's changes undone, Edit's kept.
    back = await cli(env, "rewind", "tinker", "--to", "2", "--json")
    assert back.code == 0, back.err
    undo = json.loads(back.out)["undo"]
    assert undo == 4
    assert (work / "notes.txt").read_text() == "colour: red\n"
    assert (work / "gone.txt").read_text() == "keep me\n"
    assert (work / "calc.py").read_text().endswith("a + b\n")
    # Back to before Edit; then undo the first rewind's whole way.
    first = await cli(env, "rewind", "tinker", "--to", "1")
    assert first.code == 0 and "calc.py" in first.out, first.err
    assert (work / "calc.py").read_text() == FILES["calc.py"]
    again = await cli(env, "rewind", "tinker", "--to", str(undo))
    assert again.code == 0, again.err
    assert (work / "calc.py").read_text().endswith("a + b\n")
    assert not (work / "gone.txt").exists()

    if where == "worktree":  # the user's repository never saw any of it
        assert (base / "calc.py").read_text() == FILES["calc.py"] and (base / "gone.txt").exists()
    async with Store.open(settings.db_path) as store:
        notices = [e.data for e in await store.read(agent_id=agent["id"]) if e.type == "notice"]
        audit = await store.read_audit(agent_id=agent["id"])
    kinds = [n["kind"] for n in notices if n["kind"] in ("checkpoint", "rewind")]
    assert kinds == ["checkpoint"] * 3 + ["rewind"] * 3
    assert [a.tool for a in audit if a.tool == "rewind"] == ["rewind"] * 3


async def test_bad_rewinds_say_what_is_wrong(settings: Settings, tmp_path: Path) -> None:
    env = deck_env(tmp_path)
    unknown = await cli(env, "rewind", "no-such-agent")
    assert unknown.code == 1 and "no-such-agent" in unknown.err
    none = await cli(env, "checkpoints", "no-such-agent")
    assert none.code == 1 and "no-such-agent" in none.err
    bad = await cli(env, "rewind", "x", "--to", "0")
    assert bad.code == 2


async def test_the_api_lists_checkpoints_and_rewinds(settings: Settings, tmp_path: Path) -> None:
    from agentdeck.core.agent import AgentSpec
    from tests.support.served import serving

    work = tmp_path / "plain"
    work.mkdir()
    for name, text in FILES.items():
        (work / name).write_text(text)
    async with serving(settings) as served, served.api() as api:
        agent = await served.deck.create_agent(
            AgentSpec(
                prompt="tinker", name="tinker", cwd=str(work), scenario=str(scenario(tmp_path)),
                allow=("Bash(sed *)", "Bash(rm *)"),
            ),
            keep_alive=False,
        )  # fmt: skip
        await served.deck._runner.session(agent.id).finished.wait()
        listed = await api.get(f"/api/agents/{agent.id}/checkpoints")
        assert [c["n"] for c in listed.json()["checkpoints"]] == [1, 2, 3]
        dry = await api.post(f"/api/agents/{agent.id}/rewind", json={"to": 3, "dry_run": True})
        assert dry.status_code == 200, dry.text
        assert dry.json()["restored"] == ["gone.txt"] and "+keep me" in dry.json()["patch"]
        assert not (work / "gone.txt").exists()
        done = await api.post(f"/api/agents/{agent.id}/rewind", json={})  # the last one
        assert done.json()["to"] == 3 and (work / "gone.txt").read_text() == "keep me\n"
        missing = await api.post(f"/api/agents/{agent.id}/rewind", json={"to": 99})
        assert missing.status_code == 404 and "checkpoint" in missing.text
        assert (await api.post(f"/api/agents/{agent.id}/rewind", json={"to": 0})).status_code == 422
        nobody = await api.get("/api/agents/no-such-agent/checkpoints")
        assert nobody.status_code == 404


async def test_rewind_refuses_a_working_agent_and_one_without_checkpoints(
    deck: tuple[Store, object], tmp_path: Path
) -> None:
    from agentdeck.core.agent import Agent, AgentSpec, AgentState
    from agentdeck.errors import InvalidState, UsageError
    from agentdeck.runner.runner import Runner

    store, runner = deck
    assert isinstance(runner, Runner)

    def agent(state: AgentState) -> Agent:
        return Agent(
            id=f"agent0000{state:0>7}"[:16], name=str(state), state=state,
            spec=AgentSpec(prompt="p"), cwd=str(tmp_path), created_at=1.0, updated_at=1.0,
        )  # fmt: skip

    (tmp_path / "kept.txt").write_text("as it is\n")
    with pytest.raises(InvalidState, match="cannot rewind \\(interrupt it first\\)"):
        await runner.rewind(agent(AgentState.RUNNING), to=1)
    with pytest.raises(UsageError, match="has no checkpoints"):
        await runner.rewind(agent(AgentState.IDLE))
    assert (tmp_path / "kept.txt").read_text() == "as it is\n"


async def test_only_calls_that_can_change_files_get_a_checkpoint(
    settings: Settings, tmp_path: Path
) -> None:
    """Read, Grep and read-only Bash lines (``ls``, ``cat x | wc -l``, ``true``) get
    none; Edit, a redirection into a file, ``rm`` and a command not known get one."""
    work = tmp_path / "plain"
    work.mkdir()
    for name, text in FILES.items():
        (work / name).write_text(text)
    calls = [
        ("Read", {"file_path": "calc.py"}),
        ("Bash", {"command": "ls -la"}),
        ("Grep", {"pattern": "colour"}),
        ("Bash", {"command": "cat notes.txt | wc -l"}),
        ("Bash", {"command": "true"}),
        ("Edit", {"file_path": "calc.py", "old_string": "a - b", "new_string": "a + b"}),
        ("Bash", {"command": "echo made > made.txt"}),
        ("Bash", {"command": "true && rm gone.txt"}),
        ("Bash", {"command": "cat made.txt"}),
        ("Bash", {"command": "touch touched.txt"}),
    ]
    turns = [{"reply": [{"tool_use": {"name": n, "input": i}}]} for n, i in calls]
    path = tmp_path / "looks.yaml"
    path.write_text(
        yaml.safe_dump({"name": "looks", "turns": [*turns, {"reply": [{"text": "done"}]}]})
    )
    env = deck_env(tmp_path)
    run = await cli(
        env, "run", "--cwd", str(work), "--name", "looks", "--json", "--scenario", str(path),
        "--allow", "Bash", "look, then tinker",
    )  # fmt: skip
    assert run.code == 0, run.err
    assert (work / "made.txt").read_text() == "made\n" and (work / "touched.txt").exists()

    listed = await cli(env, "checkpoints", "looks", "--json")
    assert listed.code == 0, listed.err
    timeline = json.loads(listed.out)
    assert [(c["n"], c["summary"].split("(")[0]) for c in timeline] == [
        (1, "Edit"), (2, "Bash"), (3, "Bash"), (4, "Bash"),
    ]  # fmt: skip
    assert "made.txt" in timeline[1]["summary"] and "rm gone.txt" in timeline[2]["summary"]
    assert timeline[3]["files"] == [
        {"status": "D", "path": "gone.txt"}  # rm's doing; `cat made.txt` took none
    ]
    back = await cli(env, "rewind", "looks", "--to", "2")  # to before the redirection
    assert back.code == 0, back.err
    assert not (work / "made.txt").exists() and (work / "gone.txt").read_text() == "keep me\n"
    assert (work / "calc.py").read_text().endswith("a + b\n")
