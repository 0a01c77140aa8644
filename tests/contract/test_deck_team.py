"""The team part of the Deck interface against both implementations: users, tokens,
notification targets and dead letters.

Each deck here has notification targets configured in its home before it starts
(``good``, a real local HTTP receiver that takes what it is sent; ``broken``, one
that answers 500 until a test mends it), so this module opens decks of its own:
``local``, the daemon's Deck in this process with its notifier running;
``remote``, ``RemoteDeck`` over a real daemon subprocess. The same calls give the
same records and the same error classes both ways; who may call what is the API's
(a member's token is ``Forbidden`` a route above its role).
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from agentdeck.client.deck import RemoteDeck
from agentdeck.core.agent import AgentSpec
from agentdeck.core.deck import Deck
from agentdeck.core.notify_status import DeadLetter, TargetStatus, TestSent
from agentdeck.core.roles import Role, TokenInfo, User
from agentdeck.daemon.compose import open_deck
from agentdeck.daemon.deck import Deck as DaemonDeck
from agentdeck.errors import (
    AgentdeckError,
    DaemonUnavailable,
    DeliveryFailed,
    Forbidden,
    NotFound,
    Refused,
    UsageError,
)
from tests.conftest import make_settings
from tests.contract.helpers import SETTLE_SECONDS, unique
from tests.support.daemonproc import Daemon
from tests.support.deckcli import deck_env
from tests.support.receiver import Receiver
from tests.support.waiting import eventually

pytestmark = [pytest.mark.anyio, pytest.mark.cli]

# A path, control characters, over 64 characters, upper case, empty: no user's name.
HOSTILE_NAMES = ["../etc", "a/b", "bob\x00", "bob\nroot", "b" * 1000, "Bob", "", "bob?x=1"]


@dataclass
class Side:
    """One deck of the module, its receivers, and the daemon behind it (remote)."""

    deck: Deck
    good: Receiver
    broken: Receiver
    url: str | None = None  # the daemon's, for a member's own connection


def write_targets(home: Path, good: Receiver, broken: Receiver) -> None:
    home.mkdir(parents=True, exist_ok=True)
    targets: list[dict[str, Any]] = [
        # Only a test (any kind) reaches ``good``: no agent is ever over budget here.
        {"name": "good", "kind": "webhook", "url": good.url, "events": ["budget_warning"]},
        {"name": "broken", "kind": "webhook", "url": broken.url, "events": ["agent_done"]},
    ]
    path = home / "notify.yaml"
    path.write_text(yaml.safe_dump({"targets": targets}))
    path.chmod(0o600)


@pytest.fixture(scope="module")
def receivers() -> Iterator[dict[str, tuple[Receiver, Receiver]]]:
    made = {side: (Receiver(), Receiver(then=500)) for side in ("local", "remote")}
    yield made
    for pair in made.values():
        for receiver in pair:
            receiver.close()


@pytest.fixture(scope="module")
async def local_side(
    tmp_path_factory: pytest.TempPathFactory, receivers: dict[str, tuple[Receiver, Receiver]]
) -> AsyncIterator[Side]:
    good, broken = receivers["local"]
    settings = make_settings(
        tmp_path_factory.mktemp("local-team"), notify_attempts=2, notify_backoff_seconds=0.01
    )
    write_targets(settings.home_dir, good, broken)
    deck = await open_deck(settings)
    await deck.start_notifying("http://127.0.0.1:9")
    try:
        yield Side(deck, good, broken)
    finally:
        await deck.close()


@pytest.fixture(scope="module")
async def remote_side(
    tmp_path_factory: pytest.TempPathFactory, receivers: dict[str, tuple[Receiver, Receiver]]
) -> AsyncIterator[Side]:
    good, broken = receivers["remote"]
    env = deck_env(
        tmp_path_factory.mktemp("remote-team"),
        AGENTDECK_NOTIFY_ATTEMPTS="2",
        AGENTDECK_NOTIFY_BACKOFF_SECONDS="0.01",
    )
    write_targets(Path(env["AGENTDECK_HOME"]), good, broken)
    daemon = await Daemon(env).start()
    try:
        async with RemoteDeck.connect(daemon.url, daemon.token, client="cli") as deck:
            yield Side(deck, good, broken, url=daemon.url)
    finally:
        daemon.stop()


@pytest.fixture(params=["local", "remote"])
def side(request: pytest.FixtureRequest) -> Side:
    found: Side = request.getfixturevalue(f"{request.param}_side")
    return found


async def refused_now(side: Side, secret: str) -> bool:
    """Whether the deck's daemon refuses ``secret`` (in-process: the identity the
    daemon would ask)."""
    if side.url is None:
        assert isinstance(side.deck, DaemonDeck)
        return await side.deck.identity.by_token(secret) is None
    async with RemoteDeck.connect(side.url, secret, client="cli") as theirs:
        try:
            await theirs.notify_targets()
        except AgentdeckError as exc:
            assert not isinstance(exc, Forbidden)  # not their role: their token
            return True
    return False


# -- users ------------------------------------------------------------------------------


async def test_a_user_is_added_listed_and_removed(side: Side) -> None:
    deck = side.deck
    name = unique("op")
    added = await deck.add_user(name, Role.OPERATOR)
    assert isinstance(added, User) and (added.name, added.role) == (name, Role.OPERATOR)
    assert added in await deck.users()
    with pytest.raises(Refused):
        await deck.add_user(name, Role.VIEWER)
    info, _ = await deck.create_token(name, name="laptop")

    revoked = await deck.remove_user(name)
    assert revoked == [info.id]
    assert name not in [u.name for u in await deck.users()]
    assert [t.revoked_at is not None for t in await deck.tokens(user=name)] == [True]
    with pytest.raises(NotFound):
        await deck.remove_user(name)


async def test_the_last_admin_stays(side: Side) -> None:
    admins = [u.name for u in await side.deck.users() if u.role is Role.ADMIN]
    if not admins:  # an in-process deck nobody bootstrapped: make it its one admin
        admins = [(await side.deck.add_user(unique("root"), Role.ADMIN)).name]
    if len(admins) == 1:
        with pytest.raises(Refused, match="last admin"):
            await side.deck.remove_user(admins[0])
        assert admins[0] in [u.name for u in await side.deck.users()]


async def test_hostile_user_names_are_refused(side: Side) -> None:
    deck = side.deck
    before = await deck.users()
    for name in HOSTILE_NAMES:
        with pytest.raises(UsageError):
            await deck.add_user(name, Role.ADMIN)
        with pytest.raises(NotFound):
            await deck.remove_user(name)
        with pytest.raises(UsageError):
            await deck.create_token(name or "\x00")
    assert await deck.users() == before


# -- tokens -----------------------------------------------------------------------------


async def test_a_token_is_shown_once_listed_revoked_and_refused(side: Side) -> None:
    deck = side.deck
    name = unique("ci")
    await deck.add_user(name, Role.VIEWER)
    info, secret = await deck.create_token(name, name="ci", expires="30d")
    assert isinstance(info, TokenInfo) and secret and secret not in repr(info)
    assert (info.user, info.name, info.revoked_at) == (name, "ci", None)
    assert info.expires_at is not None
    assert abs(info.expires_at - (time.time() + 30 * 86400)) < 600

    listed = await deck.tokens(user=name)
    assert [t.id for t in listed] == [info.id]
    everyone = await deck.tokens()
    assert info.id in [t.id for t in everyone]
    assert secret not in repr(everyone) and secret not in str([t.to_dict() for t in everyone])
    assert not await refused_now(side, secret)

    revoked = await deck.revoke_token(info.id[:8])  # a unique prefix
    assert revoked.id == info.id and revoked.revoked_at is not None
    assert (await deck.tokens(user=name))[0].revoked_at == pytest.approx(revoked.revoked_at)
    assert await refused_now(side, secret)
    with pytest.raises(Refused):
        await deck.revoke_token(info.id)


async def test_a_member_is_forbidden_what_their_role_does_not_allow(remote_side: Side) -> None:
    """Who may is the API's: through RemoteDeck an operator's token cannot manage
    users or tokens, a viewer's cannot send a test; each reads the targets."""
    deck, url = remote_side.deck, remote_side.url
    assert url is not None
    operator, viewer = unique("op"), unique("view")
    await deck.add_user(operator, Role.OPERATOR)
    await deck.add_user(viewer, Role.VIEWER)
    _, op_secret = await deck.create_token(operator)
    _, view_secret = await deck.create_token(viewer)
    async with RemoteDeck.connect(url, op_secret, client="cli") as theirs:
        for call in (
            lambda: theirs.users(),
            lambda: theirs.add_user(unique("x"), Role.ADMIN),
            lambda: theirs.remove_user(viewer),
            lambda: theirs.tokens(),
            lambda: theirs.create_token(),
            lambda: theirs.revoke_token("tk0000"),
        ):
            with pytest.raises(Forbidden, match="admin role"):
                await call()
        assert {t.name for t in await theirs.notify_targets()} == {"good", "broken"}
        assert (await theirs.test_notify_target("good")).target == "good"
    async with RemoteDeck.connect(url, view_secret, client="cli") as theirs:
        with pytest.raises(Forbidden, match="operator role"):
            await theirs.test_notify_target("good")
        assert await theirs.dead_letters() == await deck.dead_letters()
    assert viewer in [u.name for u in await deck.users()]  # nothing was done


