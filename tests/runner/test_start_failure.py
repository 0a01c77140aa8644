"""A Claude Code that cannot start says why: the agent's error and the API's 502
carry the last lines it wrote on stderr, scrubbed of secrets, instead of the SDK's
"Check stderr output for details"."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentdeck.core.agent import AgentSpec, AgentState
from agentdeck.daemon.compose import build_runner
from agentdeck.errors import AgentProcessError
from agentdeck.store import Store
from tests.conftest import make_settings

pytestmark = pytest.mark.anyio

KEY = "sk-ant-api03-" + "Zq9" * 30


async def test_a_claude_that_cannot_start_says_why_without_its_secrets(tmp_path: Path) -> None:
    broken = tmp_path / "claude"
    broken.write_text(
        "#!/bin/sh\n"
        f"echo 'loading settings with ANTHROPIC_API_KEY={KEY}' >&2\n"
        "echo 'error: settings.json: unexpected token at line 3' >&2\n"
        "exit 1\n"
    )
    broken.chmod(0o755)
    settings = make_settings(tmp_path, claude_cli_path=broken)
    settings.ensure_home()
    async with Store.open(settings.db_path) as store:
        runner = build_runner(store, settings)
        try:
            with pytest.raises(AgentProcessError) as failed:
                await runner.start(AgentSpec(prompt="hi", name="broken"))
        finally:
            await runner.shutdown()
        message = failed.value.message
        assert message.startswith("could not start Claude Code: ")
        assert "Claude Code said: " in message
        assert "unexpected token at line 3" in message
        assert KEY not in message and "[REDACTED" in message
        assert "Check stderr output" not in message
        (agent,) = await store.list_agents()
        assert agent.state is AgentState.ERROR and agent.last_error == message
