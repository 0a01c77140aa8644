"""The steering commands against a running daemon, cheap to start.

Both ways into the CLI end here when a daemon runs: the quick path
(``cli.quick``, which parses the arguments without Typer) and the Typer
commands themselves (when the quick path stepped aside). So what a command does
through a daemon is written once. Each function takes the command's own
parameters and returns the exit code. Nothing heavy is imported: records are
the daemon's JSON (each record's ``to_dict()``), and Rich loads only for what
``styled`` leaves to it. Following an agent (``remote_follow``) loads with the
commands that read its log or follow it.
"""

from __future__ import annotations

import time

from agentdeck import jsontext
from agentdeck.cli import out
from agentdeck.cli.quick_url import named, reach
from agentdeck.client.quick import Daemon, api_path
from agentdeck.errors import UsageError
from agentdeck.homedir import home_path

# Not typing's own, nor collections', nor contextlib: their imports (``re``,
# ``enum`` and more) would cost a command a third of its start-up.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence, Set
    from pathlib import Path
    from typing import Any

    from agentdeck.core.agent import AgentSpec

# Spec fields the daemon fills from a template (or, ``owner``, from who asks),
# never sent by a client.
_RESOLVED_FROM_TEMPLATES = frozenset({"template", "tools", "orchestrator", "owner"})


def daemon() -> Daemon | None:
    """The deck ``AGENTDECK_URL`` and ``AGENTDECK_TOKEN`` name, when set; else the
    daemon of this home (``AGENTDECK_HOME``), or None when none runs."""
    return reach(home_path())


# --- records off the wire -----------------------------------------------------------
#
# What the daemon sends is each record's ``to_dict()`` (the API's schemas mirror it),
# so it is printed and rendered as it comes: building the core records back would
# load the dataclass machinery (``inspect`` and all), most of a command's start-up.

# ``merge_queue.PENDING``'s values (a test holds them equal).
MERGE_PENDING = ("queued", "merging")


def spec_body(spec: AgentSpec, *, keep_alive: bool, template: str | None) -> dict[str, Any]:
    """``POST /api/agents``'s body for a spec (what a client may set)."""
    from agentdeck.core.agent import AgentSpec

    fields = set(AgentSpec.__dataclass_fields__) - _RESOLVED_FROM_TEMPLATES
    body = {k: v for k, v in spec.to_dict().items() if v is not None and k in fields}
    body["keep_alive"] = keep_alive
    if template:
        body["agent"] = template
    return body


def states_of(values: list[str] | None) -> list[str] | None:
    if not values:
        return None
    from agentdeck.cli.remote_follow import AGENT_STATES

    if any(v not in AGENT_STATES for v in values):
        raise UsageError(f"unknown state in {values}; states are: {', '.join(AGENT_STATES)}")
    return list(values)


# --- agents ---------------------------------------------------------------------------


def print_agents(
    agents: list[dict[str, Any]], *, tree: bool, orphans: Set[str] = frozenset()
) -> None:
    from agentdeck.cli.render import agents_table, tree_table

    if agents and tree:
        out.show(tree_table(agents))
    elif agents:
        out.show(agents_table(agents, orphans))
    else:
        out.say("no agents yet: start one with `agentdeck run`")
    if orphans:
        out.say(
            f"{len(orphans)} agent(s) shown live have no supervisor: `agentdeck up` "
            "reconciles them (an agent that resumes on restart carries on)"
        )


def print_show(agent: dict[str, Any], children: list[dict[str, Any]]) -> None:
    from agentdeck.cli.render import agent_panel, agents_table

    out.show(agent_panel(agent))
    if children:
        out.say("")
        out.say(f"children ({len(children)}):")
        out.show(agents_table(children))


