"""A bridge's state file is written off the event loop, and the newest state wins."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from agentdeck.bridges import state as state_module
from agentdeck.bridges.state import BridgeState, ConversationState, StateFile
from agentdeck.files import atomic_write
from tests.bridges.memplatform import CHANNEL

SAVES = 200


def _state(position: int) -> BridgeState:
    # The earlier the state, the longer its draft: an earlier write takes longer.
    draft = "word " * (50 * (SAVES - position))
    conv = ConversationState(agent_id="ag1", cursor=position, draft=draft)
    return BridgeState(position=position, conversations={CHANNEL.key: conv})


def test_saves_in_a_row_end_with_the_newest_on_disk(tmp_path: Path) -> None:
    path = tmp_path / "b.json"
    file = StateFile(path)
    for position in range(1, SAVES + 1):
        file.save_soon(_state(position))
    loaded = StateFile(path).load()  # waits for the writes of this process
    assert loaded.position == SAVES
    assert loaded.conversations[CHANNEL.key].cursor == SAVES
    assert [p.name for p in tmp_path.iterdir()] == ["b.json"]
    assert path.stat().st_mode & 0o777 == 0o600


def test_a_save_returns_while_a_write_is_under_way_and_only_the_newest_follows_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "b.json"
    release = threading.Event()
    writing = threading.Event()
    written: list[int] = []

    def slow(target: Path, text: str, *, mode: int | None = None) -> None:
        writing.set()
        assert release.wait(30), "the test never released the writer"
        written.append(json.loads(text)["position"])
        atomic_write(target, text, mode=mode)

    monkeypatch.setattr(state_module, "atomic_write", slow)
    file = StateFile(path)
    file.save_soon(_state(1))
    assert writing.wait(30)
    # The first write is held: these return at once, as on the event loop.
    for position in range(2, 6):
        file.save_soon(_state(position))
    assert written == []
    release.set()
    file.flush()
    assert written == [1, 5], "the states in between are skipped, never written last"
    assert json.loads(path.read_text())["position"] == 5


def test_a_write_that_fails_is_logged_and_the_next_save_writes(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    blocked = tmp_path / "not-a-directory"
    blocked.write_text("a file where the state's directory should be")
    file = StateFile(blocked / "b.json")
    file.save(_state(1))
    assert "could not be written" in caplog.text
    blocked.unlink()
    file.save(_state(2))
    assert StateFile(blocked / "b.json").load().position == 2
