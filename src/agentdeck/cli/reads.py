"""The read commands, written once: ``ls``, ``show``, ``logs``, ``approvals``,
``asks``, ``queue``.

Each takes the command's own parameters and a ``WireDeck`` (``cli.wire``: the
daemon's JSON when one runs, else a read-only look at the database) and returns
the exit code. Both ways into the CLI end here: the quick path (``cli.quick``)
and the Typer commands when it stepped aside. What is printed is rendered from
the records' ``to_dict()`` (``cli.remote``'s and ``cli.render``'s renderers).
"""

from __future__ import annotations

from agentdeck.cli import out, remote
from agentdeck.cli.wire import ALL_AGENTS, EVENT_PAGE
from agentdeck.errors import UsageError

TYPE_CHECKING = False  # not typing's: its import costs the quick path ~10 ms
if TYPE_CHECKING:
    from agentdeck.cli.wire import WireDeck


def ls(deck: WireDeck, state: list[str] | None, limit: int, tree: bool, as_json: bool) -> int:
    states = remote.states_of(state)
    if tree and states:
        raise UsageError("--tree shows every state; leave out --state")
    agents = deck.tree(limit=limit) if tree else deck.list_agents(states=states, limit=limit)
    orphans = deck.unsupervised(agents)
    if as_json:
        out.print_json([a | {"supervisor_gone": True} if a["id"] in orphans else a for a in agents])
    else:
        remote.print_agents(agents, tree=tree, orphans=orphans)
    return 0


def show(deck: WireDeck, agent: str, as_json: bool) -> int:
    found = deck.get_agent(agent)
    children = deck.list_agents(parent=found["id"], include_archived=True, limit=ALL_AGENTS)
    if as_json:
        out.print_json({**found, "children": [c["id"] for c in children]})
    else:
        remote.print_show(found, children)
    return 0


def logs(deck: WireDeck, agent: str, follow: bool, as_json: bool) -> int:
    from agentdeck.cli.remote_follow import print_event  # the log's commands alone need it

    found = deck.get_agent(agent)
    after = 0
    while batch := deck.events(after=after, agent_id=found["id"], limit=EVENT_PAGE):
        for event in batch:
            print_event(event, as_json)
        after = int(batch[-1]["id"])
    if follow:
        from agentdeck.cli import live_text

        live = live_text.LiveText() if live_text.wanted(as_json) else None
        for event in deck.follow(after=after, agent_id=found["id"], partial=live is not None):
            if live is not None and event["type"] == "partial":
                live.partial(event)
            elif live is None or not live.event(event):
                print_event(event, as_json)
        if live is not None:
            live.close()
    return 0


def approvals(deck: WireDeck, all_: bool, as_json: bool) -> int:
    remote.print_approvals(deck.approvals(states=None if all_ else ["pending"]), as_json)
    return 0


def asks(deck: WireDeck, all_: bool, as_json: bool) -> int:
    remote.print_asks(deck.asks(states=None if all_ else ["pending"]), as_json)
    return 0


def queue(deck: WireDeck, all_: bool, limit: int, as_json: bool) -> int:
    remote.print_queue(deck.merges(limit=limit), all_, as_json)
    return 0
