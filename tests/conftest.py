"""Fixtures shared by every test package: a fresh agentdeck home and settings."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentdeck.settings import Settings


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    """Settings for one test: its own home and Claude config dir, fast failure."""
    return Settings(
        home=tmp_path / "home",
        claude_config_dir=tmp_path / "claude-config",
        max_retries=1,
        stop_grace_seconds=1.0,
        command_poll_seconds=0.05,
        connect_timeout_seconds=60.0,
    )
