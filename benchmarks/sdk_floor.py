"""The floor under an embedded ``agentdeck run``: the same scripted run through the
official SDK alone, in a fresh interpreter, with nothing of agentdeck's.

    python benchmarks/sdk_floor.py [--governed] PROMPT

Run by ``overhead.py`` (variants ``sdk`` and ``sdk-governed``) in the bare CLI's
environment (``ANTHROPIC_BASE_URL`` pointing at its scripted model), in a new empty
working directory.

- ``sdk``: ``ClaudeSDKClient`` as a plain SDK user writes it, ``acceptEdits`` as
  the bare CLI runs.
- ``--governed``: what agentdeck cannot do without before the prompt goes out, and
  nothing else, started as agentdeck starts it: Claude Code spawned first, from
  the SDK's options and transport alone (the package's ``__init__`` put off as
  ``agentdeck.runner.sdk_private`` does, the only module of ours used here); while
  it boots, the rest of the SDK and the libraries of agentdeck's settings
  (pydantic-settings) and store (SQLAlchemy, a table created in a SQLite file);
  then a permission callback, the hooks agentdeck registers (all allowing at once;
  each call is printed) and an in-process MCP server with one tool. No policy,
  sandbox, checkpoints, memory or event log: anything agentdeck does costs at
  least this.

Exits 0 once the result is in and Claude Code is gone, without the interpreter's
teardown (as agentdeck's run ends).
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any


def main(argv: list[str]) -> int:
    governed = "--governed" in argv
    prompt = next(a for a in argv if a != "--governed")
    calls: list[str] = []  # the callbacks' calls, printed: the run was governed
    run = _governed(prompt, calls) if governed else _plain(prompt)
    ok = asyncio.run(run)
    print("\n".join(calls))
    sys.stdout.flush()
    os._exit(0 if ok else 1)


async def _plain(prompt: str) -> bool:
    from claude_agent_sdk import ClaudeAgentOptions, ClaudeSDKClient, ResultMessage

    options = ClaudeAgentOptions(cwd=Path.cwd(), permission_mode="acceptEdits")
    async with ClaudeSDKClient(options) as client:
        await client.query(prompt)
        async for message in client.receive_response():
            if isinstance(message, ResultMessage):
                return not message.is_error
    return False


async def _no_input() -> AsyncIterator[dict[str, Any]]:
    return
    yield {}


async def _governed(prompt: str, calls: list[str]) -> bool:
    from agentdeck.runner import sdk_private

    sdk_private.defer()
    from claude_agent_sdk._internal.transport.subprocess_cli import SubprocessCLITransport
    from claude_agent_sdk.types import (
        ClaudeAgentOptions,
        HookContext,
        HookEvent,
        HookInput,
        HookJSONOutput,
        PermissionResultAllow,
        ToolPermissionContext,
        _configure_can_use_tool,
    )

    async def allow(
        tool: str, _input: dict[str, Any], _ctx: ToolPermissionContext
    ) -> PermissionResultAllow:
        calls.append(f"permission {tool}")
        return PermissionResultAllow()

    # What the command line says (the in-process server by its name): spawned now.
    named: Any = {"type": "sdk", "name": "deck"}  # its instance comes with initialize
    spawn_options = ClaudeAgentOptions(
        cwd=Path.cwd(), can_use_tool=allow, mcp_servers={"deck": named}
    )
    transport = SubprocessCLITransport(
        prompt=_no_input(), options=_configure_can_use_tool(spawn_options)
    )
    await transport.connect()

    sdk_private.finish()
    import pydantic_settings
    import sqlalchemy as sa
    from claude_agent_sdk import (
        ClaudeSDKClient,
        HookMatcher,
        ResultMessage,
        create_sdk_mcp_server,
        tool,
    )

    class Settings(pydantic_settings.BaseSettings):
        model_config = pydantic_settings.SettingsConfigDict(env_prefix="FLOOR_")
        home: str = str(Path.cwd())

    engine = sa.create_engine(f"sqlite:///{Settings().home}/floor.db")
    table = sa.Table("events", sa.MetaData(), sa.Column("id", sa.Integer, primary_key=True))
    table.metadata.create_all(engine)

    async def hook(given: HookInput, _id: str | None, _ctx: HookContext) -> HookJSONOutput:
        calls.append(f"hook {given['hook_event_name']}")
        return {}

    @tool("note", "Take a note.", {"text": str})
    async def note(args: dict[str, Any]) -> dict[str, Any]:
        return {"content": [{"type": "text", "text": "noted"}]}

    hooked: tuple[HookEvent, ...] = ("PreToolUse", "PostToolUse", "UserPromptSubmit", "Stop")
    options = ClaudeAgentOptions(
        cwd=Path.cwd(),
        can_use_tool=allow,
        hooks={event: [HookMatcher(matcher=None, hooks=[hook])] for event in hooked},
        mcp_servers={"deck": create_sdk_mcp_server("deck", tools=[note])},
    )
    async with ClaudeSDKClient(options, transport=transport) as client:
        await client.query(prompt)
        async for message in client.receive_response():
            if isinstance(message, ResultMessage):
                return not message.is_error
    return False


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
