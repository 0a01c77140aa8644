"""The deck opened for one command imports neither Claude Code's SDK nor mcp.

A CLI command without a daemon (``agentdeck users list``, ``diff``...) opens the
whole deck in its process (``compose.open_deck(embedded=True)``); the SDK, and all
of mcp with it (~1 s), is needed only once a Claude Code process is started. Each
case runs in a fresh interpreter: this one has imported both long since.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

HEADER = """
import asyncio, sys
from pathlib import Path
from agentdeck.settings import Settings

base = Path(sys.argv[1])
settings = Settings(
    home=base / "home", claude_config_dir=base / "claude-config", port=0, warm_pool=0,
    max_retries=1, stop_grace_seconds=1.0, connect_timeout_seconds=60.0,
)
SDK = ("claude_agent_sdk", "mcp")

def loaded():
    return sorted(m for m in sys.modules if m.split(".")[0] in SDK)
"""


def run(code: str, tmp_path: Path) -> str:
    done = subprocess.run(
        [sys.executable, "-c", HEADER + code, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout.strip()


def test_importing_the_composition_root_imports_neither(tmp_path: Path) -> None:
    code = """
import agentdeck.daemon.compose
import agentdeck.cli.decks
print(loaded())
"""
    assert run(code, tmp_path) == "[]"


def test_a_deck_opened_read_and_closed_imports_neither_and_then_starts_an_agent(
    tmp_path: Path,
) -> None:
    code = """
from agentdeck.core.agent import AgentSpec, AgentState
from agentdeck.daemon.compose import open_deck

async def read() -> None:
    deck = await open_deck(settings, embedded=True)
    try:
        assert await deck.list_agents() == []
        assert [u.name for u in await deck.users()] == ["admin"]
    finally:
        await deck.close()

async def start() -> str:
    deck = await open_deck(settings, embedded=True)
    try:
        agent = await deck.create_agent(AgentSpec(prompt="hello", name="lazy", scenario="chat"))
        async with asyncio.timeout(120):  # woken by each of its events, not by a clock
            async for _batch in deck.follow(after=0, agent_id=agent.id, heartbeat=1.0):
                agent = await deck.get_agent(agent.id)
                if agent.state is AgentState.DONE:  # one command's deck: one turn
                    break
                assert agent.state in (AgentState.STARTING, AgentState.RUNNING), agent
        return str(agent.extra["last_result"])
    finally:
        await deck.close()

asyncio.run(read())
print("after a read:", loaded())
said = asyncio.run(start())
print("the agent said:", said)
print("after a start:", "claude_agent_sdk" in sys.modules and "mcp" in sys.modules)
"""
    assert run(code, tmp_path).splitlines() == [
        "after a read: []",
        "the agent said: Hello! I am the scripted model. Ask me anything.",
        "after a start: True",
    ]


def test_the_daemon_s_deck_imports_the_sdk_as_it_opens(tmp_path: Path) -> None:
    # Not on its loop when its first agent starts, while it serves others (~1 s).
    code = """
from agentdeck.daemon.compose import open_deck

async def main() -> None:
    deck = await open_deck(settings)
    try:
        print("claude_agent_sdk" in sys.modules and "mcp" in sys.modules)
    finally:
        await deck.close()

asyncio.run(main())
"""
    assert run(code, tmp_path) == "True"
