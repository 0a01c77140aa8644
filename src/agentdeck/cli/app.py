"""The ``agentdeck`` command line (Typer + Rich): every command, its options and help.

``agentdeck.cli.main`` tries the quick path first (``cli.quick``); this is where
everything else runs, and what ``--help`` describes. Errors from the one error
tree become one clear line on stderr and a non-zero exit: 2 for bad usage, 1
otherwise. Tracebacks are for bugs only.
"""

from __future__ import annotations

import gc
import sys

import typer

from agentdeck.cli import (
    agents,
    approvals,
    asks,
    audit,
    bridge,
    checkpoints,
    compact,
    context,
    daemon,
    db,
    demo_command,
    diff,
    doctor,
    hooks,
    hosts,
    mcp,
    memories,
    memory,
    mock,
    notify,
    out,
    policy,
    queue,
    recordings,
    replay,
    run,
    sandbox,
    schedules,
    service,
    skills,
    team,
    templates,
    triggers,
    tui,
    usage,
    worktrees,
)
from agentdeck.errors import AgentdeckError

app = typer.Typer(
    name="agentdeck",
    help="A self-hosted control plane for Claude Code agents.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
run.register(app)
agents.register(app)
diff.register(app)
worktrees.register(app)
queue.register(app)
notify.register(app)
checkpoints.register(app)
doctor.register(app)
mock.register(app)
daemon.register(app)
demo_command.register(app)
approvals.register(app)
asks.register(app)
templates.register(app)
skills.register(app)
sandbox.register(app)
audit.register(app)
policy.register(app)
hooks.register(app)
memory.register(app)
memories.register(app)
mcp.register(app)
bridge.register(app)
tui.register(app)
team.register(app)
usage.register(app)
db.register(app)
hosts.register(app)
service.register(app)
triggers.register(app)
compact.register(app)
recordings.register(app)
replay.register(app)
schedules.register(app)


def main() -> None:
    """Run the Typer app on ``sys.argv``; exits."""
    context.configure_logging()
    try:
        # Standalone mode: click reports usage errors (exit 2) and honours typer.Exit.
        app()
    except SystemExit as exc:
        # A command that closed all it opened ends here, with no teardown at all.
        context.exit_now(exc.code)
        # Interpreter shutdown would walk every object the SDK's imports made
        # (~0.4 s); freezing them first skips that work.
        gc.freeze()
        raise
    except AgentdeckError as exc:
        sys.exit(out.report(exc))
    except KeyboardInterrupt:
        sys.stderr.write("interrupted\n")
        sys.exit(130)
