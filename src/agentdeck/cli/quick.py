"""The quick path: steering commands answered without loading the Typer app.

A person typing ``agentdeck ls`` feels every 100 ms, and scripts and chat
bridges call these commands in loops; importing Typer, the settings and an HTTP
library costs several times what the answer does. So ``run_quick`` parses the
arguments with a table generated from the Typer app itself (``quick_spec``,
written by ``scripts/cli_reference.py``, held current by a test) and calls the
same functions the Typer commands call (``remote``) when a daemon runs.

It steps aside (returns None) for anything it is not sure of: an option it does
not know, a value Typer would refuse, ``--help`` of a command, no daemon for a
command that needs one. The Typer app then does what it always did, error
messages included, so the quick path never changes what a command means.
"""

from __future__ import annotations

import os
import sys

from agentdeck import jsontext
from agentdeck.errors import AgentdeckError

# Not typing's own: its import (with ``re`` and ``enum``) costs this path ~10 ms.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any


def _with_daemon(fn: Callable[[Any], int]) -> int | None:
    from agentdeck.cli import remote

    d = remote.daemon()
    return None if d is None else fn(d)


def _remote(name: str) -> Callable[..., int | None]:
    """A command whose ``remote`` function takes the command's own parameters."""

    def handle(**kw: Any) -> int | None:
        from agentdeck.cli import remote

        return _with_daemon(lambda d: getattr(remote, name)(d, **kw))

    return handle


def _read(name: str) -> Callable[..., int | None]:
    """A read command (``reads``) on ``wire.wire()``: the daemon's answers when one
    runs, else the database's."""

    def handle(**kw: Any) -> int | None:
        from agentdeck.cli import reads, wire

        deck = wire.wire()
        if deck is None:
            return None  # no database yet, or an older one: the Typer path makes it
        try:
            if kw.get("follow") and isinstance(deck, wire.PeekWire):
                return None  # the Typer path follows it, polling as the settings say
            return int(getattr(reads, name)(deck, **kw))
        finally:
            deck.close()

    return handle


def _act(action: str) -> Callable[..., int | None]:
    def handle(agent: str, as_json: bool, tree: bool = True) -> int | None:
        from agentdeck.cli import remote

        body = {"children": tree} if action == "kill" else {}
        return _with_daemon(lambda d: remote.act(d, agent, action, body, as_json))

    return handle


def _answer(decision: str) -> Callable[..., int | None]:
    def handle(
        ref: str,
        always: bool,
        scope: str,
        as_json: bool,
        message: str | None = None,
        reason: str | None = None,
    ) -> int | None:
        from agentdeck.cli import remote

        note = message if decision == "allow" else reason
        remember = scope if always else None
        return _with_daemon(
            lambda d: remote.answer_approval(d, ref, decision, note, remember, as_json)
        )

    return handle


def _run(agent: str | None, as_json: bool, **kw: Any) -> int:
    from agentdeck.cli import remote

    spec = remote.run_spec(**kw)
    d = remote.daemon()
    if d is not None:
        return remote.run(d, spec, agent, as_json)
    # Embedded: here rather than in the Typer app, whose import would delay the
    # spawn of Claude Code (cli.early) by ~0.3 s.
    from agentdeck.cli.run_agent import run_agent

    code = run_agent(spec, agent, as_json)
    from agentdeck.cli.context import exit_now

    exit_now(code)  # when everything was closed: no interpreter teardown
    return code


def _answer_ask(ref: str, text: str, as_json: bool) -> int | None:
    from agentdeck.cli import remote

    return _with_daemon(lambda d: remote.answer_ask(d, ref, text, as_json))


def _status(as_json: bool) -> int:
    from agentdeck.cli import out, remote
    from agentdeck.homedir import home_path

    d = remote.daemon()
    if d is not None:
        return remote.status(d, as_json)
    if as_json:
        out.print_json({"running": False, "home": home_path()})
    else:
        out.say(f"no daemon running for {home_path()}")
    return 1


def _down(timeout: float) -> int:
    from agentdeck.cli import remote
    from agentdeck.homedir import home_path

    return remote.down(home_path(), timeout)


def _memory_search(query: str, project: str | None, limit: int, as_json: bool) -> int | None:
    from agentdeck.cli import remote

    where = None
    if project is not None:  # pathlib, only for a command that names a project
        from agentdeck.memory.projects import project_of

        where = project_of(project)
    return _with_daemon(lambda d: remote.memory_search(d, query, where, limit, as_json))


def _usage(by: str, since: str, bucket: str, as_json: bool) -> int | None:
    from agentdeck.cli.usage_out import usage

    return _with_daemon(lambda d: usage(d, by, since, bucket, as_json))


