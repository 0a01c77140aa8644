"""``agentdeck policy check``'s judgement, cheap to start (the quick path runs it too)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from agentdeck.cli import out
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


def judge(
    call: str | None,
    tool: str | None,
    input_json: str | None,
    profile: str,
    cwd: str | Path | None,
    as_json: bool,
) -> int:
    """Judge one tool call under a profile; the exit code says the decision."""
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
    workspace = str((Path(cwd) if cwd else Path.cwd()).resolve())
    verdict = decide(loaded, tool_name, tool_input, workspace=workspace, home=str(Path.home()))
    if as_json:
        out.print_json(
            {
                "decision": str(verdict.decision),
                "reason": verdict.reason,
                "rule": verdict.rule,
                "source": verdict.source,
                "profile": loaded.name,
                "sandbox": loaded.sandbox.to_dict(),
                "tool": tool_name,
                "input": tool_input,
            }
        )
    else:
        out.say(f"{verdict.decision}: {verdict.reason}")
        out.say(f"rule: {verdict.rule or '(none)'}")
        out.say(f"profile: {loaded.name} ({loaded.source})")
        out.say(f"sandbox: {loaded.sandbox.summary()}")
    return EXIT_CODES[str(verdict.decision)]


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
