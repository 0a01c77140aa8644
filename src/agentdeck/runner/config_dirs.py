"""An agent's own Claude config directory (``config_dir: isolated`` in its template
or its profile).

Claude Code keeps its state in ``CLAUDE_CONFIG_DIR``: the session transcripts
(``projects/``), todos, shell snapshots, its state file (``.claude.json``), the
credentials. Agents sharing the user's directory share and may clobber all of it.
An isolated agent gets ``<home>/claude-config/<agent id>`` instead, made once and
kept for the agent's life (a resume finds its transcript there), seeded with a
copy of what the user configured: ``settings.json``, ``CLAUDE.md``, ``agents/``,
``skills/``, ``commands/``. Copies, never links: a link would let the agent's
Claude Code write the user's files.

The credentials file is the one exception, and only when the deck's own login
needs it: when no key or token reaches the process (``ANTHROPIC_API_KEY``,
``CLAUDE_CODE_OAUTH_TOKEN``, …) and no scripted model answers it, Claude Code
logs in with the user's subscription from ``.credentials.json``. A copy would not
do: its OAuth refresh token rotates, so the first refresh in a copy would log the
user out everywhere else. It is linked then (what a shared directory gives every
agent anyway); otherwise it is never there.

With the process sandbox, the sandbox's view (``sandbox.confine``) is laid over
the agent's own directory instead of the user's: ``runner.options.settings_for`` gives the
session settings naming it, made and seeded before the view is laid out.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
from collections.abc import Mapping
from pathlib import Path

from agentdeck.core.agent import Agent, AgentSpec
from agentdeck.core.policy_profile import Profile
from agentdeck.errors import UsageError
from agentdeck.sandbox.confine import claude_config
from agentdeck.sandbox.plan import CREDENTIALS
from agentdeck.settings import Settings

__all__ = [
    "SEEDED",
    "config_dir_of",
    "is_isolated",
    "isolate",
    "isolated_dir",
]

SEEDED = ("settings.json", "CLAUDE.md", "agents", "skills", "commands")
DIRECTORY = "claude-config"  # under the home
SEEDED_MARK = ".agentdeck-seeded"  # in an agent's directory once it is seeded
# What logs Claude Code in without the credentials file.
LOGINS = (
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "CLAUDE_CODE_OAUTH_TOKEN",
    "CLAUDE_CODE_USE_BEDROCK",
    "CLAUDE_CODE_USE_VERTEX",
)
_AGENT_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$")


def isolated_dir(settings: Settings, agent_id: str) -> Path:
    """Where the agent's own config directory is (made or not)."""
    if not _AGENT_ID.fullmatch(agent_id):  # never a path out of the home
        raise UsageError(f"not an agent id: {agent_id!r}")
    return settings.home_dir / DIRECTORY / agent_id


def config_dir_of(settings: Settings, agent: Agent, profile: Profile | None = None) -> Path:
    """The Claude config directory the agent runs with (where its transcripts
    are: ``<this>/projects/<slug>/<session>.jsonl``): its own when its template or
    ``profile`` isolates it, or once it has one."""
    own = isolated_dir(settings, agent.id)
    if is_isolated(agent.spec, profile) or own.is_dir():
        return own
    return (settings.claude_config_dir or Path.home() / ".claude").expanduser()


def is_isolated(spec: AgentSpec, profile: Profile | None) -> bool:
    """Whether the agent runs with its own config directory: its template or its
    profile says so (``config_dir: isolated``)."""
    return spec.claude.config_dir == "isolated" or (
        profile is not None and profile.config_dir == "isolated"
    )


def isolate(
    settings: Settings, agent_id: str, env: Mapping[str, str], *, forked_from: str | None = None
) -> Path:
    """The agent's own config directory, made and seeded on its first start (kept
    as it is on a resume); ``env`` is what its process is given on top of ours. A
    fork (``forked_from``: the agent it was forked from) gets a copy of that agent's
    transcripts, the session it goes on from."""
    target = isolated_dir(settings, agent_id)
    target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    target.mkdir(mode=0o700, exist_ok=True)  # a transcript put back may have made it
    seeded = target / SEEDED_MARK
    if not seeded.exists():  # once: a crash before the mark is seeded again
        _seed(claude_config(settings), target)
        if forked_from is not None:
            _copy_transcripts(isolated_dir(settings, forked_from), target)
        seeded.touch()
    _link_login(claude_config(settings), target, needed=_needs_login_file(env))
    return target


def _seed(user: Path, target: Path) -> None:
    for name in SEEDED:
        source = user / name
        try:
            if source.is_dir():
                shutil.copytree(
                    source, target / name, ignore_dangling_symlinks=True, dirs_exist_ok=True
                )
            elif source.is_file():
                shutil.copyfile(source, target / name)
        except (OSError, shutil.Error):
            continue  # unreadable, or gone meanwhile: the agent starts without it


def _copy_transcripts(parent: Path, target: Path) -> None:
    if (parent / "projects").is_dir():  # links copied as links: nothing read through them
        with contextlib.suppress(OSError, shutil.Error):  # then the fork finds no session
            shutil.copytree(
                parent / "projects", target / "projects", symlinks=True, dirs_exist_ok=True
            )


def _needs_login_file(env: Mapping[str, str]) -> bool:
    """Whether Claude Code would log in from the credentials file: no key, token
    or cloud provider reaches it (ours or the agent's env), no scripted model."""
    if "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC" in env and "ANTHROPIC_BASE_URL" in env:
        return False  # the scripted model (runner.options.agent_env)
    return not any(env.get(name) or os.environ.get(name) for name in LOGINS)


def _link_login(user: Path, target: Path, *, needed: bool) -> None:
    link = target / CREDENTIALS
    if link.is_symlink():
        if not needed:
            link.unlink()  # the deck's login changed: the user's login goes
        return
    if link.exists():  # the agent's own (a login made in its directory): kept
        return
    if needed and (user / CREDENTIALS).is_file():
        link.symlink_to(user / CREDENTIALS)
