"""Doors of the Claude Code plugin (plugin/agentdeck): what a user types into its
options (userConfig) is data. A value with shell metacharacters is never run by a
hook's command line or the MCP server's: the manifests put no option into a
command, and the launchers use it only quoted. Checked on the manifests, on the
launchers run as Claude Code runs them, and once through the real CLI."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.plugin.support import (
    MCP_PREFIX,
    PLUGIN,
    SCRIPTS,
    claude_env,
    install,
    launch,
    manifest,
)
from tests.support.mockmodel import run_claude, running_mock


def _hostile(marker: Path) -> list[str]:
    """Home values that run ``touch MARKER…`` wherever a shell evaluates them."""
    m = str(marker)
    return [
        f"/tmp/x$(touch {m}1)",
        f"/tmp/x`touch {m}2`",
        f'/tmp/x"; touch {m}3; "',
        f"/tmp/x'; touch {m}4; '",
        f"/tmp/x\ntouch {m}5",
        f"$(touch {m}6)",
        f"~/$(touch {m}7)",
        f"/tmp/x; touch {m}8 #",
    ]


def _ran(marker: Path) -> list[str]:
    return sorted(p.name for p in marker.parent.glob(marker.name + "*"))


def test_no_option_is_put_into_a_command_line() -> None:
    """Claude Code substitutes ``${user_config.X}`` into the text it is given: in a
    hook's ``command`` that text is run by a shell. Options reach hooks as the
    environment (CLAUDE_PLUGIN_OPTION_X) and the MCP server through ``env`` only."""
    commands: list[str] = []
    for groups in manifest("hooks", "hooks.json")["hooks"].values():
        commands += [h["command"] for g in groups for h in g["hooks"]]
    for server in manifest(".mcp.json")["mcpServers"].values():
        commands += [server["command"], *server.get("args", [])]
        assert all(isinstance(v, str) for v in server.get("env", {}).values())
    assert commands
    for command in commands:
        assert command.replace("${CLAUDE_PLUGIN_ROOT}", "").count("$") == 0, command
    # nor into a prompt the model may turn into a Bash command
    for text in PLUGIN.rglob("*.md"):
        assert "user_config" not in text.read_text(), text


def test_a_hostile_home_is_never_run_by_the_launchers(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    payload = json.dumps({"hook_event_name": "SessionStart", "session_id": "s", "cwd": "/"})
    values = _hostile(marker)
    for value in values:
        for variable in ("CLAUDE_PLUGIN_OPTION_HOME", "AGENTDECK_HOME"):
            env = claude_env(tmp_path, CLAUDE_PLUGIN_DATA=str(tmp_path / "data"))
            env[variable] = value
            hook = launch("agentdeck-hook", env, payload)
            assert hook.returncode == 0 and hook.stdout == "", (value, hook.stderr)
            assert _ran(marker) == [], (variable, value)
    # The MCP server's launcher: one absolute value holding them all (it starts
    # `agentdeck mcp`, ~1 s; stdin closed at once, the server ends).
    env = claude_env(tmp_path, AGENTDECK_PLUGIN_HOME="/tmp/x" + "".join(values))
    launch("agentdeck-mcp", env)
    assert _ran(marker) == []
    # the hook's only file: where agentdeck's client is, nothing from the option
    (cache,) = (tmp_path / "data").iterdir()
    assert "touch" not in cache.read_text()


SCRIPT: dict[str, Any] = {
    "name": "doors",
    "turns": [
        {"reply": [{"tool_use": {"name": f"{MCP_PREFIX}list_agents", "input": {}}}]},
        {"reply": [{"text": "DOORS-DONE"}]},
    ],
}


@pytest.mark.anyio
@pytest.mark.cli
async def test_a_hostile_home_option_through_the_real_cli_runs_nothing(tmp_path: Path) -> None:
    """Installed with the value, every hook of a session and the MCP server start
    with it, through Claude Code's own substitution; nothing it holds is run."""
    marker = tmp_path / "ran"
    value = f'/tmp/x"; touch {marker}1; "$(touch {marker}2)`touch {marker}3`'
    scenario = tmp_path / "doors.yaml"
    scenario.write_text(yaml.safe_dump(SCRIPT))
    async with running_mock(scenario) as mm:
        env = claude_env(tmp_path, mm.url_for("doors"))
        install(env, tmp_path, home=value)
        run = await run_claude(
            ["-p", "hello", "--allowedTools", f"{MCP_PREFIX}list_agents"],
            cwd=tmp_path,
            env=env,
            timeout=120,
        )
    assert run.returncode == 0 and run.result["result"] == "DOORS-DONE", run.stderr[-2000:]
    assert _ran(marker) == []
    # the server took the value whole, as the name of a home with no daemon
    said = json.dumps([line for line in run.lines if line.get("type") == "user"])
    assert json.dumps(f"no agentdeck daemon is running for {value}")[1:-1] in said


def _mcp_under_a_claude(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """The MCP launcher started by a process (a stand-in for Claude Code) that this
    test's process started: as a runner starts an agent's Claude Code."""
    return subprocess.run(
        ["/bin/sh", "-c", '"$0"; exit $?', str(SCRIPTS / "agentdeck-mcp")],
        env=env,
        input="",
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_an_agent_agentdeck_runs_gets_no_deck_tools_from_the_plugin(tmp_path: Path) -> None:
    """Its own deck tools are under its tree's limits; the plugin's would act for it
    as a session started by hand (the hook client steps aside alike)."""
    agent = {"AGENTDECK_AGENT_ID": "a1", "AGENTDECK_RUNNER_PID": str(os.getpid())}
    # without agentdeck on PATH, a server that did not step aside says so
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    aside = _mcp_under_a_claude(env | agent)
    assert aside.returncode == 0 and "not served to agent a1" in aside.stderr

    # a `claude` the agent starts from its Bash: another parent, served as any session
    other = _mcp_under_a_claude(env | agent | {"AGENTDECK_RUNNER_PID": "1"})
    assert other.returncode == 1 and "agentdeck is not on PATH" in other.stderr
    alone = _mcp_under_a_claude(env | {"AGENTDECK_AGENT_ID": "a1"})
    assert alone.returncode == 1 and "agentdeck is not on PATH" in alone.stderr
