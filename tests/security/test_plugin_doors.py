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


# -- the deck by URL and token (the `url` and `token` options) ------------------------

TOKEN = "adk_" + "s" * 40


def _by_url(tmp_path: Path, url: str, token: str = TOKEN, **extra: str) -> tuple[int, str, str]:
    """The hook client in-process for a PreToolUse, with ``url`` and ``token``."""
    from agentdeck.hooks import hookclient_impl

    payload = json.dumps({"hook_event_name": "PreToolUse", "session_id": "s", "cwd": "/"})
    environ = {"AGENTDECK_URL": url, "AGENTDECK_TOKEN": token, **extra}
    return hookclient_impl.run(["client.py", str(tmp_path)], payload.encode(), environ)


@pytest.mark.parametrize(
    "url",
    [
        "file:///etc/passwd",
        "ftp://127.0.0.1/",
        "127.0.0.1:8080",
        "https://user:secret@deck.example",
        "https://deck.example/x?y=1",
        "https://deck.example/#x",
        "https://deck.example;touch /tmp/x",
        "https://$(touch /tmp/x)",
        "https://deck`touch /tmp/x`.example",
        "https://deck.example\r\nX-Injected: 1",
        "https://deck.example /x",
        "https://deck.example:99999",
        "https://deck.example:",
        "https://",
        "https://[::1",
        "https://deck.example/../etc",
        "https://deck.example//x",
    ],
)
def test_a_url_that_is_not_http_s_host_port_path_is_refused_unsent(
    tmp_path: Path, url: str
) -> None:
    code, out, err = _by_url(tmp_path, url)
    assert (code, out) == (0, "")  # Claude Code's own rules decide
    assert err == "agentdeck hook: AGENTDECK_URL is not a URL of the form " \
        "http(s)://HOST[:PORT][/PATH]\n"  # fmt: skip


@pytest.mark.parametrize(
    "url",
    [
        "http://deck.example",
        "http://10.0.0.7:8765",
        "http://127.0.0.1.evil.example",
        "http://localhost.evil.example",
        "http://[::2]:8765",
        "http://0.0.0.0:8765",
    ],
)
def test_plain_http_off_this_machine_is_refused_unless_the_user_says_so(
    tmp_path: Path, url: str
) -> None:
    from agentdeck.hooks import hookclient_http

    code, out, err = _by_url(tmp_path, url)
    assert (code, out) == (0, "")
    assert "is plain http to" in err and "AGENTDECK_ALLOW_INSECURE_URL=1" in err
    assert TOKEN not in err
    allowed = {"AGENTDECK_URL": url, "AGENTDECK_TOKEN": TOKEN, "AGENTDECK_ALLOW_INSECURE_URL": "1"}
    found = hookclient_http.configured(allowed)
    assert found is not None and found[0][0] == "http"
    for loopback in ("http://127.0.0.1:8765", "http://localhost:8765/deck", "http://[::1]:1"):
        assert hookclient_http.configured({"AGENTDECK_URL": loopback, "AGENTDECK_TOKEN": TOKEN})


@pytest.mark.parametrize(
    "token",
    [
        "adk_abc\r\nX-Injected: 1",
        "adk_abc\nHost: evil",
        "adk_abc\rX",
        "adk abc",
        "adk_\x00abc",
        "adk_é",
        "a" * 5000,
    ],
)
def test_a_token_that_would_break_its_header_is_refused_and_never_echoed(
    tmp_path: Path, token: str
) -> None:
    code, out, err = _by_url(tmp_path, "https://deck.example", token)
    assert (code, out) == (0, "")
    assert err == (
        "agentdeck hook: AGENTDECK_TOKEN holds characters a token cannot have "
        "(only visible ASCII)\n"
    )


def test_a_url_without_a_token_is_refused_and_a_refusal_still_denies_under_deny(
    tmp_path: Path,
) -> None:
    code, out, err = _by_url(tmp_path, "https://deck.example", "")
    assert (code, out) == (0, "") and "no AGENTDECK_TOKEN" in err
    # A profile that denies when the deck is unreachable denies here too: fail closed.
    (tmp_path / "hooks.json").write_text(json.dumps({"fallbacks": {"PreToolUse": "deny"}}))
    code, out, err = _by_url(tmp_path, "file:///etc/passwd")
    said = json.loads(out)["hookSpecificOutput"]
    assert said["permissionDecision"] == "deny"
    assert "AGENTDECK_URL is not a URL" in said["permissionDecisionReason"]


def test_a_hostile_url_or_token_option_is_never_run_by_the_launchers(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    payload = json.dumps({"hook_event_name": "SessionStart", "session_id": "s", "cwd": "/"})
    for value in _hostile(marker):
        for option in ("CLAUDE_PLUGIN_OPTION_URL", "CLAUDE_PLUGIN_OPTION_TOKEN"):
            env = claude_env(tmp_path, CLAUDE_PLUGIN_DATA=str(tmp_path / "data"))
            env["CLAUDE_PLUGIN_OPTION_URL"] = "https://deck.example"
            env[option] = "https://x" + value if option.endswith("URL") else value
            hook = launch("agentdeck-hook", env, payload)
            assert hook.returncode == 0 and hook.stdout == "", (value, hook.stderr)
            assert "agentdeck hook: AGENTDECK_" in hook.stderr
            assert value not in hook.stderr
            assert _ran(marker) == [], (option, value)
