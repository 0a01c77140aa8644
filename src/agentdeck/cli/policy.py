"""``agentdeck policy``: ask the policy engine about a tool call, list profiles."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

from agentdeck.cli.context import console
from agentdeck.errors import UsageError

# Distinct exit codes per decision; 2 stays "bad usage" (click's and ours).
EXIT_CODES = {"allow": 0, "deny": 1, "ask": 3}
_INPUT_FIELDS = {
    "Bash": "command",
    "Read": "file_path",
    "Edit": "file_path",
    "Write": "file_path",
    "MultiEdit": "file_path",
    "NotebookEdit": "notebook_path",
    "NotebookRead": "notebook_path",
    "Glob": "pattern",
    "Grep": "path",
    "LS": "path",
    "WebFetch": "url",
    "Agent": "subagent_type",
    "Task": "subagent_type",
}

policy_app = typer.Typer(
    help=(
        "Ask the policy engine. `agentdeck policy check 'Bash(rm -rf build)'` prints the"
        " decision, its reason and the rule that made it (exit 0 allow, 1 deny, 3 ask,"
        " 2 bad usage); `agentdeck policy profiles` lists the built-in profiles."
    ),
    no_args_is_help=True,
)


def register(app: typer.Typer) -> None:
    app.add_typer(policy_app, name="policy")


def parse_call(call: str) -> tuple[str, dict[str, Any]]:
    """``Tool(arg)`` → the tool and its input; the argument is taken literally."""
    call = call.strip()
    if "(" not in call:
        if not call or ")" in call or " " in call:
            raise UsageError(f"cannot read the call {call!r}: write Tool or Tool(argument)")
        return call, {}
    if not call.endswith(")"):
        raise UsageError(f"cannot read the call {call!r}: it must end with `)`")
    tool, arg = call[: call.index("(")], call[call.index("(") + 1 : -1]
    field = _INPUT_FIELDS.get(tool)
    if field is None:
        known = ", ".join(_INPUT_FIELDS)
        raise UsageError(
            f"`{tool}(…)` has no shorthand (known: {known}); use --tool {tool} --input '{{…}}'"
        )
    return tool, {field: arg}


@policy_app.command("check")
def check(
    call: Annotated[
        str | None,
        typer.Argument(
            help="The call as `Tool(argument)`, e.g. 'Bash(git status)'.", show_default=False
        ),
    ] = None,
    tool: Annotated[
        str | None, typer.Option("--tool", help="The tool name (instead of CALL).")
    ] = None,
    input_json: Annotated[
        str | None,
        typer.Option("--input", help='The tool input as JSON, e.g. \'{"command": "ls"}\'.'),
    ] = None,
    profile: Annotated[
        str, typer.Option(help="A built-in profile name, a profile YAML or a settings.json.")
    ] = "default",
    cwd: Annotated[
        Path | None, typer.Option(help="The agent's workspace (default: the current directory).")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the verdict as JSON.")] = False,
) -> None:
    """Judge one tool call under a profile: exit 0 allow, 1 deny, 3 ask (2: bad usage).

    Give the call as `Tool(argument)` — the argument is the command for Bash, the
    file path for Read/Edit/Write, the URL for WebFetch — or as --tool and --input.
    """
    from agentdeck.core.policy import decide
    from agentdeck.governance.profiles import load_profile

    if call is not None and (tool is not None or input_json is not None):
        raise UsageError("give either CALL or --tool/--input, not both")
    if call is not None:
        tool_name, tool_input = parse_call(call)
    elif tool is not None:
        tool_name, tool_input = tool, _parse_input(input_json)
    else:
        raise UsageError("nothing to check: give CALL (e.g. 'Bash(ls)') or --tool and --input")
    loaded = load_profile(profile)
    workspace = str((cwd or Path.cwd()).resolve())
    verdict = decide(loaded, tool_name, tool_input, workspace=workspace, home=str(Path.home()))
    if as_json:
        payload = {
            "decision": str(verdict.decision),
            "reason": verdict.reason,
            "rule": verdict.rule,
            "source": verdict.source,
            "profile": loaded.name,
            "sandbox": loaded.sandbox.to_dict(),
            "tool": tool_name,
            "input": tool_input,
        }
        console.print_json(json.dumps(payload))
    else:
        console.print(f"{verdict.decision}: {verdict.reason}", markup=False)
        console.print(f"rule: {verdict.rule or '(none)'}", markup=False)
        console.print(f"profile: {loaded.name} ({loaded.source})", markup=False)
        console.print(f"sandbox: {loaded.sandbox.summary()}", markup=False)
    raise typer.Exit(EXIT_CODES[str(verdict.decision)])


@policy_app.command("profiles")
def profiles() -> None:
    """List the built-in profiles and their default decisions."""
    from agentdeck.governance.profiles import builtin_profile_names, load_profile

    for name in builtin_profile_names():
        p = load_profile(name)
        console.print(f"{name}\tdefault {p.default}\t{p.description}", markup=False)


def _parse_input(text: str | None) -> dict[str, Any]:
    if text is None:
        return {}
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise UsageError(f"--input is not valid JSON: {exc.msg} (column {exc.colno})") from None
    if not isinstance(value, dict):
        raise UsageError('--input must be a JSON object, e.g. \'{"command": "ls"}\'')
    return value
