"""``agentdeck users`` and ``agentdeck tokens``: who may use the deck, and with what.

Through the deck (``cli.decks.opened_deck``): the daemon's when one runs (the
caller's token must be an admin's: the API refuses others), else the home's own in
this process (whoever can read the home's database is its admin; its users are
bootstrapped from the token file as the daemon does). A new token's secret is
printed once and kept only hashed.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Annotated, TypeVar

import typer

from agentdeck.cli import out
from agentdeck.cli.context import run_async
from agentdeck.cli.decks import opened_deck
from agentdeck.settings import Settings

if TYPE_CHECKING:
    from agentdeck.core.deck import Deck

T = TypeVar("T")
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON.")]

users_app = typer.Typer(help="Users of the deck and their roles (admin, operator, viewer).")
tokens_app = typer.Typer(help="API tokens: created (shown once), listed, revoked.")


def register(app: typer.Typer) -> None:
    app.add_typer(users_app, name="users")
    app.add_typer(tokens_app, name="tokens")


def on_deck(act: Callable[[Deck], Awaitable[T]]) -> T:
    """``act`` on the deck this command gets (``opened_deck``), its answer."""

    async def go(settings: Settings) -> T:
        async with opened_deck(settings) as deck:
            return await act(deck)

    return run_async(go)


def _when(ts: float | None) -> str:
    return "never" if ts is None else time.strftime("%Y-%m-%d %H:%M", time.localtime(ts))


@users_app.command("add")
def users_add(
    name: Annotated[str, typer.Argument(help="Lower-case letters, digits, '_', '.', '-'.")],
    role: Annotated[str, typer.Option("--role", help="admin, operator or viewer.")] = "viewer",
) -> None:
    """Add a user (then `agentdeck tokens create --user NAME` gives them a token)."""
    from agentdeck.core.roles import Role

    parsed = Role.parse(role)  # bad input: before anything
    user = on_deck(lambda deck: deck.add_user(name, parsed))
    out.say(f"added {user.name} ({user.role})")


@users_app.command("list")
def users_list(as_json: JsonOpt = False) -> None:
    """Users and their roles."""
    users = on_deck(lambda deck: deck.users())
    if as_json:
        out.print_json([u.to_dict() for u in users])
        return
    for u in users:
        out.say(f"{u.name:<24} {u.role:<9} since {_when(u.created_at)}")


@users_app.command("remove")
def users_remove(name: Annotated[str, typer.Argument(help="The user's name.")]) -> None:
    """Remove a user; their tokens are revoked at once (the last admin stays)."""
    revoked = on_deck(lambda deck: deck.remove_user(name))
    out.say(f"removed {name}; {len(revoked)} token(s) revoked")


@tokens_app.command("create")
def tokens_create(
    user: Annotated[
        str | None, typer.Option("--user", help="Whose (default: yours; admin without a daemon).")
    ] = None,
    expires: Annotated[
        str | None, typer.Option("--expires", help="Lifetime, e.g. 30d, 12h (default: none).")
    ] = None,
    name: Annotated[str, typer.Option("--name", help="What it is for, e.g. 'ci'.")] = "",
    as_json: JsonOpt = False,
) -> None:
    """Create a token. Its secret is printed this once: keep it."""
    from agentdeck.core.roles import parse_duration

    if expires:
        parse_duration(expires)  # bad input: before anything
    info, secret = on_deck(lambda deck: deck.create_token(user, name=name, expires=expires))
    if as_json:
        out.print_json({**info.to_dict(), "token": secret})
        return
    out.say(secret)
    out.say(
        f"token {info.id} for {info.user}, expires {_when(info.expires_at)}: "
        "this is the only time it is shown",
    )


@tokens_app.command("list")
def tokens_list(
    user: Annotated[str | None, typer.Option("--user", help="Only this user's.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Tokens (never their secrets): id, user, name, expiry, revocation."""
    tokens = on_deck(lambda deck: deck.tokens(user=user or None))
    if as_json:
        out.print_json([t.to_dict() for t in tokens])
        return
    for t in tokens:
        state = (
            f"revoked {_when(t.revoked_at)}" if t.revoked_at else f"expires {_when(t.expires_at)}"
        )
        out.say(f"{t.id:<12} {t.user:<20} {t.name:<20} {state}")


@tokens_app.command("revoke")
def tokens_revoke(
    ref: Annotated[str, typer.Argument(help="The token's id (or a prefix).")],
) -> None:
    """Revoke a token: it stops working at once, open streams and sessions included."""
    info = on_deck(lambda deck: deck.revoke_token(ref))
    out.say(f"revoked {info.id} ({info.user})")
