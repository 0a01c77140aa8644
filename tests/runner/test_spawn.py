"""The one spawn pipeline (``runner.spawn``) that an embedded run's early start
(``cli.early``) and the warm pool (``Runner._prestart``) both spawn Claude Code
through: a workspace reserved for the agent, the process spawned in it, nothing
left behind when a step fails."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import psutil
import pytest
from claude_agent_sdk.types import ClaudeAgentOptions

from agentdeck.core.agent import AgentSpec
from agentdeck.core.ids import new_agent_id
from agentdeck.core.sandbox import SandboxSpec
from agentdeck.errors import CLINotFound
from agentdeck.runner import procs
from agentdeck.runner.options import build_options
from agentdeck.runner.spawn import spawn_ahead
from agentdeck.runner.warm import StderrSink, template_of
from agentdeck.settings import Settings
from tests.conftest import make_settings
from tests.daemon.test_stop_while_starting import silent_claude

pytestmark = [pytest.mark.anyio, pytest.mark.cli]

TEMPLATE = template_of(AgentSpec(prompt="hi"))


def options(
    settings: Settings, agent_id: str, seen: list[Path]
) -> Callable[[Path], ClaudeAgentOptions]:
    def options_for(workspace: Path) -> ClaudeAgentOptions:
        seen.append(workspace)
        return build_options(
            TEMPLATE,
            settings=settings,
            cwd=workspace,
            can_use_tool=None,
            stderr=StderrSink(),
            agent_id=agent_id,
        )

    return options_for


async def test_it_spawns_in_a_workspace_reserved_for_the_agent(tmp_path: Path) -> None:
    settings = make_settings(tmp_path, claude_cli_path=silent_claude(tmp_path))
    settings.ensure_home()
    agent_id, seen = new_agent_id(), list[Path]()
    options_for = options(settings, agent_id, seen)
    warm = await spawn_ahead(
        agent_id,
        TEMPLATE,
        settings=settings,
        sandbox=SandboxSpec(),
        base_url=None,
        options_for=options_for,
    )
    tree = [p.pid for p in procs.process_tree(warm.pid or 0)]
    try:
        assert seen == [settings.workspaces_dir / agent_id] == [warm.cwd]
        assert warm.cwd.is_dir() and list(warm.cwd.iterdir()) == []
        assert procs.is_running(warm.pid)
        # What a cold start with the same options would spawn: an agent adopts it.
        assert warm.fits(options_for(warm.cwd))
        assert warm.sandboxing is None  # no confinement of the whole process to hand over
    finally:
        await warm.stop()
    assert procs.wait_gone(tree, 10) == []
    assert list(settings.workspaces_dir.iterdir()) == []


async def test_a_spawn_that_fails_leaves_no_workspace(tmp_path: Path) -> None:
    settings = make_settings(tmp_path, claude_cli_path=tmp_path / "no-such-claude")
    settings.ensure_home()
    agent_id, seen = new_agent_id(), list[Path]()
    before = {p.pid for p in psutil.Process().children(recursive=True)}
    with pytest.raises(CLINotFound):
        await spawn_ahead(
            agent_id,
            TEMPLATE,
            settings=settings,
            sandbox=SandboxSpec(),
            base_url=None,
            options_for=options(settings, agent_id, seen),
        )
    assert seen == [settings.workspaces_dir / agent_id]  # it got that far, and no further
    assert list(settings.workspaces_dir.iterdir()) == []
    assert {p.pid for p in psutil.Process().children(recursive=True)} <= before
