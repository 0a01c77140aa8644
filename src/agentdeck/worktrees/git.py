"""``git`` as a subprocess: never prompts, C locale, stderr kept for the error.

agentdeck's own git runs outside any sandbox, in repositories and worktrees an
agent may have written to, so it runs nothing that configuration could name: no
hooks, no fsmonitor, no filter, diff or merge driver (each one found in the
configuration is blanked for the call), no signature checks, no automatic gc, no
look inside nested repositories (their config is the agent's). It also leaves
alone what the environment says of a repository (``GIT_DIR`` and the like):
each call names its own.
"""

from __future__ import annotations

import asyncio
import os
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from agentdeck.errors import WorktreeError

# What the environment may say about a repository: never ours to inherit.
_REPOSITORY_ENV = (
    "GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_COMMON_DIR", "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_NAMESPACE", "GIT_CONFIG", "GIT_CONFIG_PARAMETERS",
    "GIT_CONFIG_COUNT", "GIT_PREFIX", "GIT_EXTERNAL_DIFF", "GIT_DIFF_OPTS", "GIT_GRAFT_FILE",
    "GIT_SHALLOW_FILE", "GIT_REPLACE_REF_BASE", "GIT_IMPLICIT_WORK_TREE",
)  # fmt: skip
_ENV = {
    **{
        k: v
        for k, v in os.environ.items()
        if k not in _REPOSITORY_ENV and not k.startswith(("GIT_CONFIG_KEY_", "GIT_CONFIG_VALUE_"))
    },
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_OPTIONAL_LOCKS": "0",  # status and diff never take the index lock from the agent
    "GIT_NO_REPLACE_OBJECTS": "1",  # refs/replace/ cannot swap one object for another
    "GIT_PAGER": "cat",
    "GIT_EDITOR": "true",
    "GIT_SEQUENCE_EDITOR": "true",
    "LC_ALL": "C",
}
# Configuration that would run a program (or move refs) behind a command's back,
# whatever the repository says. Given as GIT_CONFIG_KEY_n/VALUE_n, which outrank
# every configuration file and are passed on to the git processes git starts.
SAFE_CONFIG = (
    ("core.fsmonitor", "false"),
    ("core.hooksPath", "/dev/null"),
    ("submodule.recurse", "false"),
    ("diff.ignoreSubmodules", "dirty"),
    ("status.submoduleSummary", "false"),
    ("log.showSignature", "false"),
    ("merge.verifySignatures", "false"),
    ("commit.gpgSign", "false"),
    ("tag.gpgSign", "false"),
    ("rebase.updateRefs", "false"),
    ("gc.auto", "0"),
    ("maintenance.auto", "false"),
    ("protocol.ext.allow", "never"),
)
# Commands that never run a filter, diff or merge driver: no need to look for one.
# (Not write-tree: it can re-read a racily clean file, through its clean filter.)
_NO_DRIVERS = frozenset(
    {
        "rev-parse", "symbolic-ref", "update-ref", "for-each-ref", "config", "branch",
        "rev-list", "merge-base", "ls-tree", "commit-tree", "init", "cat-file", "show-ref",
        "pack-objects", "index-pack",
    }
)  # fmt: skip
_DRIVERS = r"^(filter|diff|merge)\..+\.(clean|smudge|process|driver|command|textconv)$"
# What agentdeck's own commits are made with, whatever the user configured.
AS_AGENTDECK = (
    "-c", "user.name=agentdeck", "-c", "user.email=agentdeck@localhost",
    "-c", "commit.gpgsign=false",
)  # fmt: skip


class GitFailed(WorktreeError):
    def __init__(self, args: tuple[str, ...], code: int, stderr: str) -> None:
        line = stderr.strip().splitlines()[-1] if stderr.strip() else f"exit status {code}"
        super().__init__(f"git {' '.join(args[:2])} failed: {line}")
        self.code = code
        self.stderr = stderr


