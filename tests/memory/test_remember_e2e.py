"""Memories the agents write, end to end: the real ``agentdeck`` command, the real
Claude Code CLI and the scripted model (run in this process, so what Claude Code
sent it is read back from its request log).

An agent calls the deck's ``remember`` tool → the memory waits (scrubbed) →
``agentdeck memories accept`` → a later agent of that template in that project is
told it at its start, with where it came from; an agent of another project or of
another template is not; ``memory_review: auto``, reject, edit, and the flood cap.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from agentdeck.mockmodel import MockModel
from tests.support.deckcli import Done, deck, deck_env
from tests.support.mockmodel import running_mock_in_thread

pytestmark = pytest.mark.cli

SCENARIO = Path(__file__).parent / "scenarios" / "remember.yaml"
KEY = "sk-ant-api03-AAAABBBBCCCCDDDDEEEEFFFFGGGGHHHHIIIIJJJJKKKKLLLLMMMMNNNN"
LEARNED = "LEARNED-1: the tests here need -p no:cacheprovider"


def template(name: str, review: str | None = None) -> str:
    extra = f"memory_review: {review}\n" if review else ""
    return f"---\nname: {name}\ndescription: Learns things.\n{extra}---\nDo the task.\n"


@dataclass
class Deck:
    env: dict[str, str]
    model: MockModel
    tmp: Path

    def __call__(self, *args: str) -> Done:
        return deck(self.env, *args)

    def project(self, name: str) -> Path:
        path = self.tmp / name
        path.mkdir(exist_ok=True)
        return path

    def run(self, agent: str, cwd: Path, prompt: str) -> dict[str, Any]:
        self.model.clear_requests()
        done = self("run", "--agent", agent, "--cwd", str(cwd), prompt, "--json")
        assert done.code == 0, done.err[-3000:]
        made: dict[str, Any] = done.json()["agent"]
        assert made["state"] == "done", made
        return made

    def told(self) -> str:
        """Everything Claude Code sent the model in the last run's first request."""
        bodies = [r.body for r in self.model.requests if r.path.endswith("/messages")]
        firsts = [b for b in bodies if isinstance(b, dict) and b.get("messages")]
        return json.dumps(firsts[0]["messages"]) if firsts else ""

    def memories(self, state: str = "pending") -> list[dict[str, Any]]:
        done = self("memories", "pending", "--state", state, "--json")
        assert done.code == 0, done.err[-2000:]
        found: list[dict[str, Any]] = done.json()
        return found


@pytest.fixture
def cli(tmp_path: Path) -> Iterator[Deck]:
    with running_mock_in_thread(SCENARIO) as model:
        env = deck_env(
            tmp_path,
            AGENTDECK_ANTHROPIC_BASE_URL=model.url_for("remember"),
            AGENTDECK_ANTHROPIC_API_KEY="sk-scripted",
            CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
        )
        agents = tmp_path / "claude-config" / "agents"
        agents.mkdir(parents=True)
        (agents / "learner.md").write_text(template("learner"))
        (agents / "other.md").write_text(template("other"))
        (agents / "trusting.md").write_text(template("trusting", "auto"))
        yield Deck(env, model, tmp_path)


