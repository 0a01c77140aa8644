"""Checkpoints of an agent's workspace before each tool call that can change its
files (``core.file_changes``: a read-only Bash line, a Read or a Grep gets none),
from the PreToolUse hook once the policy has allowed the call.

Every such call gets a ``checkpoint`` notice: the timeline the CLI, the API and
the agent page show. A checkpoint that cannot be taken is a notice saying why,
and the tool call goes on: the agent's work matters more than its undo history.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

from agentdeck.core.agent import Agent
from agentdeck.core.checkpoint import Rewind, one_line
from agentdeck.core.events import Event, Notice
from agentdeck.core.file_changes import can_change_files
from agentdeck.core.redact import scrub
from agentdeck.core.summary import tool_summary
from agentdeck.errors import InvalidState, UsageError
from agentdeck.governance.governor import Governor
from agentdeck.store.store import Store
from agentdeck.worktrees.checkpoints import Checkpoints

logger = logging.getLogger(__name__)


class SessionCheckpoints:
    """``agent`` is read at each call (the session replaces its Agent on every
    change); ``record`` appends events to the agent's log."""

    def __init__(
        self,
        checkpoints: Checkpoints,
        agent: Callable[[], Agent],
        record: Callable[[Sequence[Event]], Awaitable[None]],
    ) -> None:
        self.checkpoints = checkpoints
        self._agent = agent
        self._record = record

    async def before(self, tool: str, tool_input: dict[str, Any], tool_use_id: str | None) -> None:
        if not can_change_files(tool, tool_input):
            return
        agent = self._agent()
        # Kept in the shadow repository's commits: scrubbed like the event log; a
        # file in the workspace named as people see it there.
        shown = dict(tool_input)
        path = str(shown.get("file_path") or shown.get("notebook_path") or "")
        if path.startswith(agent.cwd.rstrip("/") + "/"):
            shown["file_path"] = path[len(agent.cwd.rstrip("/")) + 1 :]
        summary = one_line(scrub(tool_summary(tool, shown)))
        try:
            taken = await self.checkpoints.snapshot(
                agent.id, Path(agent.cwd), tool=tool, tool_use_id=tool_use_id, summary=summary
            )
        except Exception as exc:  # noqa: BLE001 - the tool call goes on; the notice says why
            logger.warning("agent %s: no checkpoint before %s: %s", agent.id, tool, exc)
            notice = Notice(
                agent_id=agent.id, ts=time.time(), kind="checkpoint_failed",
                message=f"no checkpoint before {summary}: {exc}",
            )  # fmt: skip
            await self._record([notice])
            return
        skipped = f" ({len(taken.skipped)} large file(s) left out)" if taken.skipped else ""
        await self._record(
            [
                Notice(
                    agent_id=agent.id,
                    ts=time.time(),
                    kind="checkpoint",
                    message=f"checkpoint {taken.n} before {summary}{skipped}",
                    detail=taken.to_dict(),
                )  # fmt: skip
            ]
        )


async def rewind(
    checkpoints: Checkpoints,
    store: Store,
    governor: Governor,
    agent: Agent,
    *,
    to: int | None = None,
    dry_run: bool = False,
    by: str = "user:cli",
) -> Rewind:
    """The agent's workspace back to checkpoint ``to`` (default: the last one, which
    undoes its last file-changing tool call). Not while it works: its files would
    change under it. A rewind is a ``rewind`` notice and an audit entry."""
    if agent.state.is_busy:
        raise InvalidState(agent.id, str(agent.state), "rewind (interrupt it first)")
    if to is None:
        found = await checkpoints.list_checkpoints(agent.id)
        if not found:
            raise UsageError(
                f"agent {agent.name} ({agent.id}) has no checkpoints",
                hint="one is taken before each of its file-changing tool calls",
            )
        to = found[-1].n
    done = await checkpoints.rewind(agent.id, Path(agent.cwd), to=to, dry_run=dry_run)
    if dry_run:
        return done
    message = (
        f"rewound to checkpoint {to} by {by}: {len(done.restored)} file(s) restored, "
        f"{len(done.removed)} removed; rewinding to checkpoint {done.undo} undoes it"
    )
    detail = {k: v for k, v in done.to_dict().items() if k != "patch"}
    await store.append(
        [Notice(agent_id=agent.id, ts=time.time(), kind="rewind", message=message, detail=detail)]
    )
    await governor.audit(agent, "rewind", {"to": to}, "allowed", message, None, by)
    return done
