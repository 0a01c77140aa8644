"""``agentdeck mcp``: a real subprocess on a seeded home, spoken to with the
``mcp`` client library over stdio, as Claude Code would."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path

import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.types import CallToolResult, TextContent

from agentdeck.memory.mcp_server import MAX_GET, index_line, record_text
from agentdeck.settings import Settings
from tests.support.deckcli import deck_env
from tests.support.memory_records import Seeded, seed_home

pytestmark = pytest.mark.anyio

CALL_TIMEOUT = timedelta(seconds=30)  # per request: a busy 2-core box


@pytest.fixture
async def seeded(settings: Settings, tmp_path: Path) -> Seeded:
    return await seed_home(settings, tmp_path / "work")


@contextlib.asynccontextmanager
async def connected(tmp_path: Path, cwd: Path | None = None) -> AsyncIterator[ClientSession]:
    server = StdioServerParameters(
        command=sys.executable,
        args=["-m", "agentdeck", "mcp"],
        env=deck_env(tmp_path),
        cwd=cwd,
    )
    with (tmp_path / "mcp-stderr.log").open("w") as errlog:
        async with (
            stdio_client(server, errlog=errlog) as (read, write),
            ClientSession(read, write, read_timeout_seconds=CALL_TIMEOUT) as session,
        ):
            await session.initialize()
            yield session


def text_of(result: CallToolResult) -> str:
    assert not result.isError, result
    (block,) = result.content
    assert isinstance(block, TextContent)
    return block.text


async def test_tools_search_then_get(seeded: Seeded, tmp_path: Path) -> None:
    async with connected(tmp_path) as session:
        tools = {t.name: t for t in (await session.list_tools()).tools}
        assert set(tools) == {"memory_search", "memory_get"}
        search_args = set(tools["memory_search"].inputSchema["properties"])
        assert search_args == {"query", "project", "limit"}
        assert tools["memory_search"].inputSchema["required"] == ["query"]
        assert tools["memory_get"].inputSchema["required"] == ["ids"]

        found = text_of(await session.call_tool("memory_search", {"query": "flaky"}))
        lines = found.splitlines()
        assert lines[0].startswith("2 matches for 'flaky', best first")
        assert {line.split()[0] for line in lines[1:]} == {seeded.flaky.id, seeded.fixed.id}
        flaky_line = next(line for line in lines if line.startswith(seeded.flaky.id))
        assert flaky_line.startswith(f"{seeded.flaky.id} observation 2h ago Bash(pytest -x")
        assert "[flaky]" in flaky_line
        assert seeded.flaky.output_excerpt not in found  # an index, not the records

        got = text_of(
            await session.call_tool("memory_get", {"ids": [seeded.flaky.id, seeded.fixed.id]})
        )
        assert seeded.flaky.output_excerpt in got
        assert seeded.fixed.final_message in got
        first, second = got.split("\n\n---\n\n")
        assert first == record_text(seeded.flaky)  # what `agentdeck memory show` prints
        assert second == record_text(seeded.fixed)


async def test_search_is_compact(seeded: Seeded, tmp_path: Path) -> None:
    async with connected(tmp_path) as session:
        found = text_of(await session.call_tool("memory_search", {"query": "flaky", "limit": 1}))
    _, line = found.splitlines()
    assert len(line) <= 300
    assert line.split()[0] in {seeded.flaky.id, seeded.fixed.id}


async def test_project_filter_resolves_against_the_servers_directory(
    seeded: Seeded, tmp_path: Path
) -> None:
    async with connected(tmp_path, cwd=seeded.project_a) as session:
        here = text_of(await session.call_tool("memory_search", {"query": "calc", "project": "."}))
        there = text_of(
            await session.call_tool("memory_search", {"query": "calc", "project": "../proj-b"})
        )
    assert here == "No memory matches 'calc'."
    assert there.splitlines()[1].split()[0] == seeded.calc.id


async def test_unknown_ids_are_reported_not_raised(seeded: Seeded, tmp_path: Path) -> None:
    async with connected(tmp_path) as session:
        got = text_of(
            await session.call_tool("memory_get", {"ids": ["obnope", seeded.calc.id, "zz"]})
        )
        none = text_of(await session.call_tool("memory_get", {"ids": []}))
        many = text_of(
            await session.call_tool("memory_get", {"ids": [f"ob{i:012x}" for i in range(30)]})
        )
        # The server is still there after all that.
        again = text_of(await session.call_tool("memory_search", {"query": "calc"}))
    assert seeded.calc.output_excerpt in got
    assert got.endswith("unknown ids (no such memory record): obnope, zz")
    assert none == "No ids given."
    assert f"Only the first {MAX_GET} ids were read" in many
    assert seeded.calc.id in again


async def test_bad_arguments_are_a_tool_error(seeded: Seeded, tmp_path: Path) -> None:
    async with connected(tmp_path) as session:
        result = await session.call_tool("memory_search", {"limit": 3})
        assert result.isError
        still = text_of(await session.call_tool("memory_search", {"query": "flaky"}))
    assert seeded.fixed.id in still


async def test_logs_go_to_stderr_not_stdout(seeded: Seeded, tmp_path: Path) -> None:
    # A stray line on stdout would break the protocol: the session above would fail.
    env = deck_env(tmp_path, AGENTDECK_LOG_LEVEL="debug")
    server = StdioServerParameters(command=sys.executable, args=["-m", "agentdeck", "mcp"], env=env)
    log = tmp_path / "mcp-debug.log"
    with log.open("w") as errlog:
        async with (
            stdio_client(server, errlog=errlog) as (read, write),
            ClientSession(read, write, read_timeout_seconds=CALL_TIMEOUT) as session,
        ):
            await session.initialize()
            found = text_of(await session.call_tool("memory_search", {"query": "calc"}))
    assert seeded.calc.id in found
    assert "memory_search 'calc': 1 hits" in log.read_text()


def test_index_line_is_one_line() -> None:
    from agentdeck.core.memory import MemoryHit, MemoryKind

    hit = MemoryHit(
        id="ob1",
        kind=MemoryKind.OBSERVATION,
        project="/p",
        session_id="s",
        ts=0.0,
        title="Bash(echo\nhi)",
        snippet="a\n\nb " + "x" * 500,
        score=1.0,
    )
    line = index_line(hit, now=90.0)
    assert "\n" not in line
    assert line.startswith("ob1 observation 1m ago Bash(echo hi) — a b x")
    assert len(line) < 300