async def git(
    *args: str,
    cwd: Path | str,
    ok: tuple[int, ...] = (0,),
    drivers_off: bool = False,
    stdin: bytes | None = None,
    env: Mapping[str, str] | None = None,
    blanked: Blanked | None = None,
) -> str:
    """Run ``git ARGS`` in ``cwd``; its stdout. An exit status not in ``ok`` raises.
    ``drivers_off``: the repository's own attributes already turn every driver off
    (checkpoints' shadow repositories), so none is looked for. ``env``: where the
    repository is, as agentdeck says it (``admin.View``), never as inherited.
    ``blanked``: the repository's drivers as ``blanked_drivers`` found them for
    this same repository, moments ago: not looked up again."""
    return (await git_bytes(*args, cwd=cwd, ok=ok, drivers_off=drivers_off, stdin=stdin,
                            env=env, blanked=blanked)).decode("utf-8", "replace")  # fmt: skip


async def git_bytes(
    *args: str,
    cwd: Path | str,
    ok: tuple[int, ...] = (0,),
    drivers_off: bool = False,
    stdin: bytes | None = None,
    env: Mapping[str, str] | None = None,
    blanked: Blanked | None = None,
) -> bytes:
    """``git`` as above, its stdout as it is (a pack)."""
    if shutil.which("git") is None:
        raise WorktreeError("git is not installed", hint="install git to give agents worktrees")
    config = list(SAFE_CONFIG)
    command, before = _command(args)
    if command not in _NO_DRIVERS and not drivers_off:
        config += blanked.config if blanked is not None else await _blanked(before, cwd, env)
    return await _run(args, cwd, ok, config, stdin, env)


@dataclass(frozen=True)
class Blanked:
    """Every filter, diff and merge driver a repository's configuration names,
    blanked (``GIT_CONFIG_KEY_n``/``VALUE_n`` pairs): looked up once for several
    commands run on the same repository in a row."""

    config: tuple[tuple[str, str], ...]


async def blanked_drivers(cwd: Path | str) -> Blanked:
    """The drivers the configuration of the repository ``cwd`` is in names, blanked
    (none when it is no repository: the command run with them will say so)."""
    return Blanked(tuple(await _blanked((), cwd, None)))


async def _run(
    args: tuple[str, ...],
    cwd: Path | str,
    ok: tuple[int, ...],
    config: list[tuple[str, str]],
    stdin: bytes | None = None,
    extra: Mapping[str, str] | None = None,
) -> bytes:
    env = dict(_ENV, **(extra or {}), GIT_CONFIG_COUNT=str(len(config)))
    for n, (key, value) in enumerate(config):
        env[f"GIT_CONFIG_KEY_{n}"], env[f"GIT_CONFIG_VALUE_{n}"] = key, value
    proc = await asyncio.create_subprocess_exec(
        "git", *args,
        cwd=str(cwd), env=env,
        stdin=asyncio.subprocess.DEVNULL if stdin is None else asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await proc.communicate(stdin)
    if proc.returncode not in ok:
        raise GitFailed(args, proc.returncode or 0, err.decode("utf-8", "replace"))
    return out


def _command(args: tuple[str, ...]) -> tuple[str, tuple[str, ...]]:
    """The git command ``args`` run, and the options given before it."""
    skip = False
    for i, arg in enumerate(args):
        if skip:
            skip = False
        elif arg in ("-c", "-C"):
            skip = True
        elif not arg.startswith("-"):
            return arg, args[:i]
    return "", args


async def _blanked(
    before: tuple[str, ...], cwd: Path | str, env: Mapping[str, str] | None
) -> list[tuple[str, str]]:
    """Every filter, diff and merge driver the configuration names, blanked: a file's
    content passes unfiltered, and a diff or merge that would need a driver fails
    instead of running it."""
    try:
        out = (
            await _run((*before, "config", "-z", "--get-regexp", _DRIVERS), cwd, (0, 1), [], None,
                       env)
        ).decode("utf-8", "replace")  # fmt: skip
    except GitFailed:
        return []  # not a repository (yet): the command itself will say so
    blanked: list[tuple[str, str]] = []
    for entry in out.split("\0"):
        key = entry.partition("\n")[0]
        if not key:
            continue
        section, _, rest = key.partition(".")
        name = rest.rpartition(".")[0]
        if section == "filter":
            blanked += [(f"filter.{name}.{v}", "") for v in ("clean", "smudge", "process")]
            blanked.append((f"filter.{name}.required", "false"))
        elif section == "diff":
            blanked += [(f"diff.{name}.command", ""), (f"diff.{name}.textconv", "")]
        else:
            blanked.append((f"merge.{name}.driver", ""))
    return blanked