def run_spec(
    prompt: str,
    *,
    name: str | None,
    cwd: str | None,
    model: str | None,
    allow: list[str] | None,
    deny: list[str] | None,
    append_system_prompt: str | None,
    max_turns: int | None,
    budget_usd: float | None,
    scenario: str | None,
    profile: str | None,
    worktree: bool,
    base: str | None,
    output_schema: str | None = None,
    record: bool = False,
) -> AgentSpec:
    """What ``agentdeck run`` asks for, its paths made absolute (a daemon has its own cwd)."""
    from pathlib import Path

    from agentdeck.core.agent import AgentSpec

    if not prompt.strip():
        raise UsageError("the prompt is empty")
    if base and not worktree:
        raise UsageError("--base is for --worktree: the ref the worktree starts from")
    if budget_usd is not None and not (0 <= budget_usd < float("inf")):  # nan, inf, 1e400
        raise UsageError(
            f"--budget-usd must be a finite amount of USD, not {budget_usd}",
            hint="give a finite amount, e.g. --budget-usd 2.50",
        )
    if worktree and not cwd:
        cwd = "."  # the repository is where the command runs
    resolved_cwd = str(Path(cwd).expanduser().resolve()) if cwd else None
    if scenario and Path(scenario).is_file():
        scenario = str(Path(scenario).resolve())
    return AgentSpec(
        prompt=prompt,
        name=name,
        cwd=resolved_cwd,
        model=model,
        allow=tuple(allow or ()),
        deny=tuple(deny or ()),
        append_system_prompt=append_system_prompt,
        max_turns=max_turns,
        budget_usd=budget_usd,
        scenario=scenario,
        profile=str(Path(profile).resolve()) if profile and Path(profile).is_file() else profile,
        # Templates come from the project: --cwd, or where the command runs.
        project=resolved_cwd or str(Path.cwd().resolve()),
        workspace="worktree" if worktree else None,
        base=base,
        output_schema=schema_arg(output_schema) if output_schema else None,
        record=record,
    )


def schema_arg(value: str) -> dict[str, Any]:
    """``--output-schema``: a built-in's name, or a JSON file holding a schema."""
    import json
    from pathlib import Path

    from agentdeck.core.output_schema import BUILTIN, SCHEMA_MAX_BYTES, resolve_schema

    if value in BUILTIN:
        return resolve_schema(value)
    path = Path(value).expanduser()
    if not path.is_file():
        raise UsageError(
            f"--output-schema: no file {value!r} and no built-in of that name "
            f"(built-in: {', '.join(BUILTIN)})"
        )
    if path.stat().st_size > SCHEMA_MAX_BYTES:
        raise UsageError(f"--output-schema: the file is larger than {SCHEMA_MAX_BYTES:,} bytes")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise UsageError(f"--output-schema: {path} is not a JSON file: {exc}") from None
    try:
        return resolve_schema(data)
    except UsageError as exc:
        raise UsageError(f"--output-schema: {exc}") from None


def run(d: Daemon, spec: AgentSpec, template: str | None, as_json: bool) -> int:
    from agentdeck.cli.remote_follow import follow

    started = d.post("/api/agents", spec_body(spec, keep_alive=False, template=template))
    return follow(d, started["id"], after=0, as_json=as_json, until_turn=False)


def send(d: Daemon, agent: str, text: str, as_json: bool, no_wait: bool = False) -> int:
    """Follow the turn that answers ``text`` (see ``AnswerTo``), or with ``no_wait``
    say it was sent, or queued behind the turn in progress."""
    from agentdeck.cli.remote_follow import AnswerTo, follow, turn_running

    found = d.get(api_path("agents", agent))
    mark = _last_event_id(d)
    running = turn_running(d, found, mark)
    sent = d.post(api_path("agents", found["id"], "messages"), {"text": text})
    if no_wait:
        said = "queued for" if running else "sent to"
        say_agent(sent, f"{said} {sent['id']} ({sent['state']})", as_json)
        return 0
    answer = AnswerTo(running)
    return follow(d, found["id"], after=mark, as_json=as_json, until_turn=True, answer=answer)


