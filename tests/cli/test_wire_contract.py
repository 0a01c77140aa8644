"""The read side of the Deck in its wire form (``cli.wire``): the daemon's JSON and
a peek at the database answer the same reads with the same dicts, and those are
the Deck's own records' ``to_dict()`` (a merge entry's ``result()``).

One home, filled through the store; a real daemon (``agentdeck up``) serving it,
then none: ``DaemonWire`` and ``PeekWire`` on the same database, held to the
daemon's Deck behind the API (``RemoteDeck``) and, once it stopped, to the Deck
embedded in this process (``cli.decks.opened_deck``)."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from agentdeck.cli import wire
from agentdeck.cli.decks import is_remote, opened_deck
from agentdeck.cli.wire import DaemonWire, PeekWire
from agentdeck.client import quick
from agentdeck.core.agent import AgentState
from agentdeck.core.approvals import Approval, ApprovalState
from agentdeck.core.asks import AskKind, AskState
from agentdeck.core.deck import Deck
from agentdeck.core.merge_queue import MergeEntry, MergeState
from agentdeck.errors import NotFound, UsageError
from agentdeck.store import Store
from agentdeck.store.approvals import ApprovalStore
from agentdeck.store.asks import AskStore
from agentdeck.store.merges import MergeStore
from agentdeck.store.peek import Peek
from tests.conftest import make_settings
from tests.store.conftest import make_agent, text
from tests.store.test_asks_and_tree import ask
from tests.support.daemonproc import Daemon
from tests.support.deckcli import deck_env

if TYPE_CHECKING:
    from agentdeck.cli.wire import WireDeck

pytestmark = [pytest.mark.anyio, pytest.mark.cli]

DONE, ERROR = AgentState.DONE, AgentState.ERROR
HOSTILE = "[red]x[/red] \x1b[2J`rm -rf /`"  # markup, an escape sequence, a command


async def fill(db_path: Path) -> None:
    """A board of finished agents (nothing a daemon's start reconciles): a tree, an
    archived one, a hostile name; their logs; approvals, asks and merges in
    several states."""
    store = Store.open(db_path)
    try:
        for agent in (
            make_agent("a1aaaa", name="lead", state=DONE, created_at=1000.0),
            make_agent("a1aabb", name="twin", state=DONE, created_at=1001.0, parent_id="a1aaaa"),
            make_agent("a1aacc", name="kid", state=ERROR, created_at=1001.5, parent_id="a1aaaa"),
            make_agent("a2cccc", name="twin", state=DONE, created_at=1002.0, parent_id="a1aabb"),
            make_agent("a3dddd", name="old", state=DONE, created_at=999.0, parent_id="a1aaaa"),
            make_agent("a4eeee", name=HOSTILE, state=ERROR, created_at=1003.0),
        ):
            await store.save_agent(agent)
        await store.set_archived("a3dddd")
        await store.append([text("a1aaaa", n) for n in range(5)])
        await store.append([text("a4eeee", n) for n in range(3)])
        now = time.time()
        approvals = ApprovalStore(store)
        for i, state in enumerate([ApprovalState.PENDING, ApprovalState.ALLOWED]):
            await approvals.create(
                Approval(
                    id=f"ap{i}", agent_id="a1aaaa", tool="Bash", input={"command": HOSTILE},
                    reason="asked by rule", grant_key="Bash:rm", state=state,
                    created_at=now + i, expires_at=now + 3600,
                )
            )  # fmt: skip
        asks = AskStore(store)
        await asks.create(ask("ak1", "a1aabb", at=now))
        await asks.create(ask("ak2", "a1aabb", kind=AskKind.NOTE, at=now + 1))
        await asks.create(ask("ak3", "a2cccc", at=now + 2))
        await asks.decide("ak3", AskState.ANSWERED, by="user:cli", answer="yes")
        merges = MergeStore(store)
        for i, state in enumerate([MergeState.LANDED, MergeState.REFUSED, MergeState.CANCELLED]):
            await merges.create(
                MergeEntry(
                    id=f"m{i}234567890", agent_id="a1aabb", repo="/r", branch=f"agent/{i}",
                    target="main", strategy="squash", test=f"pytest {HOSTILE}", state=state,
                    by="user:cli", enqueued_at=now + i, finished_at=now + i + 1,
                    reason="told so", outcome={"attempts": 1},
                )
            )  # fmt: skip
    finally:
        await store.close()


# Each read: what it asks of a WireDeck, and the same of the Deck (its records).
Read = tuple[Callable[["WireDeck"], Any], Callable[[Deck], Any]]


def reads() -> dict[str, Read]:
    def recs(found: Any) -> Any:
        return [r.to_dict() for r in found]

    def public(found: Any) -> Any:  # asks as the API shows them: the questions apart
        return [r.to_public() for r in found]

    return {
        "list_agents": (
            lambda w: w.list_agents(limit=50),
            lambda d: _run(d.list_agents(limit=50), recs),
        ),
        "list_agents states": (
            lambda w: w.list_agents(states=["error"], limit=50),
            lambda d: _run(d.list_agents(states=[ERROR], limit=50), recs),
        ),
        "list_agents roots": (
            lambda w: w.list_agents(roots=True, limit=2),
            lambda d: _run(d.list_agents(roots=True, limit=2), recs),
        ),
        "children (archived too)": (
            lambda w: w.list_agents(parent="a1aaaa", include_archived=True, limit=10_000),
            lambda d: _run(
                d.list_agents(parent="a1aaaa", include_archived=True, limit=10_000), recs
            ),
        ),
        "tree": (lambda w: w.tree(limit=50), lambda d: _run(d.tree(limit=50), recs)),
        "get_agent by name": (
            lambda w: w.get_agent("lead"),
            lambda d: _run(d.get_agent("lead"), lambda a: a.to_dict()),
        ),
        "get_agent by prefix": (
            lambda w: w.get_agent("a4ee"),
            lambda d: _run(d.get_agent("a4ee"), lambda a: a.to_dict()),
        ),
        "events": (
            lambda w: w.events(after=2, agent_id="a1aaaa"),
            lambda d: _run(d.events(after=2, agent_id="a1aaaa"), recs),
        ),
        "events paged": (
            lambda w: w.events(after=0, agent_id="a4eeee", limit=2),
            lambda d: _run(d.events(after=0, agent_id="a4eeee", limit=2), recs),
        ),
        "approvals pending": (
            lambda w: w.approvals(states=["pending"]),
            lambda d: _run(d.approvals(states=[ApprovalState.PENDING]), recs),
        ),
        "approvals all": (lambda w: w.approvals(), lambda d: _run(d.approvals(), recs)),
        "asks pending": (
            lambda w: w.asks(states=["pending"]),
            lambda d: _run(d.asks(states=[AskState.PENDING]), public),
        ),
        # Every state named: the in-process Deck's asks(states=None) is the pending
        # ones (orchestration.inbox.list_questions), RemoteDeck's every state.
        "asks all": (lambda w: w.asks(), lambda d: _run(d.asks(states=[*AskState]), public)),
        "merges": (
            lambda w: w.merges(limit=2),
            lambda d: _run(d.merges(limit=2), lambda found: [e.result() for e in found]),
        ),
    }


async def _run(call: Any, then: Callable[[Any], Any]) -> Any:
    return then(await call)


async def expected_of(deck: Deck) -> dict[str, Any]:
    return {name: await of_deck(deck) for name, (_, of_deck) in reads().items()}


def answers_of(w: WireDeck) -> dict[str, Any]:
    return {name: of_wire(w) for name, (of_wire, _) in reads().items()}


def refusals_of(w: WireDeck) -> list[tuple[type[Exception], str]]:
    """What unknown and ambiguous refs raise: the class and what it says."""
    got = []
    for ref in ("nobody", "twin", "a1aa", "a1a_", "a1a%", "a1aaaa?x=1", "a1aaaa#x", ""):
        with pytest.raises((NotFound, UsageError)) as info:
            w.get_agent(ref)
        got.append((type(info.value), str(info.value)))
    return got


async def test_both_wires_answer_the_decks_records(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    env = deck_env(tmp_path)
    home = Path(env["AGENTDECK_HOME"])
    home.mkdir()
    db_path = home / "agentdeck.db"
    await fill(db_path)
    monkeypatch.setenv("AGENTDECK_HOME", str(home))
    settings = make_settings(tmp_path)
    assert settings.home_dir == home

    daemon = await Daemon(env).start()
    try:
        d = quick.connect(home)
        assert d is not None
        chosen = wire.wire()
        assert isinstance(chosen, DaemonWire)
        peek = Peek.open(db_path)
        assert peek is not None
        by_daemon, by_peek = DaemonWire(d), PeekWire(peek)
        with peek:
            answers = answers_of(by_daemon)
            assert answers_of(by_peek) == answers
            assert refusals_of(by_peek) == refusals_of(by_daemon)
        async with opened_deck(settings) as deck:
            assert is_remote(deck)
            assert await expected_of(deck) == answers
    finally:
        daemon.stop()

    chosen = wire.wire()
    assert isinstance(chosen, PeekWire)
    with chosen.db:
        assert answers_of(chosen) == answers  # the daemon's stop changed none of it
        async with opened_deck(settings) as deck:
            assert not is_remote(deck)
            assert await expected_of(deck) == answers

    # What the reads show is what was written: the board (roots newest first, then
    # level by level, oldest first, archived too), the hostile name as it is.
    assert [a["id"] for a in answers["tree"]] == [
        "a4eeee", "a1aaaa", "a3dddd", "a1aabb", "a1aacc", "a2cccc",
    ]  # fmt: skip
    assert "a3dddd" not in {a["id"] for a in answers["list_agents"]}
    assert [a["id"] for a in answers["children (archived too)"]] == ["a1aacc", "a1aabb", "a3dddd"]
    assert answers["get_agent by prefix"]["name"] == HOSTILE
    assert [e["id"] for e in answers["events paged"]] == [6, 7]
    assert [a["id"] for a in answers["approvals pending"]] == ["ap0"]
    assert [a["id"] for a in answers["asks pending"]] == ["ak1"]
    assert [a["id"] for a in answers["asks all"]] == ["ak3", "ak1"]
    assert [e["id"] for e in answers["merges"]] == ["m2234567890", "m1234567890"]
