"""``agentdeck policy check``'s judgement, cheap to start (the quick path runs it too)."""

from __future__ import annotations

import os

from agentdeck.cli import out
from agentdeck.core.profile_ref import names_a_file
from agentdeck.errors import AgentdeckError, UsageError

# Not typing's own, nor pathlib, json or contextlib: this runs on the quick path,
# where their imports would cost more than the daemon's answer.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any

    from agentdeck.client.quick import Daemon

# Distinct exit codes per decision; 2 stays "bad usage" (click's and ours).
EXIT_CODES = {"allow": 0, "deny": 1, "ask": 3}
# A daemon that does not answer by then is passed by: the call is judged here instead.
DAEMON_SECONDS = 2.0
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
    *,
    daemon: Daemon | None = None,
) -> int:
    """Judge one tool call under a profile; the exit code says the decision.

    With ``daemon`` (and a built-in profile's name) the daemon judges it: its policy
    engine is loaded already, which loading here costs more than the whole call.
    Whatever it cannot answer (an unknown profile, a daemon gone) is judged here: the
    judgement needs no daemon, and the errors are this command's own.
    """
    if call is not None and (tool is not None or input_json is not None):
        raise UsageError("give either CALL or --tool/--input, not both")
    if call is not None:
        tool_name, tool_input = parse_call(call)
    elif tool is not None:
        tool_name, tool_input = tool, _parse_input(input_json)
    else:
        raise UsageError("nothing to check: give CALL (e.g. 'Bash(ls)') or --tool and --input")
    # What ``Path(cwd).resolve()`` and ``Path.home()`` give (both are these calls).
    workspace = os.path.realpath(os.fspath(cwd) if cwd else os.getcwd())  # noqa: PTH109
    found = None
    if daemon is not None and not names_a_file(profile):
        body = {"tool": tool_name, "input": tool_input, "profile": profile, "cwd": workspace,
                "home": os.path.expanduser("~")}  # noqa: PTH111  # fmt: skip
        try:
            found = daemon.call("POST", "/api/policy/check", body=body, timeout=DAEMON_SECONDS)
        except AgentdeckError:
            found = None  # not answered: judged here, at once
    if found is None:
        found = _judged_here(tool_name, tool_input, profile, workspace)
    if as_json:
        keys = ("decision", "reason", "rule", "source", "profile", "sandbox")
        out.print_json({**{k: found[k] for k in keys}, "tool": tool_name, "input": tool_input})
    else:
        out.say(f"{found['decision']}: {found['reason']}")
        out.say(f"rule: {found['rule'] or '(none)'}")
        out.say(f"profile: {found['profile']} ({found['profile_source']})")
        out.say(f"sandbox: {found['sandbox_summary']}")
    return EXIT_CODES[str(found["decision"])]


def _judged_here(
    tool: str, tool_input: dict[str, Any], profile: str, workspace: str
) -> dict[str, Any]:
    """The verdict from this process's policy engine, in the API's words."""
    from pathlib import Path

    from agentdeck.cli.context import load_settings
    from agentdeck.core.policy import decide
    from agentdeck.governance.profiles import load_guarded

    # As agents get it: the deck's secrets denied (the settings say where they are).
    loaded = load_guarded(profile, load_settings())
    verdict = decide(loaded, tool, tool_input, workspace=workspace, home=str(Path.home()))
    return {
        "decision": str(verdict.decision),
        "reason": verdict.reason,
        "rule": verdict.rule,
        "source": verdict.source,
        "profile": loaded.name,
        "profile_source": loaded.source,
        "sandbox": loaded.sandbox.to_dict(),
        "sandbox_summary": loaded.sandbox.summary(),
    }


def _parse_input(text: str | None) -> dict[str, Any]:
    if text is None:
        return {}
    import json

    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise UsageError(f"--input is not valid JSON: {exc.msg} (column {exc.colno})") from None
    if not isinstance(value, dict):
        raise UsageError('--input must be a JSON object, e.g. \'{"command": "ls"}\'')
    return value
