"""Where a merge's test runs: the sandbox of the agent's profile, with the scratch
worktree as its workspace.

The test's command is a person's (or the target's ``.agentdeck/merge.yaml``), but
what it runs is the agent's branch (``pytest`` runs its ``conftest.py``): so it
gets the sandbox the agent's own commands get, never the daemon's freedom. A
profile confining only Bash is given the whole-process sandbox here (Claude Code
is not there to do it). The repository's git directory is visible read-only
(the test may run git; it may not move a ref or plant a hook). A profile whose
sandbox is ``required`` and cannot be given refuses the merge; one that does not
require it runs the test unsandboxed, as its agents run, and the log says so.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path

from pydantic import SecretStr

from agentdeck.core.sandbox import SandboxSpec
from agentdeck.runner.sandboxing import given
from agentdeck.sandbox.confine import Confinement
from agentdeck.settings import Settings
from agentdeck.worktrees.merge import Confine
from agentdeck.worktrees.merge_test import Jail

logger = logging.getLogger(__name__)


def confine_for(spec: SandboxSpec, settings: Settings, git_dir: str, profile: str) -> Confine:
    """How a merge of an agent under this sandbox runs its test."""

    @contextlib.asynccontextmanager
    async def confine(scratch: Path) -> AsyncIterator[Jail | None]:
        if not spec.enabled:
            yield None
            return
        boxed, notice = await given(spec, whole_process=True, profile=profile)
        if boxed is None:
            logger.warning("merge test in %s unsandboxed: %s", scratch, notice)
            yield None
            return
        # Visible, not writable: bound writable, then read-only again over that.
        boxed = replace(
            boxed,
            allow_write=(*spec.allow_write, git_dir),
            deny_write=(*spec.deny_write, git_dir),
        )
        confinement = await Confinement.open(
            boxed,
            workspace=scratch,
            settings=settings,
            endpoint=settings.anthropic_base_url,
            on_blocked=lambda host, port: logger.info(
                "merge test in %s: the sandbox refused a connection to %s:%s", scratch, host, port
            ),
        )
        try:
            yield confinement
        finally:
            await confinement.close()

    return confine


def deck_secrets(settings: Settings) -> list[str]:
    """The deck's own secrets, blanked out of a test's output wherever the scrubber
    would not know them by their shape (the API token is random text)."""
    found = [v.get_secret_value() for _, v in settings if isinstance(v, SecretStr)]
    with contextlib.suppress(OSError):
        found.append((settings.home_dir / "token").read_text().strip())
    return [s for s in found if s]
