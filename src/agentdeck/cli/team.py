"""``agentdeck users`` and ``agentdeck tokens``: who may use the deck, and with what.

Through the daemon's API when one runs (the caller's token must be an admin's),
else on the store directly (whoever can read the home's database is its admin).
A new token's secret is printed once and kept only hashed.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Annotated, Any

import typer

from agentdeck.cli import out
from agentdeck.cli.client import DaemonClient, connect
from agentdeck.cli.context import opened_store, run_async
from agentdeck.settings import Settings

if TYPE_CHECKING:  # the store loads only when a command runs without a daemon
    from agentdeck.store.users import UserStore

JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON.")]

users_app = typer.Typer(help="Users of the deck and their roles (admin, operator, viewer).")
tokens_app = typer.Typer(help="API tokens: created (shown once), listed, revoked.")


def register(app: typer.Typer) -> None:
    app.add_typer(users_app, name="users")
    app.add_typer(tokens_app, name="tokens")


Remote = Callable[[DaemonClient], Awaitable[Any]]
Local = Callable[["UserStore"], Awaitable[Any]]


def _either(remote: Remote, local: Local) -> Any:
    async def go(settings: Settings) -> Any:
        client = await connect(settings)
        if client is not None:
            try:
                return await remote(client)
            finally:
                await client.aclose()
        from agentdeck.daemon.home import ensure_token
        from agentdeck.store.users import UserStore

        async with opened_store(settings) as store:
            users = UserStore(store)
            # As the daemon would at its start: the token file's token stays the admin's.
            file_token = ensure_token(settings)
            if await users.bootstrap(file_token) is None:
                await users.restore_file_token(file_token)
            return await local(users)

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

    parsed = Role.parse(role)
    user = _either(
        lambda c: c.call("POST", "/api/users", json={"name": name, "role": str(parsed)}),
        lambda s: _dict(s.add_user(name, parsed)),
    )
    out.say(f"added {user['name']} ({user['role']})")


@users_app.command("list")
def users_list(as_json: JsonOpt = False) -> None:
    """Users and their roles."""
    users = _either(
        lambda c: _key(c.call("GET", "/api/users"), "users"),
        lambda s: _dicts(s.list_users()),
    )
    if as_json:
        out.print_json(users)
        return
    for u in users:
        out.say(f"{u['name']:<24} {u['role']:<9} since {_when(u['created_at'])}")


@users_app.command("remove")
def users_remove(name: Annotated[str, typer.Argument(help="The user's name.")]) -> None:
    """Remove a user; their tokens are revoked at once (the last admin stays)."""
    revoked = _either(
        lambda c: _key(c.call("DELETE", f"/api/users/{name}"), "revoked_tokens"),
        lambda s: s.remove_user(name),
    )
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

    lifetime = parse_duration(expires) if expires else None  # bad input: before anything
    body = {"user": user, "name": name, "expires": expires}

    async def local(s: UserStore) -> dict[str, Any]:
        expires_at = time.time() + lifetime if lifetime else None
        info, secret = await s.create_token(user or "admin", name=name, expires_at=expires_at)
        return {**info.to_dict(), "token": secret}

    made = _either(lambda c: c.call("POST", "/api/tokens", json=body), local)
    if as_json:
        out.print_json(made)
        return
    out.say(made["token"])
    out.say(
        f"token {made['id']} for {made['user']}, expires {_when(made['expires_at'])}: "
        "this is the only time it is shown",
    )


@tokens_app.command("list")
def tokens_list(
    user: Annotated[str | None, typer.Option("--user", help="Only this user's.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Tokens (never their secrets): id, user, name, expiry, revocation."""
    params = {"user": user} if user else {}
    tokens = _either(
        lambda c: _key(c.call("GET", "/api/tokens", params=params), "tokens"),
        lambda s: _dicts(s.list_tokens(user=user)),
    )
    if as_json:
        out.print_json(tokens)
        return
    for t in tokens:
        state = (
            f"revoked {_when(t['revoked_at'])}"
            if t["revoked_at"]
            else (f"expires {_when(t['expires_at'])}")
        )
        out.say(f"{t['id']:<12} {t['user']:<20} {t['name']:<20} {state}")


@tokens_app.command("revoke")
def tokens_revoke(
    ref: Annotated[str, typer.Argument(help="The token's id (or a prefix).")],
) -> None:
    """Revoke a token: it stops working at once, open streams and sessions included."""
    info = _either(
        lambda c: c.call("DELETE", f"/api/tokens/{ref}"), lambda s: _dict(s.revoke_token(ref))
    )
    out.say(f"revoked {info['id']} ({info['user']})")


async def _key(call: Awaitable[Any], key: str) -> Any:
    return (await call)[key]


async def _dict(call: Awaitable[Any]) -> dict[str, Any]:
    found: dict[str, Any] = (await call).to_dict()
    return found


async def _dicts(call: Awaitable[Any]) -> list[dict[str, Any]]:
    return [item.to_dict() for item in await call]
