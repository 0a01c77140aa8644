"""The floor under an embedded ``agentdeck run``: the same scripted run through the
official SDK alone, in a fresh interpreter, with nothing of agentdeck's.

    python benchmarks/sdk_floor.py [--governed] PROMPT

Run by ``overhead.py`` (variants ``sdk`` and ``sdk-governed``) in the bare CLI's
environment (``ANTHROPIC_BASE_URL`` pointing at its scripted model), in a new empty
working directory. ``sdk``: ``ClaudeSDKClient`` with ``acceptEdits``, as the bare
CLI runs. ``--governed``: what agentdeck cannot do without before the prompt goes
out, and nothing else: the libraries of its settings (pydantic-settings) and its
store (SQLAlchemy, a table created in a SQLite file), a permission callback and
the hooks agentdeck registers (all allowing at once; each call is printed), and an
in-process MCP server with one tool. No policy, sandbox, checkpoints or event log:
anything agentdeck does costs at least this. Exits 0 once the result is in and
Claude Code is gone.
"""

from __future__ import annotations

import os
import sys
from typing import Any


def main(argv: list[str]) -> int:
    governed = "--governed" in argv
    prompt = next(a for a in argv if a != "--governed")
    import asyncio
    from pathlib import Path

    from claude_agent_sdk import (
        ClaudeAgentOptions,
        ClaudeSDKClient,
        HookMatcher,
        PermissionResultAllow,
        ResultMessage,
        create_sdk_mcp_server,
        tool,
    )
    from claude_agent_sdk.types import (
        HookContext,
        HookEvent,
        HookInput,
        HookJSONOutput,
        ToolPermissionContext,
    )

    cwd = Path.cwd()
    calls: list[str] = []  # the callbacks' calls, printed: the run was governed
    options = ClaudeAgentOptions(cwd=cwd, permission_mode="acceptEdits")
    if governed:
        import pydantic_settings
        import sqlalchemy as sa

        class Settings(pydantic_settings.BaseSettings):
            model_config = pydantic_settings.SettingsConfigDict(env_prefix="FLOOR_")
            home: str = str(cwd)

        engine = sa.create_engine(f"sqlite:///{Settings().home}/floor.db")
        table = sa.Table("events", sa.MetaData(), sa.Column("id", sa.Integer, primary_key=True))
        table.metadata.create_all(engine)

        async def allow(
            tool: str, _input: dict[str, Any], _ctx: ToolPermissionContext
        ) -> PermissionResultAllow:
            calls.append(f"permission {tool}")
            return PermissionResultAllow()

        async def hook(given: HookInput, _id: str | None, _ctx: HookContext) -> HookJSONOutput:
            calls.append(f"hook {given['hook_event_name']}")
            return {}

        @tool("note", "Take a note.", {"text": str})
        async def note(args: dict[str, Any]) -> dict[str, Any]:
            return {"content": [{"type": "text", "text": "noted"}]}

        hooked: tuple[HookEvent, ...] = ("PreToolUse", "PostToolUse", "UserPromptSubmit", "Stop")

        matchers = [HookMatcher(matcher=None, hooks=[hook])]
        options = ClaudeAgentOptions(
            cwd=cwd,
            can_use_tool=allow,
            hooks=dict.fromkeys(hooked, matchers),
            mcp_servers={"deck": create_sdk_mcp_server("deck", tools=[note])},
        )

    async def run() -> bool:
        async with ClaudeSDKClient(options) as client:
            await client.query(prompt)
            async for message in client.receive_response():
                if isinstance(message, ResultMessage):
                    return not message.is_error
        return False

    ok = asyncio.run(run())
    print("\n".join(calls))
    sys.stdout.flush()
    os._exit(0 if ok else 1)  # no interpreter teardown, as agentdeck's run ends


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
