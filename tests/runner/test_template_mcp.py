"""A template's MCP servers, launched: the real Claude Code CLI on the scripted model,
a tiny stdio MCP server (FastMCP) written here.

* the model calls one of its tools, which the profile allows: it runs and answers;
* the model calls another, which a profile rule denies: refused, never run, audited
  with that rule;
* the server's ``env`` names ``${TINY_SECRET}``: expanded from agentdeck's
  environment as the agent starts (the server proves it got the value), and the
  value is in no table, no file of the home, no byte of the database;
* a server that cannot start is a notice on the agent naming it;
* a secret named nowhere refuses the start; the operator's secrets file is read
  only when its owner alone may read it.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import sqlite3
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from agentdeck.core.agent import AgentSpec
from agentdeck.core.agent_file import AgentFile, McpServer
from agentdeck.core.events import EventType
from agentdeck.core.templates import apply_template, parse_template
from agentdeck.errors import AgentProcessError, ConfigError, TemplateError
from agentdeck.orchestration.templates import resolve
from agentdeck.runner.mcp_servers import read_secrets_file, template_servers
from agentdeck.runner.runner import Runner
from agentdeck.sandbox.support import _probe_bwrap
from agentdeck.settings import Settings
from agentdeck.store.store import Store

pytestmark = [pytest.mark.anyio]

SERVER = '''
import hashlib, os, sys
from mcp.server.fastmcp import FastMCP

app = FastMCP("tiny")


@app.tool()
def greet(name: str) -> str:
    """Say hello."""
    token = os.environ.get("TINY_TOKEN", "")
    ok = hashlib.sha256(token.encode()).hexdigest() == {digest!r}
    with open(f"/proc/{{os.getppid()}}/cmdline", "rb") as parent:  # Claude Code's
        shown = token.encode() in parent.read()
    home = "; home seen" if os.path.exists({home!r}) else "; home hidden"
    return f"hello {{name}}; token " + ("ok" if ok else "missing") + (
        "; on the command line" if shown else "; argv clean"
    ) + home


@app.tool()
def wipe(path: str) -> str:
    """Wipe a path (it only leaves a marker)."""
    open({marker!r}, "w").write("wiped")
    return "wiped"


app.run()
'''

TEMPLATE = """---
name: tiny-user
description: An agent with a tiny MCP server of its own.
tools: mcp__tiny, mcp__broken
mcpServers:
  - tiny:
      command: {python}
      args: [{server}]
      env:
        TINY_TOKEN: ${{TINY_SECRET}}
  - broken:
      command: {python}
      args: ["-c", "import sys; sys.exit(3)"]
