"""Which tool calls can change the workspace's files: a checkpoint is taken before
those, and only those. Pure.

Deny when unsure: a tool, a program or an option not known to leave files alone
can change them. A Bash line is read with the policy's splitter (``bash_split``):
it changes nothing when it splits with confidence and every simple command in it
is a known read-only program (``ls``, ``cat x``, ``git status`` …) with no
redirection into a file, no ``VAR=value`` before it, no computed name and no
option that writes (``sort -o``, ``find -delete``, ``git diff --output``).

What a skipped call could still do behind these rules (a program the agent put
on the ``PATH`` under a read-only name, a ``diff.external`` it configured) is
not lost: the next checkpoint, taken before the next call that can change
files, holds it. A checkpoint is the agent's undo history, not a boundary.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agentdeck.core.bash_split import SimpleCommand, split_command

# Claude Code's tools that never write the workspace. A subagent (Task, Agent) is
# governed call by call: its own file-changing calls get their own checkpoints.
INERT_TOOLS = frozenset(
    {
        "Read", "Glob", "Grep", "LS", "NotebookRead", "WebFetch", "WebSearch", "TodoWrite",
        "TodoRead", "Task", "Agent", "BashOutput", "KillShell", "KillBash", "ExitPlanMode",
        "AskUserQuestion", "ListMcpResourcesTool", "ReadMcpResourceTool",
    }
)  # fmt: skip
# The deck's own MCP tools work on other agents, never on this one's files; a merge
# lands a worker's branch, possibly into this agent's checkout.
_DECK = "mcp__deck__"
_DECK_CHANGING = frozenset({"merge_agent"})

# Programs that read and print, whatever their arguments, except those named in
# _WRITING_OPTIONS. Not here, for they write or run something given to them:
# tee, sed (-i, `w`), awk, xargs, env with a command, uniq (OUT), xxd (OUT), ...
_READ_ONLY = frozenset(
    {
        "true", "false", ":", "ls", "pwd", "cd", "cat", "head", "tail", "wc", "grep", "egrep",
        "fgrep", "rg", "echo", "printf", "which", "file", "stat", "du", "df", "date", "whoami",
        "id", "uname", "tree", "diff", "cmp", "comm", "basename", "dirname", "realpath",
        "readlink", "printenv", "test", "[", "sleep", "seq", "sort", "cut", "tr", "nl", "od",
        "hexdump", "md5sum", "sha1sum", "sha256sum", "sha512sum", "cksum", "jq", "nproc",
        "uptime", "ps", "free", "column", "fold", "rev", "find", "git",
    }
)  # fmt: skip
# Options that write a file or run a program, per program. A long one counts when an
# argument starts with it (``--output=file``) or names a prefix of it (getopt_long
# takes ``--outp=file`` for ``--output``); a one-letter one when it is in an
# argument's cluster of short options (``-uo file``, ``-ofile``).
_WRITING_OPTIONS: dict[str, tuple[str, ...]] = {
    "sort": ("-o", "--output", "--compress-program"),
    "tree": ("-o", "-R"),  # -R writes 00Tree.html in each directory
    "rg": ("--pre",),
    "file": ("-C", "--compile"),
    "date": ("-s", "--set"),
    # bash evaluates an array subscript in the variable's name: -v 'a[$(cmd)]' runs cmd
    "test": ("-v",),
    "[": ("-v",),
    "printf": ("-v",),
}
# find's actions are words: -delete, -exec, -execdir, -ok, -okdir, -fprint, -fprintf, -fls.
_FIND_WRITING = ("-delete", "-exec", "-ok", "-fprint", "-fls")
_GIT_READ_ONLY = frozenset({"status", "diff", "log", "show", "rev-parse", "ls-files", "blame"})


def can_change_files(tool: str, tool_input: Mapping[str, Any]) -> bool:
    """Whether the call can change the workspace's files (so needs a checkpoint)."""
    if tool == "Bash":
        command = tool_input.get("command")
        return not (isinstance(command, str) and read_only_command(command))
    if tool.startswith(_DECK):
        return tool.removeprefix(_DECK) in _DECK_CHANGING
    return tool not in INERT_TOOLS


def read_only_command(command: str) -> bool:
    """Whether a Bash line only reads (see the module's docstring)."""
    split = split_command(command)
    if split.problem is not None or not split.commands:
        return False
    return all(_read_only(c) for c in split.commands)


def _read_only(command: SimpleCommand) -> bool:
    if command.dynamic_name or command.writes_file or command.assignments or not command.words:
        return False
    name, args = command.words[0], command.words[1:]
    if name not in _READ_ONLY:
        return False
    if name == "git":
        return _git_read_only(args)
    if name == "find":
        return not any(arg.startswith(_FIND_WRITING) for arg in args)
    return not any(_writes(arg, _WRITING_OPTIONS.get(name, ())) for arg in args)


def _writes(arg: str, options: tuple[str, ...]) -> bool:
    for option in options:
        if option.startswith("--"):
            name = arg.partition("=")[0]
            if arg.startswith(option) or (len(name) > 2 and option.startswith(name)):
                return True
        elif arg.startswith("-") and not arg.startswith("--") and option[1] in arg[1:]:
            return True
    return False


def _git_read_only(args: tuple[str, ...]) -> bool:
    """``git [-C DIR] [--no-pager] SUBCOMMAND …`` for a subcommand that only reads,
    without ``-c`` (a configuration can name a program) or an output file."""
    rest = list(args)
    while rest and rest[0] in ("-C", "--no-pager", "-P"):
        rest = rest[2:] if rest[0] == "-C" else rest[1:]
    if not rest or rest[0] not in _GIT_READ_ONLY:
        return False
    return not any(_writes(arg, ("--output", "--ext-diff")) for arg in rest[1:])
