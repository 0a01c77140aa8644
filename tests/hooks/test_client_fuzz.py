"""Whatever Claude Code (or anything else) puts on its stdin, the hook client
answers calmly: no exception, no traceback, exit 0 unless the daemon said
otherwise, at most one stderr line, and a well-formed payload reaches the
daemon intact.

10,000 generated stdins go through ``run`` in-process, each both without a
daemon and against a real socket server echoing what it got; ~100 more go
through real client processes.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentdeck.core.policy import Decision
from agentdeck.hooks import hookclient_impl as impl
from agentdeck.hooks.config import client_config
from agentdeck.settings import Settings
from tests.hooks.conftest import Recorder, ServerThread, run_client
from tests.hooks.payloads import (
    hook_payloads,
    malformed_stdin,
    nesting,
    stdin_bytes,
    well_formed_stdin,
)

IN_PROCESS_EXAMPLES = 10_000
STRUCTURED_EXAMPLES = 300
SUBPROCESS_EXAMPLES = 100
SWITCH_INTERVAL = 0.0002
DEEP = 100  # nesting below this always crosses; above, recursion limits may bite
FUZZ = settings(
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def parsed_event(stdin: bytes) -> dict[str, Any] | None:
    """The payload if it is one the client must forward, else None."""
    try:
        event = json.loads(stdin.decode("utf-8"))
    except (ValueError, RecursionError):
        return None
    if isinstance(event, dict) and isinstance(event.get("hook_event_name"), str):
        return event if event["hook_event_name"] else None
    return None


def write_installed_config(home: Path, deadline: float) -> None:
    """``hooks.json`` as ``hooks install`` writes it under the default profile."""
    settings = Settings(home=home, hook_deadline_seconds=deadline)
    (home / "hooks.json").write_text(json.dumps(client_config(settings, Decision.ASK)))


@pytest.fixture(scope="module")
def homes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path]]:
    """A home without a daemon, and one with an echoing socket server."""
    down = tmp_path_factory.mktemp("down")
    up = tmp_path_factory.mktemp("up")
    write_installed_config(down, deadline=2.0)
    # generous: a slow machine must not look like a fallback
    write_installed_config(up, deadline=5.0)
    # The server thread shares our GIL: hand it over sooner than every 5 ms.
    interval = sys.getswitchinterval()
    sys.setswitchinterval(SWITCH_INTERVAL)
    try:
        with ServerThread(up / "daemon.sock", Recorder()):
            yield down, up
    finally:
        sys.setswitchinterval(interval)


def check(stdin: bytes, result: tuple[int, str, str], *, daemon: bool) -> None:
    code, out, err = result
    assert code == 0
    assert "Traceback" not in err
    event = parsed_event(stdin)
    if event is None:  # not a hook payload: one line, nothing else
        assert out == ""
        assert len(err.splitlines()) == 1 and err.startswith("agentdeck hook: "), err
        return
    assert len(err.splitlines()) <= 1
    echoed = daemon and out.startswith('{"event"')
    if echoed:
        assert (json.loads(out)["event"], err) == (event, "")  # it crossed intact
        return
    if daemon or err:
        # Only a payload too deep for Python's recursion limit (the client's,
        # the daemon's or the echo's) may end as a complaint or the fallback.
        assert nesting(event) > DEEP, (out, err)
    # The default fallback passes every event: Claude Code's own rules decide.
    assert out == ""
    if err:
        assert err.startswith(("agentdeck: ", "agentdeck hook: ")), err


@settings(FUZZ, max_examples=IN_PROCESS_EXAMPLES)
@given(stdin=stdin_bytes)
def test_any_stdin_in_process(homes: tuple[Path, Path], stdin: bytes) -> None:
    down, up = homes
    check(stdin, impl.run(["client.py", str(down)], stdin, {}), daemon=False)
    check(stdin, impl.run(["client.py", str(up)], stdin, {}), daemon=True)


@settings(FUZZ, max_examples=STRUCTURED_EXAMPLES)
@given(stdin=st.one_of(well_formed_stdin, malformed_stdin))
def test_structured_stdin_in_process(homes: tuple[Path, Path], stdin: bytes) -> None:
    """Hypothesis's own strategies: slower, but its edge cases, and they shrink."""
    down, up = homes
    check(stdin, impl.run(["client.py", str(down)], stdin, {}), daemon=False)
    check(stdin, impl.run(["client.py", str(up)], stdin, {}), daemon=True)


@settings(FUZZ, max_examples=SUBPROCESS_EXAMPLES)
@given(stdin=stdin_bytes, up=st.booleans())
def test_any_stdin_through_a_real_process(homes: tuple[Path, Path], stdin: bytes, up: bool) -> None:
    home = homes[1] if up else homes[0]
    done = run_client(home, stdin)
    check(stdin, (done.code, done.out, done.err), daemon=up)


@settings(FUZZ, max_examples=200)
@given(payload=hook_payloads())
def test_a_well_formed_payload_is_forwarded_exactly(
    homes: tuple[Path, Path], payload: dict[str, Any]
) -> None:
    stdin = json.dumps(payload, indent=1, ensure_ascii=False).encode()
    code, out, err = impl.run(["client.py", str(homes[1])], stdin, {"CLAUDE_PID": "7"})
    assert (code, err) == (0, "")
    assert json.loads(out) == {"event": payload, "env": {"CLAUDE_PID": "7"}}
