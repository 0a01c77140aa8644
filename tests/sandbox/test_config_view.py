"""An agent's view of Claude Code's config directory: its own, read-only but
for its state, and made so that no sandbox start loses a race with another
Claude Code rewriting the shared state file (it replaces ``.claude.json`` by a
rename, which once failed a sandboxed start that was binding over it)."""

from __future__ import annotations

import asyncio
import json
import os
import threading
from pathlib import Path

import pytest

from agentdeck.core.sandbox import NetworkMode, SandboxMode, SandboxSpec
from agentdeck.sandbox.confine import Confinement
from tests.conftest import make_settings

from .conftest import needs_bwrap

pytestmark = [needs_bwrap, pytest.mark.anyio]
SPEC = SandboxSpec(mode=SandboxMode.PROCESS, network=NetworkMode.OPEN)


async def _run(confinement: Confinement, command: str, cwd: Path) -> tuple[int, str]:
    proc = await asyncio.create_subprocess_exec(
        *confinement.command(["sh", "-c", command]),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        cwd=str(cwd),
        env={**os.environ, **confinement.env()},
    )
    out, _ = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode is not None
    return proc.returncode, out.decode()


async def test_starts_never_lose_a_race_with_a_rewrite_of_the_state_file(
    tmp_path: Path,
) -> None:
    settings = make_settings(tmp_path)
    settings.ensure_home()
    config = settings.claude_config_dir
    assert config is not None
    config.mkdir(parents=True)
    state = config / ".claude.json"
    state.write_text('{"n": 0}')
    ws = tmp_path / "ws"
    ws.mkdir()
    stop = threading.Event()

    def rewrite() -> None:  # as Claude Code does: a new file renamed over the old
        n = 0
        while not stop.is_set():
            n += 1
            temp = config / f".claude.json.tmp.{n}"
            temp.write_text(json.dumps({"n": n}))
            temp.replace(state)

    writer = threading.Thread(target=rewrite, daemon=True)
    writer.start()
    try:
        for _ in range(12):
            boxes = [
                await Confinement.open(
                    SPEC, workspace=ws, settings=settings, endpoint=None, on_blocked=print
                )
                for _ in range(2)
            ]
            try:
                done = await asyncio.gather(
                    *(_run(box, 'cat "$CLAUDE_CONFIG_DIR/.claude.json"', ws) for box in boxes)
                )
            finally:
                for box in boxes:
                    await box.close()
            for code, out in done:
                assert code == 0, out
                assert json.loads(out)["n"] >= 0  # a copy of the user's, taken at the start
    finally:
        stop.set()
        writer.join(10)


async def test_the_view_shows_the_users_entries_and_no_one_elses_transcripts(
    tmp_path: Path,
) -> None:
    settings = make_settings(tmp_path)
    settings.ensure_home()
    config = settings.claude_config_dir
    assert config is not None
    (config / "agents").mkdir(parents=True)
    (config / "agents" / "helper.md").write_text("---\nname: helper\n---\nhelps")
    (config / "settings.json").write_text('{"theme": "dark"}')
    (config / "projects" / "-elsewhere").mkdir(parents=True)
    (config / "projects" / "-elsewhere" / "s.jsonl").write_text("ANOTHER PROJECT'S TRANSCRIPT")
    ws = tmp_path / "ws"
    ws.mkdir()
    box = await Confinement.open(
        SPEC, workspace=ws, settings=settings, endpoint=None, on_blocked=print
    )
    try:
        code, out = await _run(
            box,
            'cd "$CLAUDE_CONFIG_DIR"; cat settings.json agents/helper.md; echo; '
            'echo "LS: $(ls projects)"; '
            "cat projects/-elsewhere/s.jsonl; echo x > settings.local.json; "
            "echo x > todos/mine && echo TODO-WRITTEN",
            ws,
        )
    finally:
        await box.close()
    assert '{"theme": "dark"}' in out and "helps" in out
    listed = next(line for line in out.splitlines() if line.startswith("LS:"))
    assert "ANOTHER PROJECT" not in out and "-elsewhere" not in listed
    assert "Read-only file system" in out and not (config / "settings.local.json").exists()
    assert "TODO-WRITTEN" in out and not (config / "todos" / "mine").exists()  # its own, gone
    assert code == 0


async def test_a_model_endpoint_on_a_low_port_is_reached_on_a_high_one_inside(
    tmp_path: Path,
) -> None:
    """Binding a port below 1024 takes a capability no sandbox keeps: the relay
    listens above it and the agent is told the endpoint's new port."""
    settings = make_settings(tmp_path)
    settings.ensure_home()
    ws = tmp_path / "ws"
    ws.mkdir()
    box = await Confinement.open(
        SandboxSpec(mode=SandboxMode.PROCESS, network=NetworkMode.OFF),
        workspace=ws,
        settings=settings,
        endpoint="http://127.0.0.1:9/v1",
        on_blocked=print,
    )
    try:
        assert box.env()["ANTHROPIC_BASE_URL"] == "http://127.0.0.1:40009/v1"
        code, out = await _run(box, "echo RAN", ws)
    finally:
        await box.close()
    assert code == 0 and "RAN" in out, out  # the relay bound its ports