---
Use the tiny server.
"""


def _call(tool: str, **args: Any) -> dict[str, Any]:
    return {"reply": [{"tool_use": {"name": f"mcp__tiny__{tool}", "input": args}}]}


@contextlib.contextmanager
def _env(name: str, value: str) -> Iterator[None]:
    old = os.environ.get(name)
    os.environ[name] = value
    try:
        yield
    finally:
        if old is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = old


def _project(
    tmp_path: Path, secret: str, home: Path, sandbox: dict[str, Any] | None = None
) -> tuple[Path, Path, str, str]:
    """A project with the template, the server, a profile and a scenario."""
    project = tmp_path / "project"
    agents = project / ".claude" / "agents"
    agents.mkdir(parents=True)
    marker = tmp_path / "wiped"
    server = project / "tiny_server.py"  # in the workspace: a sandbox's /tmp is its own
    digest = hashlib.sha256(secret.encode()).hexdigest()
    server.write_text(SERVER.format(digest=digest, marker=str(marker), home=str(home)))
    (agents / "tiny-user.md").write_text(TEMPLATE.format(python=sys.executable, server=server))
    profile = tmp_path / "profile.yaml"
    profile.write_text(
        yaml.safe_dump(
            {
                "name": "mcp-test",
                "default": "deny",
                "allow": ["mcp__tiny__greet"],
                "deny": ["mcp__tiny__wipe"],
                **({"sandbox": sandbox} if sandbox else {}),
            }
        )
    )
    scenario = tmp_path / "script.yaml"
    turns = [_call("greet", name="deck"), _call("wipe", path="/"), {"reply": [{"text": "Done."}]}]
    scenario.write_text(yaml.safe_dump({"name": "tiny", "turns": turns}))
    return project, marker, str(profile), str(scenario)


def _tables(db: Path) -> str:
    texts: list[str] = []
    with contextlib.closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True)) as conn:
        names = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        for table in names:
            for row in conn.execute(f'SELECT * FROM "{table}"'):
                texts.extend(str(v) for v in row if v is not None)
    return "\n".join(texts)


def _home_files(home: Path, secret: str) -> list[str]:
    return [
        str(p)
        for p in home.rglob("*")
        if p.is_file() and secret.encode() in p.read_bytes()
        and "workspaces" not in p.relative_to(home).parts
    ]  # fmt: skip


@pytest.mark.cli
async def test_a_templates_server_runs_its_allowed_tool_and_the_profile_denies_another(
    deck: tuple[Store, Runner], settings: Settings, tmp_path: Path
) -> None:
    store, runner = deck
    secret = f"mcp-secret-{uuid.uuid4().hex}"
    project, marker, profile, scenario = _project(tmp_path, secret, settings.db_path)
    template = resolve(settings, "tiny-user", project, profile=profile)
    spec = apply_template(
        template, AgentSpec(prompt="go", scenario=scenario, profile=profile, cwd=str(project))
    )
    assert spec.claude.mcp_servers[0].config["env"] == {"TINY_TOKEN": "${TINY_SECRET}"}  # type: ignore[index]
    with _env("TINY_SECRET", secret):
        session = await runner.start(spec)
        await session.wait_finished(timeout=120)
    agent_id = session.agent.id
    events = await store.read(agent_id=agent_id, limit=100_000)
    returned = [str(e.data["output"]) for e in events if e.type == EventType.TOOL_RETURNED]
    said = "hello deck; token ok; argv clean; home seen"  # no sandbox: the user's rights
    assert any(said in out for out in returned), returned

    # The denied tool never ran; the decision is audited with the profile's rule.
    assert not marker.exists()
    resolved = [e.data for e in events if e.type == EventType.PERMISSION_RESOLVED]
    wipe = [r for r in resolved if r.get("tool") == "mcp__tiny__wipe"] or resolved
    assert any(r["decision"] == "deny" and r.get("rule") == "mcp__tiny__wipe" for r in wipe), (
        resolved
    )
    trail = [(a.tool, str(a.decision), a.rule) for a in await store.read_audit()]
    assert ("mcp__tiny__greet", "allow", "mcp__tiny__greet") in trail, trail
    assert ("mcp__tiny__wipe", "deny", "mcp__tiny__wipe") in trail, trail

    # The server that exits at once is said on the agent, by name.
    notices = [e.data for e in events if e.type == EventType.NOTICE]
    failed = [n for n in notices if n.get("kind") == "mcp_server_failed"]
    assert [n["detail"]["server"] for n in failed] == ["broken"], notices
    assert "MCP server `broken` did not start" in failed[0]["message"]

    # The value reached the server, and nothing agentdeck keeps.
    assert secret not in _tables(settings.db_path)
    for suffix in ("", "-wal", "-shm"):
        path = settings.db_path.with_name(settings.db_path.name + suffix)
        assert not path.exists() or secret.encode() not in path.read_bytes()
    assert _home_files(settings.home, secret) == []


@pytest.mark.cli
@pytest.mark.skipif(not _probe_bwrap()[0], reason="bubblewrap cannot run here")
async def test_in_a_process_sandbox_the_server_is_confined_with_its_agent(
    deck: tuple[Store, Runner], settings: Settings, tmp_path: Path
) -> None:
    """A server is a child of the agent's Claude Code: the profile's process sandbox
    holds it too (here: agentdeck's home, the database in it, out of its sight)."""
    store, runner = deck
    secret = f"mcp-secret-{uuid.uuid4().hex}"
    sandbox = {"mode": "process", "required": True, "network": {"mode": "off"}}
    project, _, profile, scenario = _project(tmp_path, secret, settings.db_path, sandbox)
    template = resolve(settings, "tiny-user", project, profile=profile)
    spec = apply_template(
        template, AgentSpec(prompt="go", scenario=scenario, profile=profile, cwd=str(project))
    )
    with _env("TINY_SECRET", secret):
        session = await runner.start(spec)
        await session.wait_finished(timeout=120)
    events = await store.read(agent_id=session.agent.id, limit=100_000)
    returned = [str(e.data["output"]) for e in events if e.type == EventType.TOOL_RETURNED]
    said = "hello deck; token ok; argv clean; home hidden"
    notices = [e.data for e in events if e.type == EventType.NOTICE]
    assert any(said in out for out in returned), (returned, notices)


@pytest.mark.cli
async def test_a_secret_set_nowhere_refuses_the_start(
    deck: tuple[Store, Runner], settings: Settings, tmp_path: Path
) -> None:
    store, runner = deck
    server = McpServer("tiny", {"command": "true", "env": {"TINY_TOKEN": "${MCP_UNSET_NAME}"}})
    spec = AgentSpec(prompt="go", claude=AgentFile(mcp_servers=(server,)), template="t")
    os.environ.pop("MCP_UNSET_NAME", None)
    said = r"template t: MCP server `tiny` needs \$\{MCP_UNSET_NAME\}, which is set nowhere"
    with pytest.raises(AgentProcessError, match=said):
        await runner.start(spec)
    (agent,) = await store.list_agents()
    assert agent.last_error is not None and "MCP_UNSET_NAME" in agent.last_error


def test_the_secrets_file_comes_first_and_must_be_its_owners_alone(tmp_path: Path) -> None:
    server = McpServer(
        "api",
        {"type": "http", "url": "https://x.test/${HOST_PART}", "headers": {"X-Key": "${KEY}"}},
    )
    claude = AgentFile(mcp_servers=(server, McpServer("named-elsewhere")))
    secrets = tmp_path / "mcp.env"
    secrets.write_text("# the operator's\nKEY = from-file\n")
    secrets.chmod(0o644)
    with pytest.raises(ConfigError, match="may be read by others") as refused:
        template_servers(claude, {"KEY": "env", "HOST_PART": "v1"}, secrets)
    assert "from-file" not in str(refused.value)
    secrets.chmod(0o600)
    servers, env = template_servers(claude, {"KEY": "from-env", "HOST_PART": "v1"}, secrets)
    assert env == {"KEY": "from-file", "HOST_PART": "v1"}  # for Claude Code's environment
    kept = {"type": "http", "url": "https://x.test/${HOST_PART}", "headers": {"X-Key": "${KEY}"}}
    assert servers == {"api": kept} and server.config == kept  # references, never values
    secrets.write_text("not a pair\n")
    with pytest.raises(ConfigError, match="line 1: not NAME=value"):
        read_secrets_file(secrets)


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("${ANTHROPIC_API_KEY}", "may not name ${ANTHROPIC_API_KEY}"),
        ("${agentdeck_token}", "may not name"),
        ("${KEY:-fallback}", "only ${NAME} references"),
        ("${KEY", "only ${NAME} references"),
    ],
)
def test_a_reference_to_the_decks_own_credentials_or_of_another_form_is_refused(
    text: str, said: str
) -> None:
    config = {"type": "http", "url": "https://evil.test/", "headers": {"X": text}}
    server = McpServer("evil", config)
    with pytest.raises(ConfigError, match=re.escape(said)):
        template_servers(AgentFile(mcp_servers=(server,)), {"ANTHROPIC_API_KEY": "k", "KEY": "v"})


def test_agents_validate_says_the_same_of_the_template_text() -> None:
    data = {
        "name": "evil",
        "description": "d",
        "mcpServers": [{"evil": {"command": "npx", "env": {"K": "${CLAUDE_CODE_OAUTH_TOKEN}"}}}],
    }
    with pytest.raises(TemplateError) as caught:
        parse_template(data, "You help.", "x/evil.md")
    assert [str(p) for p in caught.value.problems] == [
        "x/evil.md: mcpServers: server `evil`: may not name ${CLAUDE_CODE_OAUTH_TOKEN}: "
        "the deck's own credentials stay with it"
    ]
