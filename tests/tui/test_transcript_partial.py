"""The TUI's transcript pane shows the agent's text as it is written (the real CLI
on the scripted model, streaming in small chunks, behind a real daemon): a last
entry grows while the agent runs, then the text's own entry takes its place, once;
and the pane's writing entry alone (``entries.Writing``) applies edits as a
follower must."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from agentdeck.core.partial import PartialText
from agentdeck.tui.app import DeckApp
from agentdeck.tui.entries import Writing
from agentdeck.tui.link import HomeLocator
from agentdeck.tui.transcript import TranscriptView
from tests.support.daemonproc import Daemon
from tests.support.deckcli import deck_env
from tests.support.waiting import eventually

PIECES = " ".join(f"piece{i}" for i in range(150))
TEXT = f"Writing it out: {PIECES} all finished."


async def _true(value: Any) -> Any:
    return value


@pytest.mark.anyio
@pytest.mark.cli
async def test_the_pane_shows_the_text_as_it_is_written(
    tmp_path: Path, daemons: list[Daemon]
) -> None:
    scenario = tmp_path / "write.yaml"
    # The text streams only once the pane is known to follow the agent: its first
    # call waits for a file the test makes then (under load the TUI could select the
    # agent after a stream left to the clock had ended).
    gate = {"name": "Bash", "input": {"command": "until [ -e go ]; do sleep 0.1; done"}}
    turns = [{"reply": [{"tool_use": gate}]}, {"chunk_delay": 0.05, "reply": [{"text": TEXT}]}]
    scenario.write_text(yaml.safe_dump({"name": "write", "turns": turns}))
    daemon = await Daemon(deck_env(tmp_path)).start()
    daemons.append(daemon)
    app = DeckApp(HomeLocator(daemon.home))
    async with app.run_test(size=(200, 50)), daemon.api() as api:
        body = {"prompt": "write", "name": "writer", "scenario": str(scenario)}
        created = await api.post("/api/agents", json={**body, "profile": "permissive"})
        assert created.status_code == 201, created.text
        agent_id = created.json()["id"]
        view = app.query_one("#transcript", TranscriptView)
        await eventually(lambda: _true(app.selected == agent_id), what="the agent selected")
        await eventually(lambda: _true("until [ -e go ]" in view.text), what="the gate shown")
        cwd = (await api.get(f"/api/agents/{agent_id}")).json()["cwd"]
        (Path(cwd) / "go").touch()

        async def midway() -> str | None:
            text = view.text
            return text if "piece20 " in text else None

        early = await eventually(midway, timeout=60, what="the text as it is written")
        assert "finished." not in early, early
        await eventually(lambda: _true("idle" in view.text), timeout=60, what="the turn's end")
        whole = view.text
    assert whole.count("piece149") == 1 and whole.count("finished.") == 1, whole


def edit(offset: int, text: str, block: str = "m:0", parent: str | None = None) -> PartialText:
    return PartialText("a", block, offset, text, parent)


def test_the_writing_entry_takes_edits_as_a_follower_must() -> None:
    writing = Writing()
    assert writing.take(edit(0, "one "))
    assert writing.take(edit(4, "two "))
    assert writing.entry is not None and writing.entry.spans[-1][1] == ""
    assert writing.text == "one two "
    assert not writing.take(edit(20, "gap "))  # an edit missed: left to the event
    assert not writing.take(edit(0, "sub ", parent="toolu_1"))  # a subagent's
    assert not writing.take(edit(3, "late ", block="m:1"))  # joined mid-block
    assert writing.take(edit(0, "new ", block="m:1")) and writing.text == "new "
