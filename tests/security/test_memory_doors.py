"""Doors the model holds in memories the agents write: what its ``remember`` call
carries is hostile input. Extra arguments name nothing (no state, template,
project or author of its choosing); escapes and markup are not passed on to a
terminal; a template in the agent's own project cannot waive review; a project
whose memory is off keeps nothing. Real ``agentdeck``, real Claude Code, the
scripted model (``tests/memory/test_remember_e2e``'s harness)."""

from __future__ import annotations

import json

import pytest

from tests.memory.test_remember_e2e import Deck, cli, template

__all__ = ["cli"]  # the fixture, used by name

pytestmark = pytest.mark.cli


def test_extra_arguments_choose_nothing_and_escapes_never_reach_the_terminal(cli: Deck) -> None:
    here = cli.project("here")
    agent = cli.run("learner", here, "SMUGGLE-TASK")
    # A call naming its own state, template, project or author is refused whole
    # (Claude Code holds it to the tool's schema; the deck reads text and kind only).
    assert "SMUGGLED-EXTRAS" not in json.dumps(cli.memories("all"))
    assert "Additional properties are not allowed" in cli("logs", agent["id"], "--json").out
    [kept] = cli.memories()
    assert (kept["state"], kept["template"], kept["project"], kept["agent_id"]) == (
        "pending",
        "learner",
        str(here),
        agent["id"],
    )
    assert kept["decided_by"] is None
    assert "\x1b" not in kept["text"] and "\u202e" not in kept["text"]
    assert kept["text"].startswith("SMUGGLED [31mred[0m evil [bold red]markup[/bold red]")
    shown = cli("memories", "pending").out
    assert "\x1b[31m" not in shown and "[bold red]markup[/bold red]" in shown


def test_a_project_template_cannot_waive_review(cli: Deck) -> None:
    here = cli.project("here")
    own = here / ".claude" / "agents"
    own.mkdir(parents=True)
    (own / "planted.md").write_text(template("planted", "auto"))
    agent = cli.run("planted", here, "REMEMBER-TASK")
    [kept] = cli.memories()
    assert kept["agent_id"] == agent["id"] and kept["state"] == "pending"
    assert cli.memories("accepted") == []
    assert "a project's template may not skip review" in cli("logs", agent["id"], "--json").out


def test_a_project_whose_memory_is_off_keeps_nothing(cli: Deck) -> None:
    here = cli.project("here")
    (here / ".agentdeck").mkdir()
    (here / ".agentdeck" / "ignore").write_text("")
    agent = cli.run("learner", here, "REMEMBER-TASK")
    assert cli.memories("all") == []
    assert "memory is off for this project" in cli("logs", agent["id"], "--json").out
