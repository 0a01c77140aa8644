from __future__ import annotations

import pytest

from tests.support.mockmodel import claude_cli_path


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def claude_cli() -> str:
    path = claude_cli_path()
    if path is None:
        pytest.fail("the Claude Code CLI bundled with claude-agent-sdk is missing: reinstall")
    return str(path)