async def test_a_token_of_nobody_is_the_caller_s_own(remote_side: Side) -> None:
    """No user named: through the API the token's user (the home's token: admin)."""
    info, _ = await remote_side.deck.create_token(name="mine")
    assert info.user == "admin"
    await remote_side.deck.revoke_token(info.id)


# -- notifications ------------------------------------------------------------------------


async def test_targets_are_listed_and_a_test_is_delivered(side: Side) -> None:
    deck = side.deck
    targets = {t.name: t for t in await deck.notify_targets()}
    assert set(targets) == {"good", "broken"}
    good = targets["good"]
    assert isinstance(good, TargetStatus)
    assert (good.kind, good.signed, good.events) == ("webhook", False, ("budget_warning",))
    assert good.url == side.good.url.removesuffix("/hook") + "/…"  # the origin, no path
    assert good.deliveries is not None

    before = len(side.good.received)
    sent = await deck.test_notify_target("good")
    assert sent == TestSent(target="good", kind="test")
    assert len(side.good.received) == before + 1
    assert b"agentdeck test notification" in side.good.received[-1].body

    with pytest.raises(DeliveryFailed, match="HTTP 500"):
        await deck.test_notify_target("broken")
    for name in ("nope", "", "good/../broken", "good?x=1"):
        with pytest.raises(NotFound):
            await deck.test_notify_target(name)


