"""The recordings' doors: an id names a cassette only as a plain agent id, a link in
recordings/ is never followed, a route token is the only way through the proxy, and
a secret the model streams back in pieces is not kept in pieces."""

from __future__ import annotations

import hashlib
import json
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from agentdeck.errors import NotFound, UsageError
from agentdeck.mockmodel.encoding import sse_frame
from agentdeck.runner.recording.cassette import read_lines, response_bytes
from agentdeck.runner.recording.export import scenario_of
from agentdeck.runner.recording.service import Recorder
from agentdeck.runner.recording.store import Recordings
from tests.conftest import make_settings
from tests.recording.upstream import Upstream, serving
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


# -- a secret split across streamed fragments ------------------------------------------

KEY = "sk-ant-api03-" + hashlib.sha256(b"planted").hexdigest()[:80]
SAID = f"The key is {KEY} (keep it safe).\nDB_PASSWORD=Tr0ub4dor-Horse-Battery-9\ndone"
OFFSETS = (3, 13, 30, 61, len(KEY) - 2)  # where in the key the stream breaks


def _absent(text: str) -> None:
    """No 10 characters in a row of the key's body, nor the password, anywhere."""
    body = KEY.removeprefix("sk-ant-api03-")
    for i in range(len(body) - 9):
        assert body[i : i + 10] not in text, f"a piece of the key is kept: {body[i : i + 10]}"
    assert "Tr0ub4dor" not in text and "Horse-Battery" not in text


def _deltas(*pieces: str, blocks: bool = False) -> tuple[bytes, ...]:
    """A text answer streamed in ``pieces``: deltas of one block, or (``blocks``)
    each piece a text block of its own."""
    events: list[dict[str, object]] = [
        {"type": "message_start", "message": {"id": "msg_1", "content": []}}
    ]
    for i, piece in enumerate(pieces):
        index = i if blocks else 0
        if blocks or i == 0:
            block = {"type": "text", "text": ""}
            events.append({"type": "content_block_start", "index": index, "content_block": block})
        delta = {"type": "text_delta", "text": piece}
        events.append({"type": "content_block_delta", "index": index, "delta": delta})
        if blocks or i == len(pieces) - 1:
            events.append({"type": "content_block_stop", "index": index})
    events.append({"type": "message_stop"})
    return tuple(sse_frame(e) for e in events)


def _streams() -> list[tuple[str, tuple[bytes, ...]]]:
    """Each way a stream breaks the secrets: between delta events (in two and three),
    and inside one event's bytes (the chunk boundary in the JSON string)."""
    streams = []
    at = SAID.index(KEY)
    pw = SAID.index("Tr0ub4dor") + 4
    for off in OFFSETS:
        cut = at + off
        streams.append((f"deltas-{off}", _deltas(SAID[:cut], SAID[cut:pw], SAID[pw:])))
        streams.append(
            (f"thirds-{off}", _deltas(SAID[:cut], SAID[cut : cut + 20], SAID[cut + 20 :]))
        )
        streams.append((f"blocks-{off}", _deltas(SAID[:cut], SAID[cut:], blocks=True)))
        whole = b"".join(_deltas(SAID))
        raw = whole.index(KEY.encode()) + off
        streams.append((f"bytes-{off}", (whole[:raw], whole[raw : raw + 7], whole[raw + 7 :])))
    return streams


@pytest.fixture
async def recorder(tmp_path: Path) -> AsyncIterator[Recorder]:
    rec = Recorder(make_settings(tmp_path))
    try:
        yield rec
    finally:
        await rec.close()


@pytest.mark.anyio
async def test_a_secret_split_across_streamed_fragments_is_not_kept(recorder: Recorder) -> None:
    async with serving(Upstream()) as up, httpx.AsyncClient() as client:
        for name, chunks in _streams():
            up.chunks = chunks
            route = await recorder.open(name, up.url, "all")
            got = await client.post(f"{route}/v1/messages", json={"stream": True})
            assert got.content == b"".join(chunks), name  # the agent gets what was said
            _check(recorder, name, len(chunks))


def _check(recorder: Recorder, name: str, count: int) -> None:
    recorder.finish(name, "done")
    path = recorder.recordings.path_of(name)
    _absent(path.read_text())
    records = read_lines(path)
    # Every chunk kept at its time; what they join to is a stream that plays.
    assert len([r for r in records if r["kind"] == "chunk"]) == count, name
    (turn,) = scenario_of(records, name)["turns"]
    said = "".join(block["text"] for block in turn["reply"])
    assert said.startswith("The key is [REDACTED:"), name
    assert said.endswith("(keep it safe).\nDB_PASSWORD=[REDACTED:assignment]\ndone"), name
    assert response_bytes(records, 1).endswith(b'{"type": "message_stop"}\n\n')


@pytest.mark.anyio
async def test_a_secret_in_a_request_body_sent_in_pieces_is_not_kept(recorder: Recorder) -> None:
    body = json.dumps({"stream": True, "messages": [{"role": "user", "content": SAID}]}).encode()
    async with serving(Upstream()) as up:
        for off in OFFSETS:
            cut = body.index(KEY.encode()) + off

            async def pieces(cut: int = cut) -> AsyncIterator[bytes]:
                for piece in (body[:cut], body[cut : cut + 5], body[cut + 5 :]):
                    yield piece

            route = await recorder.open(f"req-{off}", up.url, "all")
            async with httpx.AsyncClient() as client:
                sent = await client.post(f"{route}/v1/messages", content=pieces())
            assert sent.status_code == 200
            recorder.finish(f"req-{off}", "done")
            text = recorder.recordings.path_of(f"req-{off}").read_text()
            _absent(text)
            assert "[REDACTED:" in text
        assert all(seen["body"] == body for seen in up.seen)  # forwarded untouched