def test_remember_accept_then_a_later_agent_of_the_template_in_the_project_is_told(
    cli: Deck,
) -> None:
    here, elsewhere = cli.project("here"), cli.project("elsewhere")
    first = cli.run("learner", here, "REMEMBER-TASK: learn something")
    [waiting] = cli.memories()
    assert waiting["state"] == "pending" and waiting["agent_id"] == first["id"]
    assert (waiting["template"], waiting["project"], waiting["kind"]) == (
        "learner",
        str(here),
        "command",
    )
    assert waiting["text"].startswith(LEARNED) and KEY not in waiting["text"]
    listed = cli("memories", "pending").out
    assert waiting["id"] in listed and LEARNED in listed
    # The call itself is scrubbed where else it is kept: the log, the session's memory.
    assert KEY not in cli("logs", first["id"], "--json").out
    assert KEY not in cli("memory", "search", "cacheprovider", "--json").out

    cli.run("learner", here, "LATER-TASK: before it is accepted")
    assert "LEARNED-1" not in cli.told(), "a pending memory is told to no one"

    accepted = cli("memories", "accept", waiting["id"], "--json")
    assert accepted.code == 0, accepted.err
    assert accepted.json()["state"] == "accepted"
    assert accepted.json()["decided_by"] == "user:cli"
    assert cli.memories() == []

    cli.run("learner", here, "LATER-TASK: after")
    told = cli.told()
    assert LEARNED in told and KEY not in told
    assert f"from agent {first['id']}" in told

    cli.run("learner", elsewhere, "LATER-TASK: another project")
    assert "LEARNED-1" not in cli.told()
    cli.run("other", here, "LATER-TASK: another template")
    assert "LEARNED-1" not in cli.told()

    again = cli("memories", "accept", waiting["id"])
    assert again.code == 1 and "is accepted; cannot accept" in again.err


def test_edit_then_reject_withdraws_it(cli: Deck) -> None:
    here = cli.project("here")
    cli.run("learner", here, "REMEMBER-TASK")
    [waiting] = cli.memories()
    edited = cli("memories", "edit", waiting["id"], "--text", "EDITED-LEARNING", "--kind", "fact")
    assert edited.code == 0, edited.err
    assert "EDITED-LEARNING" in edited.out
    assert cli("memories", "accept", waiting["id"]).code == 0
    cli.run("learner", here, "LATER-TASK")
    assert "EDITED-LEARNING" in cli.told() and "LEARNED-1" not in cli.told()

    assert cli("memories", "reject", waiting["id"]).code == 0
    [gone] = cli.memories("rejected")
    assert gone["edited"] is True and gone["text"] == "EDITED-LEARNING"
    cli.run("learner", here, "LATER-TASK")
    assert "EDITED-LEARNING" not in cli.told()

    bad = cli("memories", "edit", waiting["id"], "--text", "x" * 3000)
    assert bad.code == 2 and "at most 2048 bytes" in bad.err
    assert cli("memories", "accept", "mp000000000000").code == 1
    assert cli("memories", "accept", "../etc").code == 2


def test_a_user_template_with_memory_review_auto_skips_the_inbox(cli: Deck) -> None:
    here = cli.project("here")
    first = cli.run("trusting", here, "REMEMBER-TASK")
    assert cli.memories() == []
    [kept] = cli.memories("accepted")
    assert kept["decided_by"] == "template:auto" and kept["agent_id"] == first["id"]
    logs = cli("logs", first["id"], "--json").out
    assert "Remembered mp" in logs
    cli.run("trusting", here, "LATER-TASK")
    assert LEARNED in cli.told()


def test_an_agent_that_floods_the_inbox_is_refused_past_the_cap(cli: Deck) -> None:
    here = cli.project("here")
    flooder = cli.run("learner", here, "FLOOD-TASK")
    waiting = cli.memories()
    assert len(waiting) == 5 and {m["agent_id"] for m in waiting} == {flooder["id"]}
    logs = cli("logs", flooder["id"], "--json").out
    assert "memories waiting for review (at most 5)" in logs
    assert "FLOOD-7" not in json.dumps(cli.memories("all"))


def test_agents_show_says_whether_memories_are_reviewed(cli: Deck) -> None:
    here = cli.project("here")
    own = here / ".claude" / "agents"
    own.mkdir(parents=True)
    (own / "planted.md").write_text(template("planted", "auto"))

    def review(name: str) -> dict[str, Any]:
        done = cli("agents", "show", name, "--project", str(here), "--json")
        assert done.code == 0, done.err
        row: dict[str, Any] = done.json()["resolved"]["memory_review"]
        return row

    assert review("trusting") == {"value": "auto", "from": "template"}
    assert review("learner")["value"] == "inbox"
    assert review("planted") == {
        "value": "inbox",
        "from": "template says auto; a project's template may not",
    }
