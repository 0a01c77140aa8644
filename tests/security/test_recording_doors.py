"""The recordings' doors: an id names a cassette only as a plain agent id, a link in
recordings/ is never followed, a route token is the only way through the proxy."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentdeck.errors import NotFound, UsageError
from agentdeck.runner.recording.store import Recordings
from tests.support.deckcli import deck, deck_env

HOSTILE = [
    "../x", "../../etc/passwd", "a/b", "/etc/passwd", ".hidden", "..", ".", "", "a\x00b",
    "a\nb", "x" * 65, "a b", "-rf", "ab.jsonl/..", "%2e%2e", "a\\b",
]  # fmt: skip


@pytest.mark.parametrize("agent_id", HOSTILE)
def test_no_path_or_odd_name_reaches_the_filesystem(tmp_path: Path, agent_id: str) -> None:
    store = Recordings(tmp_path / "recordings")
    with pytest.raises(UsageError):
        store.path_of(agent_id)
    with pytest.raises(UsageError):
        store.remove(agent_id)
    with pytest.raises(UsageError):
        store.records(agent_id)


def test_a_link_in_recordings_is_neither_read_nor_removed(tmp_path: Path) -> None:
    outside = tmp_path / "outside.jsonl"
    outside.write_text('{"kind": "meta", "secret": "kept"}\n')
    root = tmp_path / "recordings"
    root.mkdir()
    (root / "a1.jsonl").symlink_to(outside)
    store = Recordings(root)
    with pytest.raises(NotFound):
        store.records("a1")
    with pytest.raises(NotFound):
        store.remove("a1")
    assert store.listed() == [] and outside.exists()


def test_the_cli_refuses_a_path_for_an_id(tmp_path: Path) -> None:
    env = deck_env(tmp_path)
    victim = tmp_path / "home" / "victim.jsonl"
    victim.parent.mkdir(parents=True)
    victim.write_text("{}\n")
    for args in (("rm", "../victim"), ("show", "../victim"), ("rm", str(victim))):
        done = deck(env, "recordings", *args)
        assert done.code == 2 and "cannot name a recording" in done.err
    for hostile in ("../victim", str(victim)):  # agentdeck replay: refused before any work
        done = deck(env, "replay", hostile)
        assert done.code == 2 and "cannot name a recording" in done.err
    assert victim.exists()
