"""An agent's Claude Code transcript, kept in the database by the host that runs
it and put back where Claude Code looks for it by the host that resumes it.

Claude Code keeps a session in ``<config dir>/projects/<slug>/<session>.jsonl``
(the config dir is ``CLAUDE_CONFIG_DIR``, else ``~/.claude``; the slug is the
absolute cwd with every character but letters and digits made ``-``:
``sandbox.plan.project_slug``). A sandboxed agent's transcripts are made in the
user's directory too (where a resume finds them); an isolated agent's
(``config_dir: isolated``) in its own config directory (``runner.config_dirs``). A cwd
past the slug's length limit (Claude Code adds a hash then) is not kept.
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

from agentdeck.core.agent import Agent
from agentdeck.core.policy_profile import Profile
from agentdeck.runner.config_dirs import config_dir_of
from agentdeck.sandbox.plan import project_slug
from agentdeck.settings import Settings
from agentdeck.store.store import Store
from agentdeck.store.transcripts import TranscriptStore

_SESSION = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,127}")


def path_of(settings: Settings, agent: Agent, profile: Profile | None = None) -> Path | None:
    """Where Claude Code keeps the agent's transcript (None: it has none, or its
    cwd is past the slug's limit): under its own config directory when it is
    isolated (its template, or ``profile``), else the deck's."""
    if not (agent.session_id and agent.cwd) or not _SESSION.fullmatch(agent.session_id):
        return None  # a session id is Claude Code's uuid: never a path of its own
    slug = project_slug(agent.cwd)
    if slug is None:
        return None
    base = config_dir_of(settings, agent, profile)
    return base / "projects" / slug / f"{agent.session_id}.jsonl"


async def keep(store: Store, settings: Settings, agent: Agent, host: str) -> bool:
    """The agent's transcript into the database; False when there is none to keep."""
    path = path_of(settings, agent)
    if path is None or agent.session_id is None:
        return False
    try:
        text = await asyncio.to_thread(path.read_text, "utf-8", "replace")
    except FileNotFoundError:
        return False
    keeper = TranscriptStore(store, max_bytes=settings.transcript_max_bytes)
    await keeper.save(agent.id, agent.session_id, host, text)
    return True


async def restore(
    store: Store, settings: Settings, agent: Agent, profile: Profile | None = None
) -> bool:
    """The agent's kept transcript where Claude Code will look for it, unless a
    copy is there already (this host ran it before); False when none was kept."""
    path = path_of(settings, agent, profile)
    if path is None:
        return False
    if path.exists():
        return True
    found = await TranscriptStore(store, max_bytes=settings.transcript_max_bytes).load(agent.id)
    if found is None or found[0] != agent.session_id:
        return False

    def write() -> None:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        path.write_text(found[1], encoding="utf-8")

    await asyncio.to_thread(write)
    return True
