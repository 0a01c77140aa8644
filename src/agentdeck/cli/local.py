"""The read-only steering commands straight on the database, when no daemon runs.

Through ``store.peek`` (the standard library's sqlite3): both ways into the CLI
end here, the quick path directly and the Typer commands once ``Store.open`` has
created or migrated the file. Each function returns the exit code, or None when
the database cannot be peeked at (missing, or not at the schema's head).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agentdeck.cli import out, remote, remote_follow
from agentdeck.homedir import home_dir
from agentdeck.store.peek import Peek

if TYPE_CHECKING:
    from pathlib import Path

    from agentdeck.core.agent import Agent


def peek(home: Path | None = None) -> Peek | None:
    return Peek.open((home or home_dir()) / "agentdeck.db")


def ls(db: Peek, state: list[str] | None, limit: int, tree: bool, as_json: bool) -> int:
    from agentdeck.errors import UsageError

    states = remote.states_of(state)
    if tree and states:
        raise UsageError("--tree shows every state; leave out --state")
    if tree:
        roots = db.agents(limit=limit, roots=True)
        agents = roots + db.descendants([a.id for a in roots])
    else:
        agents = db.agents(states=[str(s) for s in states or []], limit=limit)
    # Without a daemon nobody reconciled the store: say which live agents have no
    # supervisor any more (a daemon's answers are reconciled already).
    orphans = unsupervised(agents)
    if as_json:
        out.print_json(
            [a.to_dict() | ({"supervisor_gone": True} if a.id in orphans else {}) for a in agents]
        )
    else:
        remote.print_agents([a.to_dict() for a in agents], tree=tree, orphans=orphans)
    return 0


def unsupervised(agents: list[Agent]) -> set[str]:
    """Agents the store has as live whose supervisor is gone (an ``agentdeck run``
    or a daemon that died): live only in name until something reconciles them."""
    live = [a for a in agents if a.state.is_live]
    if not live:
        return set()
    from agentdeck.core.agent import AgentSource
    from agentdeck.runner import procs

    def gone(a: Agent) -> bool:
        watcher = a.pid if a.source is AgentSource.EXTERNAL else a.owner_pid
        return not procs.runs_since(watcher, a.updated_at)  # a reused pid is not it

    return {a.id for a in live if gone(a)}


def show(db: Peek, agent: str, as_json: bool) -> int:
    found = db.find_agent(agent)
    children = db.children([found.id])
    if as_json:
        out.print_json({**found.to_dict(), "children": [c.id for c in children]})
    else:
        remote.print_show(found.to_dict(), [c.to_dict() for c in children])
    return 0


def logs(db: Peek, agent: str, as_json: bool) -> int:
    found = db.find_agent(agent)
    after = 0
    while batch := db.events(found.id, after=after, limit=remote.EVENT_PAGE):
        for event in batch:
            after = event.id
            remote_follow.print_event(event.to_dict(), as_json)
    return 0


def approvals(db: Peek, all_: bool, as_json: bool) -> int:
    items = db.approvals(None if all_ else ["pending"])
    remote.print_approvals([a.to_dict() for a in items], as_json)
    return 0


def asks(db: Peek, all_: bool, as_json: bool) -> int:
    items = db.asks(None if all_ else ["pending"])
    remote.print_asks([a.to_dict() for a in items], as_json)
    return 0


def queue(db: Peek, all_: bool, limit: int, as_json: bool) -> int:
    remote.print_queue([e.result() for e in db.merges(limit)], all_, as_json)
    return 0
