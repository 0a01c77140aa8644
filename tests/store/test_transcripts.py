"""Claude Code transcripts in the database (``store.transcripts``), on both
backends: kept and replaced per agent, scrubbed like the log, NUL characters
dropped, and one over the limit refused with nothing written."""

from __future__ import annotations

import json

import pytest

from agentdeck.errors import Refused, UsageError
from agentdeck.settings import Settings
from agentdeck.store import Store
from agentdeck.store.transcripts import DEFAULT_MAX_BYTES, TranscriptStore
from tests.store.conftest import db_rows

pytestmark = pytest.mark.anyio

KEY = "sk-ant-api03-" + "Hk2" * 30


def _jsonl(*texts: str) -> str:
    return "".join(
        json.dumps({"type": "assistant", "message": {"content": t}}) + "\n" for t in texts
    )


async def test_a_transcript_is_kept_per_agent_and_replaced_by_a_newer_copy(store: Store) -> None:
    ts = TranscriptStore(store)
    assert await ts.load("a1") is None
    first = _jsonl("hello", "héllo ✓")
    assert await ts.save("a1", "s-1", "h1", first) == len(first.encode())
    assert await ts.load("a1") == ("s-1", first)
    second = first + _jsonl("more")
    await ts.save("a1", "s-2", "h2", second)
    await ts.save("a2", "s-9", "h1", _jsonl("other"))
    assert await ts.load("a1") == ("s-2", second)
    rows = db_rows(store, "SELECT agent_id, session_id, host, size FROM transcripts ORDER BY 1")
    assert rows == [
        ("a1", "s-2", "h2", len(second.encode())),
        ("a2", "s-9", "h1", len(_jsonl("other"))),
    ]


async def test_a_secret_in_a_transcript_is_stored_redacted(store: Store) -> None:
    ts = TranscriptStore(store)
    text = _jsonl(f"the key is {KEY}", "<private>my diary</private> and the rest")
    await ts.save("a1", "s-1", "h1", text)
    loaded = await ts.load("a1")
    assert loaded is not None
    kept = loaded[1]
    assert KEY not in kept and "my diary" not in kept and "and the rest" in kept
    assert KEY not in str(db_rows(store, "SELECT data FROM transcripts"))
    for line in kept.splitlines():
        json.loads(line)  # still a transcript Claude Code can read


async def test_nul_characters_are_dropped_on_both_backends(store: Store) -> None:
    ts = TranscriptStore(store)
    size = await ts.save("a1", "s-1", "h1", 'a\x00b{"x": "\\u0000"}\n')
    assert await ts.load("a1") == ("s-1", 'ab{"x": "\\u0000"}\n')  # the JSON escape stays
    assert size == len('ab{"x": "\\u0000"}\n')


async def test_a_transcript_over_the_limit_is_refused_and_nothing_is_written(
    store: Store,
) -> None:
    ts = TranscriptStore(store, max_bytes=1000)
    await ts.save("a1", "s-1", "h1", "small\n")
    with pytest.raises(Refused, match=r"over the limit of .*: not kept") as caught:
        await ts.save("a1", "s-2", "h1", "é" * 600)  # 1,200 bytes, 600 characters
    assert "AGENTDECK_TRANSCRIPT_MAX_BYTES" in str(caught.value)
    assert await ts.load("a1") == ("s-1", "small\n")  # the older copy stays
    await ts.save("a1", "s-3", "h1", "x" * 1000)  # at the limit: kept
    assert Settings.model_fields["transcript_max_bytes"].default == DEFAULT_MAX_BYTES


@pytest.mark.parametrize(
    ("agent_id", "session_id", "host", "says"),
    [
        ("", "s", "h1", "bad agent id"),
        ("a\n1", "s", "h1", "bad agent id"),
        ("a1", "x" * 201, "h1", "bad session id"),
        ("a1", "s", "bad host", "bad host name"),
    ],
)
async def test_bad_names_are_refused(
    store: Store, agent_id: str, session_id: str, host: str, says: str
) -> None:
    with pytest.raises(UsageError, match=says):
        await TranscriptStore(store).save(agent_id, session_id, host, "x\n")
    assert db_rows(store, "SELECT count(*) FROM transcripts") == [(0,)]
