"""The span exporter's reading of its pipe (``worker.frames``), on a real pipe:
frames are read as they come but handed on in the writer's pauses, or once they
have waited ``HOLD`` or ``HOLD_BYTES`` of them are read; a frame cut between two
reads waits for its rest; the end of the input hands on what was read."""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator

import pytest

from agentdeck.telemetry import worker
from agentdeck.telemetry.child import frame


@pytest.fixture
def pipe() -> Iterator[tuple[int, int]]:
    read, write = os.pipe()
    yield read, write
    for fd in (read, write):
        with contextlib.suppress(OSError):  # closed by the test
            os.close(fd)


def test_frames_wait_for_the_writers_pause(
    pipe: tuple[int, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(worker, "QUIET", 0.2)
    monkeypatch.setattr(worker, "HOLD", 60.0)
    read, write = pipe
    incoming = worker.frames(read, idle=60.0)
    os.write(write, frame(["a"]) + frame(["b"]))
    started = time.monotonic()
    assert next(incoming) == ["a"]
    assert time.monotonic() - started >= 0.2  # the pipe was quiet that long first
    assert next(incoming) == ["b"]


def test_frames_held_too_long_are_handed_on_while_the_writer_goes_on(
    pipe: tuple[int, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(worker, "QUIET", 60.0)  # the writer never pauses, as far as it knows
    monkeypatch.setattr(worker, "HOLD", 0.0)
    read, write = pipe
    incoming = worker.frames(read, idle=60.0)
    os.write(write, frame(["a"]))
    assert next(incoming) == ["a"]  # not 60 s later


def test_frames_past_the_bytes_bound_are_handed_on_at_once(
    pipe: tuple[int, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(worker, "QUIET", 60.0)
    monkeypatch.setattr(worker, "HOLD", 60.0)
    monkeypatch.setattr(worker, "HOLD_BYTES", 1024)
    read, write = pipe
    incoming = worker.frames(read, idle=60.0)
    payloads = [["x" * 100, n] for n in range(20)]  # ~2.4 KB in one write
    os.write(write, b"".join(frame(p) for p in payloads))
    assert [next(incoming) for _ in payloads] == payloads


def test_a_frame_cut_between_reads_waits_for_its_rest(
    pipe: tuple[int, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(worker, "QUIET", 0.01)
    read, write = pipe
    incoming = worker.frames(read, idle=0.05)
    whole = frame(["cut", 1])
    os.write(write, frame(["first"]) + whole[:5])
    assert next(incoming) == ["first"]
    assert next(incoming) is None  # the rest has not come: an idle tick, not a frame
    os.write(write, whole[5:])
    assert next(incoming) == ["cut", 1]


def test_the_end_of_the_input_hands_on_what_was_read(
    pipe: tuple[int, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(worker, "QUIET", 60.0)
    monkeypatch.setattr(worker, "HOLD", 60.0)
    read, write = pipe
    os.write(write, frame(["a"]) + frame(["b"]) + frame(["torn"])[:3])
    os.close(write)
    assert list(worker.frames(read, idle=60.0)) == [["a"], ["b"]]  # a torn tail is dropped


def test_nothing_to_read_is_an_idle_tick(pipe: tuple[int, int]) -> None:
    read, _ = pipe
    assert next(worker.frames(read, idle=0.01)) is None