def resume(d: Daemon, agent: str, text: str | None, fork: bool, as_json: bool) -> int:
    from agentdeck.cli.remote_follow import follow

    found = d.get(api_path("agents", agent))
    mark = 0 if fork else _last_event_id(d)
    resumed = d.post(api_path("agents", found["id"], "resume"), {"text": text, "fork": fork})
    return follow(d, resumed["id"], after=mark, as_json=as_json, until_turn=True)


def _last_event_id(d: Daemon) -> int:
    """Where the log ends now: follow only what comes after."""
    return int(d.get("/api/stats")["last_event_id"])


def act(d: Daemon, agent: str, action: str, body: dict[str, Any], as_json: bool) -> int:
    """interrupt / kill: the agent as it is afterwards."""
    done = {"interrupt": "interrupted", "kill": "killed"}[action]
    acted = d.post(api_path("agents", agent, action), body)
    say_agent(acted, f"{done} {acted['id']} ({acted['state']})", as_json)
    return 0


def say_agent(agent: dict[str, Any], text: str, as_json: bool) -> None:
    """An agent acted on (its ``to_dict()``): as JSON, or ``text``."""
    if as_json:
        out.print_json(agent)
    else:
        out.say(text)


# --- the daemon -----------------------------------------------------------------------


def down(home_dir: str | Path, timeout: float) -> int:
    """Stop the home's daemon: its agents are brought to a safe stop first. Not with
    ``AGENTDECK_URL`` set: the deck asked for is not this home's to stop."""
    if (address := named()) is not None:
        raise UsageError(
            f"AGENTDECK_URL names the deck at {address.url}: `agentdeck down` stops only "
            "this home's daemon; unset AGENTDECK_URL to stop it",
        )
    from agentdeck.client.locate import HomeDir
    from agentdeck.daemon.home import stop_daemon

    info = stop_daemon(HomeDir(home_dir), timeout)
    out.say(
        f"agentdeck daemon (pid {info.pid}) stopped"
        if info is not None
        else f"no daemon running for {home_dir}"
    )
    return 0


def status(d: Daemon, as_json: bool) -> int:
    stats = d.get("/api/stats")
    health = d.readiness()
    info = d.info
    if as_json:
        out.print_json(
            {
                "running": True,
                "url": info.url,
                "pid": info.pid,
                "started_at": info.started_at,
                "stats": stats,
                "health": health,
            }
        )
        return 0
    if info.started_at is None:  # a deck by URL: its process is not ours to see
        out.say(f"agentdeck deck at {info.url}")
    else:
        up = int(time.time() - info.started_at)
        out.say(f"agentdeck daemon on {info.url} (pid {info.pid}), up {up}s")
    by_state = stats.get("agents_by_state", {})
    out.say("agents: " + (", ".join(f"{n} {s}" for s, n in by_state.items()) or "none"))
    out.say(f"cost: ${stats.get('cost_usd', 0.0):.4f}")
    out.say(health_line(health))
    return 0


def health_line(health: dict[str, Any] | None) -> str:
    """``/readyz``'s answer in a line: the status, the loop's lag, what is not ok."""
    if health is None:
        return "health: unknown (this daemon predates /readyz: agentdeck down && agentdeck up)"
    lag = health.get("lag") or {}
    said = f"health: {health.get('status', '?')}"
    if lag:
        said += f" (event loop lag p99 {lag['p99'] * 1000:.0f} ms, max {lag['max'] * 1000:.0f} ms)"
    reasons = health.get("reasons") or []
    return said + "".join(f"\n  {reason}" for reason in reasons)


# --- the inboxes ----------------------------------------------------------------------


# ``ApprovalState``'s and ``AskState``'s values (a test holds them equal).
APPROVAL_STATES = ("pending", "allowed", "denied", "expired", "cancelled")
ASK_STATES = ("pending", "answered", "expired", "cancelled", "delivered")


def print_records(items: Sequence[dict[str, Any]], as_json: bool, *, none: str, table: str) -> None:
    """A list of records (each its ``to_dict()``): JSON, a line saying there are none,
    or ``render``'s table."""
    if as_json:
        out.print_json(list(items))
    elif not items:
        out.say(none)
    else:
        from agentdeck.cli import render

        out.show(getattr(render, table)(items))


