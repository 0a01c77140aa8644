"""The one event-stream reader (``agentdeck.client.sse``): frames split anywhere,
comments, ``retry:`` and ``id:`` lines, multi-line data, and a broken line (a
clear error, once every event before it was given, so a resume loses nothing)."""

from __future__ import annotations

from itertools import pairwise

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentdeck.client.sse import EventStreamReader, ServerEvent
from agentdeck.errors import BrokenStream, DaemonUnavailable

# What the daemon writes (web/sse.py): a retry line, events, keep-alive comments.
STREAM = (
    b"retry: 2000\n\n"
    b'id: 1\nevent: notice\ndata: {"id": 1}\n\n'
    b": ping\n\n"
    b'id: 2\nevent: state_changed\ndata: {"id": 2,\ndata:  "new": "done"}\n\n'
    b'data: {"position": 7}\nevent: dropped\n\n'
)
EVENTS = [
    ServerEvent("notice", '{"id": 1}', "1"),
    ServerEvent("state_changed", '{"id": 2,\n "new": "done"}', "2"),
    ServerEvent("dropped", '{"position": 7}', "2"),
]


def read(*chunks: bytes) -> tuple[list[ServerEvent], EventStreamReader]:
    reader = EventStreamReader()
    return [e for chunk in chunks for e in reader.feed(chunk)], reader


def test_a_whole_stream_reads_as_its_events() -> None:
    events, reader = read(STREAM)
    assert events == EVENTS
    assert (reader.last_id, reader.retry) == ("2", 2000)


def test_a_stream_fed_a_byte_at_a_time_reads_the_same() -> None:
    events, reader = read(*(STREAM[i : i + 1] for i in range(len(STREAM))))
    assert events == EVENTS and reader.retry == 2000


@given(st.lists(st.integers(min_value=0, max_value=len(STREAM)), max_size=12))
def test_a_stream_split_anywhere_reads_the_same(cuts: list[int]) -> None:
    edges = [0, *sorted(cuts), len(STREAM)]
    assert read(*(STREAM[a:b] for a, b in pairwise(edges)))[0] == EVENTS


@pytest.mark.parametrize("newline", [b"\r\n", b"\r"])
def test_crlf_and_cr_line_endings_even_split_between_cr_and_lf(newline: bytes) -> None:
    stream = STREAM.replace(b"\n", newline)
    assert read(stream)[0] == EVENTS
    halves = [stream[: i + 1] for i in range(len(stream)) if stream[i : i + 1] == b"\r"]
    for half in halves:  # cut right after each CR: its LF (if any) starts the next chunk
        assert read(half, stream[len(half) :])[0] == EVENTS


def test_comments_unknown_fields_and_an_event_without_data_give_nothing() -> None:
    events, reader = read(b": hello\nfoo: bar\nevent: lonely\nid: 9\n\nnocolon\n\n")
    assert events == [] and reader.last_id == "9"


def test_one_space_after_the_colon_is_dropped_and_no_more() -> None:
    assert read(b"data:x\n\ndata:  y \n\n")[0] == [
        ServerEvent("message", "x"),
        ServerEvent("message", " y "),
    ]


def test_a_retry_that_is_not_a_number_and_an_id_with_nul_are_ignored() -> None:
    _, reader = read(b"retry: 10\n\nretry: soon\n\nid: 4\n\nid: 5\x006\n\n")
    assert (reader.retry, reader.last_id) == (10, "4")


def test_an_event_the_stream_ends_inside_is_not_given() -> None:
    events, _ = read(b'id: 1\ndata: {"id": 1}\n\nid: 2\ndata: {"id": 2')
    assert [e.id for e in events] == ["1"]


def test_a_line_that_is_not_utf8_is_a_clear_error_after_every_event_before_it() -> None:
    reader = EventStreamReader()
    given_events: list[ServerEvent] = []
    broken = b"id: 1\ndata: one\n\nid: 2\ndata: two\n\ndata: \xff\xfe\n\nid: 3\ndata: three\n\n"
    with pytest.raises(BrokenStream) as info:
        for event in reader.feed(broken):
            given_events.append(event)
    assert [e.data for e in given_events] == ["one", "two"]
    assert isinstance(info.value, DaemonUnavailable)  # clients reconnect on it
    assert "line 7" in info.value.message and "after event 2" in info.value.message
    assert "not UTF-8" in info.value.message and info.value.hint
    # Nothing lost: the stream read again from the last event given has the rest.
    assert reader.last_id == "2"
    assert [e.data for e in read(b"id: 3\ndata: three\n\n")[0]] == ["three"]


def test_a_line_longer_than_the_limit_is_a_clear_error_even_before_its_end() -> None:
    reader = EventStreamReader(max_line=64)
    assert [e.data for e in reader.feed(b"data: ok\n\n")] == ["ok"]
    with pytest.raises(BrokenStream, match="longer than 64 bytes"):
        list(reader.feed(b"data: " + b"x" * 100))
