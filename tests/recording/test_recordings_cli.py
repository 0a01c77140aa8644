"""``agentdeck run --record`` and ``agentdeck recordings`` as a user runs them."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentdeck.client.deck.base import create_body
from agentdeck.core.agent import AgentSpec
from agentdeck.web.schemas import AgentCreate
from tests.support.deckcli import deck, deck_env


@pytest.mark.cli
def test_run_record_then_ls_show_rm(tmp_path: Path) -> None:
    env = deck_env(tmp_path)
    ran = deck(env, "run", "--record", "--scenario", "three-turns", "say one and two", "--json")
    assert ran.code == 0, ran.err
    agent_id = ran.json()["agent"]["id"]
    listed = deck(env, "recordings", "ls", "--json")
    assert listed.code == 0, listed.err
    (info,) = listed.json()
    assert (info["agent_id"], info["state"], info["mode"]) == (agent_id, "done", "all")
    shown = deck(env, "recordings", "show", agent_id, "--json").json()
    messages = [e for e in shown["exchanges"] if e["path"].startswith("/v1/messages")]
    assert len(messages) == 3  # the scenario's three turns
    assert all(e["status"] == 200 and e["outcome"] == "complete" for e in messages)
    assert all(e["bytes"] > 0 for e in messages)
    assert shown["start"]["cwd"].endswith(agent_id)
    assert shown["start"]["checkpoint"]["summary"] == "recording start"
    text = deck(env, "recordings", "show", agent_id)
    assert text.code == 0 and "upstream" in text.out and "#1" in text.out
    exported = tmp_path / "exported.yaml"
    wrote = deck(env, "scenario", "export", agent_id, "-o", str(exported))
    assert wrote.code == 0 and "3 turns" in wrote.out, wrote.err
    played = deck(env, "run", "--scenario", str(exported), "say one and two", "--json")
    assert played.code == 0, played.err
    assert played.json()["result"]["result"] == ran.json()["result"]["result"]
    assert deck(env, "recordings", "rm", agent_id).code == 0
    assert deck(env, "recordings", "ls", "--json").json() == []
    gone = deck(env, "recordings", "show", agent_id)
    assert gone.code == 1 and "no recording" in gone.err


def test_a_run_not_asked_to_record_leaves_no_cassette_and_ls_says_so(tmp_path: Path) -> None:
    env = deck_env(tmp_path)
    listed = deck(env, "recordings", "ls")
    assert listed.code == 0 and "no recordings" in listed.out


def test_record_goes_through_the_api_and_back_to_a_spec() -> None:
    spec = AgentSpec(prompt="hi", record=True)
    body = create_body(spec, keep_alive=False, template=None)
    assert body["record"] is True
    assert AgentCreate.model_validate(body).to_spec().record is True
    assert "record" not in create_body(AgentSpec(prompt="hi"), keep_alive=False, template=None)
    assert AgentCreate.model_validate({"prompt": "hi"}).to_spec().record is False
    assert AgentSpec.from_dict(spec.to_dict()).record is True
    assert AgentSpec.from_dict({"prompt": "hi", "record": "yes"}).record is False