def print_approvals(items: list[dict[str, Any]], as_json: bool) -> None:
    print_records(items, as_json, none="no approval requests waiting", table="approvals_table")


def answer_approval(
    d: Daemon,
    ref: str,
    decision: str,
    message: str | None,
    remember: str | None,
    as_json: bool,
) -> int:
    body = {
        "decision": decision,
        "always": remember is not None,
        "scope": remember or "persistent",
        "message": message,
    }
    say_answered(d.post(api_path("approvals", ref), body), as_json)
    return 0


def say_answered(answered: dict[str, Any], as_json: bool) -> None:
    """An answered approval (its ``to_dict()``)."""
    if as_json:
        out.print_json(answered)
        return
    a = answered
    remembered = f" and remembered ({a['remember']})" if a.get("remember") else ""
    out.say(f"{a['state']} {a['id']}: {a['tool']} for agent {a['agent_id']}{remembered}")


def print_asks(items: list[dict[str, Any]], as_json: bool) -> None:
    print_records(items, as_json, none="no questions waiting", table="asks_table")


def answer_ask(d: Daemon, ref: str, text: str, as_json: bool) -> int:
    say_answered_ask(d.post(api_path("asks", ref), {"answer": text}), as_json)
    return 0


def say_answered_ask(answered: dict[str, Any], as_json: bool) -> None:
    """An answered question (its ``to_dict()``)."""
    if as_json:
        out.print_json(answered)
    else:
        out.say(f"answered {answered['id']} (asked by agent {answered['agent_id']})")


# --- memory ---------------------------------------------------------------------------


def memory_search(d: Daemon, query: str, project: str | None, limit: int, as_json: bool) -> int:
    params: dict[str, Any] = {"q": query, "limit": limit, "project": project}
    print_hits(query, d.get("/api/memory/search", params)["hits"], as_json)
    return 0


def print_hits(query: str, hits: list[dict[str, Any]], as_json: bool) -> None:
    print_records(hits, as_json, none=f"no memory matches {query!r}", table="hits_table")


# --- the merge queue ------------------------------------------------------------------

RECENT_MERGES = 5  # ended entries shown without --all


def print_queue(entries: list[dict[str, Any]], all_: bool, as_json: bool) -> None:
    """Merge entries, each its ``MergeEntry.result()`` (what the API sends)."""
    if as_json:
        out.say(jsontext.dumps(entries, indent=2))
    else:
        out.say(queue_text(entries, recent=None if all_ else RECENT_MERGES))


def queue_text(entries: list[dict[str, Any]], *, recent: int | None) -> str:
    """The pending entries in the order they will be taken, each with its place in
    its repository's queue; then how the last ones ended."""
    pending = sorted(
        (e for e in entries if e["state"] in MERGE_PENDING), key=lambda e: e["enqueued_at"]
    )
    ended = [e for e in entries if e["state"] not in MERGE_PENDING][:recent]
    lines: list[str] = []
    places: dict[str, int] = {}
    for e in pending:
        places[e["repo"]] = places.get(e["repo"], 0) + 1
        where = "merging now" if e["state"] == "merging" else f"#{places[e['repo']]}"
        lines.append(f"{where:>11}  {describe_merge(e)}\n             in {e['repo']}")
    if not pending:
        lines.append("nothing waiting to merge")
    if ended:
        lines.append("recent:" if recent else "ended:")
        lines += [f"  {describe_merge(e)}" for e in ended]
    return "\n".join(lines)


def describe_merge(e: dict[str, Any]) -> str:
    """``MergeEntry.describe`` of an entry's dict: what, where, and how it stands."""
    test = f", test: {e['test']}" if e.get("test") else ""
    head = f"{e['id'][:8]}  {e['branch']} → {e['target']} ({e['strategy']}{test})"
    host = f" on {e['owner_host']}" if e.get("owner_host") else ""
    return f"{head}  {e['state']}{host}" + (f": {e['reason']}" if e.get("reason") else "")
