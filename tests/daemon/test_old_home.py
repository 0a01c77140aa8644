"""A home an older agentdeck left behind with a token nobody has.

An older version read an empty (or whitespace) token file as the token "" and, on
a deck without users, gave user ``admin`` a token for it: ``create_token`` made a
random one instead, shown to nobody. Removing the empty file (the fix a start on
it names) gave a new token file whose token was nobody's, and so did writing a
token into it: the daemon started, and every request was a 401.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from agentdeck.core.roles import Role
from agentdeck.store.store import Store
from agentdeck.store.users import FILE_TOKEN_NAME, UserStore
from tests.support.daemonproc import Daemon
from tests.support.deckcli import deck, deck_env

pytestmark = [pytest.mark.anyio, pytest.mark.cli]


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return deck_env(tmp_path)


async def old_home(env: dict[str, str], *, with_token: bool = True) -> Path:
    """The home as the older version left it: an empty token file, and ``admin``
    with a token nobody has (or, cut short between the two writes, none)."""
    home = Path(env["AGENTDECK_HOME"])
    home.mkdir(parents=True)
    (home / "token").write_text("\n")

    async with Store.open(home / "agentdeck.db") as store:
        users = UserStore(store)
        if with_token:
            assert await users.bootstrap("") is not None  # what the older version called
        else:
            await users.add_user("admin", Role.ADMIN)
    return home / "token"


def tokens(env: dict[str, str]) -> list[dict[str, object]]:
    listed = deck(env, "tokens", "list", "--json")
    assert listed.code == 0, listed.err
    return list(listed.json())


@pytest.mark.parametrize("with_token", [True, False])
async def test_the_token_file_made_after_the_fix_logs_in_as_admin(
    env: dict[str, str], daemons: list[Daemon], with_token: bool
) -> None:
    token_file = await old_home(env, with_token=with_token)
    refused = deck(env, "up", timeout=60)
    assert refused.code != 0 and f"rm {token_file}" in refused.err  # the fix it names
    token_file.unlink()

    daemon = await Daemon(env).start()
    daemons.append(daemon)
    async with daemon.api() as api:
        me = await api.get("/api/whoami")
    assert me.status_code == 200, me.text
    assert me.json()["user"] == "admin" and me.json()["role"] == "admin"
    assert deck(env, "ls").code == 0  # the CLI, through the daemon, with the token file
    file_tokens = [t for t in tokens(env) if t["name"] == FILE_TOKEN_NAME]
    # The token nobody had is revoked; the token file's is admin's.
    assert [t["revoked_at"] is None for t in file_tokens] == [False] * with_token + [True]


async def test_a_token_written_into_the_file_later_is_admins(
    env: dict[str, str], daemons: list[Daemon]
) -> None:
    token_file = await old_home(env)
    token_file.write_text("my-own-token-for-this-deck-0123456789\n")
    daemon = await Daemon(env).start()
    daemons.append(daemon)
    async with daemon.api() as api:
        assert (await api.get("/api/whoami")).json()["user"] == "admin"


async def test_a_token_too_short_to_keep_is_refused_naming_the_fix(env: dict[str, str]) -> None:
    token_file = await old_home(env)
    token_file.write_text("short\n")
    done = deck(env, "up", timeout=60)
    assert done.code != 0, done.out
    assert str(token_file) in done.err and "Traceback" not in done.err
    assert f"rm {token_file}" in done.err
    assert deck(env, "status").code == 1


async def test_a_revoked_token_file_token_stays_revoked_and_the_start_says_so(
    env: dict[str, str],
) -> None:
    home = Path(env["AGENTDECK_HOME"])
    home.mkdir(parents=True)
    secret = "the-token-file-token-0123456789"
    (home / "token").write_text(secret + "\n")
    (home / "token").chmod(0o600)
    async with Store.open(home / "agentdeck.db") as store:
        users = UserStore(store)
        await users.bootstrap(secret)
        (token,) = await users.list_tokens()
        await users.revoke_token(token.id)  # an admin's deliberate act
    started = deck(env, "up", "--detach", timeout=60)
    try:
        assert started.code == 0, started.err
    finally:
        assert deck(env, "down", timeout=60).code == 0
    log = (home / "logs" / "daemon.log").read_text()
    assert "the token file's token is revoked or expired" in log
    assert "remove the token file and start again" in log
    async with Store.open(home / "agentdeck.db") as store:
        assert await UserStore(store).authenticate(secret) is None  # the revocation held
