"""Fixtures shared by every test package: a fresh agentdeck home and settings."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from agentdeck.daemon.compose import build_runner
from agentdeck.runner.runner import Runner
from agentdeck.settings import Settings
from agentdeck.store.store import Store

# Shared fixtures that live in support modules.
pytest_plugins = ["tests.support.daemonproc", "tests.support.pgcluster", "tests.support.tmux"]

# Modules of a minute or more (the contract fuzzer, a million-event dashboard, the
# hook fuzzers, the daemon's lifecycle): run first, so that on several workers
# (`make test`) none of them is handed out last and runs alone at the end.
SLOW_FIRST = (
    "tests/web/test_api_contract.py",
    "tests/web/test_dashboard_scale.py",
    "tests/hooks/test_bridge_fuzz.py",
    "tests/hooks/test_client_fuzz.py",
    "tests/daemon/test_lifecycle.py",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    rank = {path: i for i, path in enumerate(SLOW_FIRST)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::")[0], len(rank)))


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def make_settings(base: Path, **extra: Any) -> Settings:
    """Settings for tests: a home and Claude config dir under ``base``, fast failure,
    and any free port (suites and helpers running at once never clash on 8765)."""
    extra.setdefault("port", 0)
    extra.setdefault("warm_pool", 0)  # no extra Claude Codes unless a test asks
    return Settings(
        home=base / "home",
        claude_config_dir=base / "claude-config",
        max_retries=1,
        stop_grace_seconds=1.0,
        command_poll_seconds=0.05,
        connect_timeout_seconds=60.0,
        **extra,
    )


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    """Settings for one test: its own home and Claude config dir, fast failure."""
    return make_settings(tmp_path)


@pytest.fixture
async def deck(settings: Settings) -> AsyncIterator[tuple[Store, Runner]]:
    """A store and a runner on a fresh home; every agent is stopped afterwards."""
    settings.ensure_home()
    store = Store.open(settings.db_path)
    runner = build_runner(store, settings)
    try:
        yield store, runner
    finally:
        try:
            await runner.shutdown()
        finally:
            await store.close()
