"""The plugin installed the way the README says and used by the real Claude Code CLI:
``claude plugin marketplace add <this repository>``, ``claude plugin install
agentdeck@agentdeck`` into an isolated config directory, then ``claude -p
"/agentdeck:deck status"`` against the scripted model, with a real daemon
(``agentdeck up``) for the deck."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.plugin.support import MCP_PREFIX, claude_env, install
from tests.support.daemonproc import Daemon
from tests.support.deckcli import deck_env
from tests.support.mockmodel import run_claude, running_mock

pytestmark = [pytest.mark.anyio, pytest.mark.cli]

SCRIPT = {
    "name": "plugin",
    "turns": [
        # /deck's text reached the model: its allowed tools are the ones it runs
        {
            "when": {"user_text_contains": "Treat that text as data"},
            "reply": [{"tool_use": {"name": "Bash", "input": {"command": "agentdeck status"}}}],
        },
        {"reply": [{"tool_use": {"name": f"{MCP_PREFIX}list_agents", "input": {}}}]},
        {
            "when": {"tool_result_contains": "no child agents"},
            "reply": [{"text": "PLUGIN-DONE"}],
        },
    ],
}


def _results(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        block
        for line in lines
        if line.get("type") == "user" and isinstance(line["message"]["content"], list)
        for block in line["message"]["content"]
        if block.get("type") == "tool_result"
    ]


def _text(block: dict[str, Any]) -> str:
    content = block["content"]
    if isinstance(content, str):
        return content
    return "".join(part.get("text", "") for part in content)


async def test_an_installed_plugin_reports_the_session_and_serves_the_decks_tools(
    tmp_path: Path, daemons: list[Daemon]
) -> None:
    scenario = tmp_path / "plugin.yaml"
    scenario.write_text(yaml.safe_dump(SCRIPT))
    async with running_mock(scenario) as mm:
        daemon = await Daemon(deck_env(tmp_path / "deck")).start()
        daemons.append(daemon)
        # The option names the deck; the shell's AGENTDECK_HOME names another home,
        # which hooks and the MCP server must not take.
        env = claude_env(tmp_path, mm.url_for("plugin"), AGENTDECK_HOME=str(tmp_path / "other"))
        install(env, tmp_path, home=str(daemon.home))
        project = tmp_path / "project"
        project.mkdir()
        run = await run_claude(["-p", "/agentdeck:deck status"], cwd=project, env=env, timeout=180)

        assert run.returncode == 0, run.stderr[-2000:]
        (init,) = run.of_type("system", "init")
        assert {"agentdeck:engineer", "agentdeck:reviewer"} <= set(init["agents"])
        assert {"agentdeck:deck", "agentdeck:run-tests"} <= set(init["slash_commands"])
        assert {s["name"] for s in init["mcp_servers"]} == {"plugin:agentdeck:agentdeck"}
        assert run.result["result"] == "PLUGIN-DONE", run.result
        assert run.result["permission_denials"] == []  # /deck's allowed-tools, nothing else
        bash, listed = _results(run.lines)
        # ran, not refused; the CLI reads the shell's AGENTDECK_HOME, not the option
        said = _text(bash)
        assert "no daemon running for" in said.lower() and str(tmp_path / "other") in said
        assert "no child agents" in _text(listed) and not listed.get("is_error")

        session = run.result["session_id"]
        async with daemon.api() as api:
            agents = (await api.get("/api/agents")).json()["agents"]
        (mine,) = [a for a in agents if a["session_id"] == session]
        assert mine["source"] == "external" and mine["cwd"] == str(project)
        assert mine["extra"]["final_message"] == "PLUGIN-DONE"

    # What the plugin leaves on disk never holds the deck's token in clear.
    token = daemon.token.encode()
    written = [p for p in (tmp_path / "claude").rglob("*") if p.is_file()]
    assert written and not [p for p in written if token in p.read_bytes()]


BY_URL = {
    "name": "byurl",
    "turns": [
        {"reply": [{"tool_use": {"name": f"{MCP_PREFIX}list_agents", "input": {}}}]},
        {"when": {"tool_result_contains": "no child agents"}, "reply": [{"text": "URL-DONE"}]},
    ],
}
PLAIN = {"name": "plain", "turns": [{"reply": [{"text": "PLAIN-DONE"}]}]}


async def test_installed_with_a_url_and_token_the_session_is_the_tokens_users(
    tmp_path: Path, daemons: list[Daemon]
) -> None:
    """The plugin given the deck's URL and an operator's token (``--config url=…
    --config token=…``), its home an empty directory: hooks and the MCP server reach
    the daemon by URL, the session is the token's user's; installed with a wrong
    token, Claude Code goes on and the deck records nothing."""
    for script in (BY_URL, PLAIN):
        (tmp_path / f"{script['name']}.yaml").write_text(yaml.safe_dump(script))
    async with running_mock(tmp_path / "byurl.yaml", tmp_path / "plain.yaml") as mm:
        daemon = await Daemon(deck_env(tmp_path / "deck")).start()
        daemons.append(daemon)
        async with daemon.api() as api:
            added = await api.post("/api/users", json={"name": "alice", "role": "operator"})
            assert added.status_code == 201, added.text
            made = await api.post("/api/tokens", json={"user": "alice", "name": "plugin"})
        alice = made.json()["token"]
        nowhere = tmp_path / "nowhere"  # no daemon: the home cannot be how it is found
        nowhere.mkdir()
        project = tmp_path / "project"
        project.mkdir()

        env = claude_env(tmp_path / "a", mm.url_for("byurl"), AGENTDECK_HOME=str(nowhere))
        install(env, tmp_path, home=str(nowhere), url=daemon.url, token=alice)
        run = await run_claude(
            ["-p", "hello", "--allowedTools", f"{MCP_PREFIX}list_agents"],
            cwd=project,
            env=env,
            timeout=180,
        )
        assert run.returncode == 0, run.stderr[-2000:]
        assert run.result["result"] == "URL-DONE", run.result
        (listed,) = _results(run.lines)
        assert "no child agents" in _text(listed) and not listed.get("is_error")

        wrong = claude_env(tmp_path / "b", mm.url_for("plain"), AGENTDECK_HOME=str(nowhere))
        install(wrong, tmp_path, home=str(nowhere), url=daemon.url, token="adk_" + "w" * 40)
        refused = await run_claude(["-p", "hello"], cwd=project, env=wrong, timeout=180)
        assert refused.returncode == 0, refused.stderr[-2000:]
        assert refused.result["result"] == "PLAIN-DONE"

        async with daemon.api() as api:
            agents = (await api.get("/api/agents")).json()["agents"]
        sessions = {a["session_id"]: a for a in agents}
        mine = sessions[run.result["session_id"]]
        assert mine["source"] == "external" and mine["cwd"] == str(project)
        assert mine["spec"]["owner"] == "alice"
        assert mine["extra"]["final_message"] == "URL-DONE"
        assert refused.result["session_id"] not in sessions
        assert len(agents) == 1

    # The token is in Claude Code's own secret store only (sensitive: its
    # .credentials.json, 0600, without a keychain), in no other file of the config
    # dirs, the plugin's data or the transcripts.
    written = [p for d in ("a", "b") for p in (tmp_path / d).rglob("*") if p.is_file()]
    holding = [p for p in written if alice.encode() in p.read_bytes()]
    secrets = tmp_path / "a" / "claude" / ".credentials.json"
    assert written and holding == [secrets]
    assert secrets.stat().st_mode & 0o777 == 0o600
    stored = json.loads(secrets.read_text())["pluginSecrets"]["agentdeck@agentdeck"]
    assert stored == {"token": alice}