async def test_a_dead_letter_of_a_failing_target_is_replayed(side: Side) -> None:
    deck = side.deck
    name = unique("done")
    agent = await deck.create_agent(
        AgentSpec(prompt="hello", name=name, scenario="chat"), keep_alive=False
    )

    async def buried() -> DeadLetter | None:
        for letter in await deck.dead_letters(target="broken"):
            if letter.payload.get("agent", {}).get("id") == agent.id:
                return letter
        return None

    letter = await eventually(buried, timeout=SETTLE_SECONDS, what="the agent_done dead letter")
    assert (letter.kind, letter.state, letter.attempts) == ("agent_done", "dead", 2)
    assert "HTTP 500" in letter.reason
    assert await deck.dead_letter(letter.id[:8]) == letter

    with pytest.raises(DeliveryFailed):
        await deck.replay_dead_letter(letter.id)
    assert (await deck.dead_letter(letter.id)).attempts == 3
    side.broken.then = 200
    try:
        replayed = await deck.replay_dead_letter(letter.id)
    finally:
        side.broken.then = 500
    assert (replayed.id, replayed.state) == (letter.id, "replayed")
    assert replayed.replayed_at is not None
    assert letter.id not in [d.id for d in await deck.dead_letters()]
    assert letter.id in [d.id for d in await deck.dead_letters(include_replayed=True)]
    with pytest.raises(Refused, match="replayed already"):
        await deck.replay_dead_letter(letter.id)


async def test_unknown_refs_and_bad_values(side: Side) -> None:
    deck = side.deck
    for call in (
        lambda: deck.dead_letter("dlnope00"),
        lambda: deck.dead_letter(""),
        lambda: deck.dead_letter("dl/../x"),
        lambda: deck.replay_dead_letter("dlnope00"),
        lambda: deck.replay_dead_letter(""),
        lambda: deck.revoke_token("tknope00"),
        lambda: deck.revoke_token(""),
        lambda: deck.remove_user("nobody-here"),
        lambda: deck.create_token("nobody-here"),
    ):
        with pytest.raises(NotFound):
            await call()
    for bad in (
        lambda: deck.dead_letters(limit=0),
        lambda: deck.dead_letters(limit=1001),
        lambda: deck.create_token(name="x", expires="soon"),
        lambda: deck.create_token(name="x", expires="0d"),
        lambda: deck.add_user(unique("r"), "root"),  # type: ignore[arg-type]
    ):
        with pytest.raises(UsageError):
            await bad()
    assert await deck.dead_letters(target="nope") == []
    assert await deck.tokens(user="nobody-here") == []


# -- the CLI's own deck, without a daemon ----------------------------------------------------


async def test_an_embedded_deck_has_the_token_file_s_admin_and_sends_nothing(
    tmp_path: Path,
) -> None:
    deck = await open_deck(make_settings(tmp_path), embedded=True)
    try:
        assert [(u.name, u.role) for u in await deck.users()] == [("admin", Role.ADMIN)]
        info, _ = await deck.create_token(name="mine")
        assert info.user == "admin"  # no user named: the machine's owner
        for call in (
            lambda: deck.notify_targets(),
            lambda: deck.test_notify_target("good"),
            lambda: deck.dead_letters(),
            lambda: deck.dead_letter("dl00"),
            lambda: deck.replay_dead_letter("dl00"),
        ):
            with pytest.raises(DaemonUnavailable, match="sent by the daemon"):
                await call()
    finally:
        await deck.close()