def _policy_check(**kw: Any) -> int:
    from agentdeck.cli import remote
    from agentdeck.cli.verdict import judge

    # The daemon judges when one runs (its engine is loaded); the judgement needs no
    # daemon, so one that cannot be reached is passed by.
    try:
        d = remote.daemon()
    except AgentdeckError:
        d = None
    return judge(**kw, daemon=d)


HANDLERS: dict[str, Callable[..., int | None]] = {
    "ls": _read("ls"),
    "show": _read("show"),
    "logs": _read("logs"),
    "send": _remote("send"),
    "interrupt": _act("interrupt"),
    "kill": _act("kill"),
    "resume": _remote("resume"),
    "run": _run,
    "approvals": _read("approvals"),
    "approve": _answer("allow"),
    "deny": _answer("deny"),
    "asks": _read("asks"),
    "answer": _answer_ask,
    "status": _status,
    "down": _down,
    "memory search": _memory_search,
    "policy check": _policy_check,
    "queue": _read("queue"),
    "usage": _usage,
}


def run_quick(argv: list[str]) -> int | None:
    """The exit code of a command answered here, or None to hand it to Typer."""
    from agentdeck.cli import quick_spec

    if argv == ["--help"]:
        sys.stdout.write(quick_spec.HELP)
        return 0
    for words in (2, 1):
        name = " ".join(argv[:words])
        if len(argv) >= words and name in HANDLERS:
            params = parse(jsontext.loads(quick_spec.COMMANDS[name]), argv[words:])
            if params is None:
                return None
            return _call(HANDLERS[name], params)
    return None


def _call(handler: Callable[..., int | None], params: dict[str, Any]) -> int | None:
    from agentdeck.cli import out

    try:
        code = handler(**params)
        sys.stdout.flush()
        return code
    except AgentdeckError as exc:
        return out.report(exc)
    except KeyboardInterrupt:
        sys.stderr.write("interrupted\n")
        return 130
    except BrokenPipeError:  # `agentdeck logs x --json | head`: the reader has had enough
        # Python's docs: point stdout at devnull so the exit's flush fails no more;
        # exit 1, as Rich does when its own write meets a closed pipe.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1


# --- arguments, by the app's own table --------------------------------------------------


def parse(spec: list[dict[str, Any]], args: list[str]) -> dict[str, Any] | None:
    """The command's parameters from ``args``, as Typer would pass them; None when
    anything is unsure (then Typer parses, and explains what is wrong)."""
    values: dict[str, Any] = {p["name"]: p["default"] for p in spec}
    options = {opt: p for p in spec if p["kind"] == "option" for opt in p["opts"]}
    negations = {opt: p for p in spec if p["kind"] == "option" for opt in p["secondary"]}
    positional: list[str] = []
    seen_multiple: set[str] = set()
    rest = iter(args)
    for arg in rest:
        if arg == "--":
            positional += list(rest)
            break
        if not arg.startswith("-") or arg == "-":
            positional.append(arg)
            continue
        flag, eq, inline = arg.partition("=")
        if flag in negations and not eq:
            values[negations[flag]["name"]] = False
            continue
        p = options.get(flag)
        if p is None:
            return None  # --help, an unknown option, a short cluster: Typer's
        if p["flag"]:
            if eq:
                return None
            values[p["name"]] = True
            continue
        if not eq:
            inline = next(rest, "\0")
            if inline == "\0":  # an option without its value (no argv holds a NUL)
                return None
        value = convert(p, inline)
        if value is None:
            return None
        if p["multiple"]:  # repeated: each value adds to the list
            earlier = values[p["name"]] if p["name"] in seen_multiple else []
            values[p["name"]] = [*earlier, value]
            seen_multiple.add(p["name"])
        else:
            values[p["name"]] = value
    arguments = [p for p in spec if p["kind"] == "argument"]
    if len(positional) > len(arguments):
        return None
    for p, raw in zip(arguments, positional, strict=False):
        value = convert(p, raw)
        if value is None:
            return None
        values[p["name"]] = value
    if any(p["required"] for p in arguments[len(positional) :]):
        return None
    return values


def convert(p: dict[str, Any], raw: str) -> Any:
    """``raw`` as the parameter's type, or None when Typer would refuse it."""
    kind = p["type"]
    try:
        value: Any = int(raw) if kind == "int" else float(raw) if kind == "float" else raw
    except ValueError:
        return None
    if kind == "choice" and raw not in p["choices"]:
        return None
    if p["min"] is not None and value < p["min"]:
        return None
    if p["max"] is not None and value > p["max"]:
        return None
    return value
