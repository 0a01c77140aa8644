"""``agentdeck diff`` and ``merge``: what an agent in a worktree changed, and
landing it, test-gated."""

from __future__ import annotations

import json
import sys
from typing import Annotated, cast

import typer

from agentdeck.cli.agents import AgentArg, JsonOpt
from agentdeck.cli.context import run_async
from agentdeck.cli.decks import opened_deck
from agentdeck.core.worktree import STRATEGIES, Strategy, WorktreeDiff
from agentdeck.errors import UsageError
from agentdeck.settings import Settings


def register(app: typer.Typer) -> None:
    app.command("diff")(diff)
    app.command("merge")(merge)


def diff(
    agent: AgentArg,
    stat: Annotated[
        bool, typer.Option("--stat", help="Only the files, lines added and removed.")
    ] = False,
    against: Annotated[
        str | None,
        typer.Option(
            help="Compare with where the agent's branch left this ref (default: where it started)."
        ),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """What an agent in a worktree changed, committed or not, against where it started.

    Coloured in a terminal, plain when piped."""

    async def go(settings: Settings) -> None:
        async with opened_deck(settings) as deck:
            changes = await deck.diff(agent, against=against, patch=not stat)
            name = (await deck.get_agent(changes.agent_id)).name if stat and not as_json else ""
        if as_json:
            print(json.dumps(changes.to_dict(), indent=2))
        elif stat:
            print(stat_text(name, changes))
        else:
            sys.stdout.write(colored(changes.patch) if sys.stdout.isatty() else changes.patch)

    run_async(go)


def stat_text(name: str, changes: WorktreeDiff) -> str:
    lines = [f"{name} on {changes.branch}, against {changes.against[:12]}"]
    width = max((len(f.path) for f in changes.files), default=0)
    for f in changes.files:
        counts = "binary" if f.added is None else f"+{f.added} -{f.removed}"
        lines.append(f"  {f.path:<{width}}  {counts}")
    added = sum(f.added or 0 for f in changes.files)
    removed = sum(f.removed or 0 for f in changes.files)
    n = len(changes.files)
    lines.append(f"{n} file{'' if n == 1 else 's'} changed, +{added} -{removed}")
    return "\n".join(lines)


# git's own colours for a diff (color.diff.*'s defaults): what `git diff` shows.
_META, _FRAG, _OLD, _NEW, _RESET = "\x1b[1m", "\x1b[36m", "\x1b[31m", "\x1b[32m", "\x1b[m"
_META_STARTS = (
    "diff ", "index ", "--- ", "+++ ", "new file mode", "deleted file mode", "old mode",
    "new mode", "similarity index", "rename from", "rename to", "Binary files",
)  # fmt: skip


def colored(patch: str) -> str:
    """``patch`` coloured for a terminal as git colours it: file headers bold, hunk
    headers cyan, removed lines red, added lines green."""
    out: list[str] = []
    in_hunk = False
    for line in patch.split("\n"):
        if line.startswith("diff "):
            in_hunk = False
        if not in_hunk and line.startswith(_META_STARTS):
            out.append(f"{_META}{line}{_RESET}")
        elif line.startswith("@@"):
            in_hunk = True
            head, sep, rest = line.partition(" @@")
            out.append(f"{_FRAG}{head}{sep}{_RESET}{rest}" if sep else f"{_FRAG}{line}{_RESET}")
        elif in_hunk and line.startswith("-"):
            out.append(f"{_OLD}{line}{_RESET}")
        elif in_hunk and line.startswith("+"):
            out.append(f"{_NEW}{line}{_RESET}")
        else:
            out.append(line)
    return "\n".join(out)


def merge(
    agent: AgentArg,
    test: Annotated[
        str | None,
        typer.Option(
            help="The command the combination must pass (default: `test` of the target's "
            ".agentdeck/merge.yaml, or none), run in the sandbox of the agent's profile."
        ),
    ] = None,
    strategy: Annotated[
        str, typer.Option(help="merge (a merge commit), squash (one commit) or rebase.")
    ] = "merge",
    into: Annotated[
        str | None, typer.Option(help="The branch to land on (default: the one it started from).")
    ] = None,
    no_wait: Annotated[
        bool,
        typer.Option("--no-wait", help="Queue it and return (needs the daemon)."),
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Put an agent's branch in its repository's merge queue, which lands one at a
    time: combined with the latest target in a scratch worktree, tested there, and
    the target moved to exactly that tested commit. Exit 0 when it landed (or was
    queued, with --no-wait), 1 when it was refused.

    The test runs what the branch holds, so it runs as the agent's own commands do:
    in its profile's sandbox (refused where a required one cannot be given), its
    output scrubbed of secrets."""
    if strategy not in STRATEGIES:
        raise UsageError(f"--strategy must be one of {', '.join(STRATEGIES)}, not {strategy!r}")

    async def go(settings: Settings) -> int:
        async with opened_deck(settings) as deck:
            entry = await deck.merge(
                agent, into=into, strategy=cast(Strategy, strategy), test=test, wait=not no_wait
            )
        outcome = entry.result()
        if as_json:
            print(json.dumps(outcome, indent=2))
        elif outcome["state"] == "queued":
            print(f"queued: {outcome['id']} ({outcome['branch']} → {outcome['target']}); "
                  "`agentdeck queue` follows it")  # fmt: skip
        else:
            # A landing's reason says so itself ("landed on main as …").
            print(outcome["reason"] if outcome["landed"] else f"refused: {outcome['reason']}")
            if outcome.get("test_output"):
                print(str(outcome["test_output"]).rstrip())
        return 0 if outcome["landed"] or outcome["state"] == "queued" else 1

    raise typer.Exit(run_async(go))
