"""The one place the CLI chooses its Deck (``core.deck.Deck``).

When a daemon runs for this home, every command goes through it (``RemoteDeck``
over its API, with the home's token): one supervisor per home, never a second one
beside it. When none runs, the command opens the deck in this process (the
daemon's own ``Deck``, embedded: no API, no warm pool, no notifications) and closes
it on the way out, stopping what it started. A command is written once against
the interface and does not know which it got.

The read commands of the quick path (``ls``, ``show``, ``logs``, the inbox lists,
``queue``) are written against the same reads in wire form instead (``cli.wire``:
the daemon's JSON or a read-only look at the database, chosen in ``wire.wire()``):
building the core records costs a command ~35 ms of imports.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from agentdeck.cli.early import Early
    from agentdeck.cli.ending import Ending
    from agentdeck.client.deck import RemoteDeck
    from agentdeck.core.agent import AgentSpec
    from agentdeck.core.deck import Deck
    from agentdeck.settings import Settings


@contextlib.asynccontextmanager
async def opened_deck(
    settings: Settings,
    *,
    ending: Ending | None = None,
    booting: tuple[AgentSpec, str | None] | None = None,
) -> AsyncIterator[Deck]:
    """The daemon's deck if one runs for ``settings.home_dir``, else one in this
    process, closed (its agents stopped, its log flushed) when the block ends.

    For a command that supervises the agents of its own deck: ``ending`` (its stop
    signals) stops them when a signal comes; ``booting`` (the spec and template of
    the agent it is about to create) spawns that agent's Claude Code before the
    deck opens, for the deck to adopt (``cli.early``: it boots meanwhile). What a
    daemon runs is the daemon's: neither applies to it."""
    from agentdeck.client import quick

    if settings.url:  # a deck named by URL and token: that one, whatever the home has
        async with url_deck(settings) as by_url:
            yield by_url
        return
    if quick.connect(settings.home_dir) is not None:  # a file read: no HTTP imported
        from agentdeck.cli.client import connect

        client = await connect(settings)
        if client is not None:
            from agentdeck.client.deck import RemoteDeck

            async with RemoteDeck(client, owns_http=True) as remote:
                yield remote
            return
    early = await _spawn_early(settings, *booting) if booting is not None else None
    try:
        from agentdeck.cli.importing import importing

        with importing():  # the SDK, the store, the runner, orchestration, in one go
            from agentdeck.daemon.compose import open_deck
            from agentdeck.runner import sdk_private

            sdk_private.finish()
        local = await open_deck(settings, embedded=True)
    except BaseException:
        if early is not None:  # never handed over: it must not outlive the command
            await _to_the_end(early.close())
        raise
    try:
        if early is not None:
            local.adopt(early.warm, early.model)  # the runner's now: it stops it unclaimed
        if ending is not None:
            ending.supervise(local)  # SIGTERM/SIGHUP stop its agents from now on
        try:
            yield local
        finally:
            if ending is not None:
                await ending.stopped()  # while the store is open: the agents say so
    finally:
        await local.close()


async def _spawn_early(settings: Settings, spec: AgentSpec, template: str | None) -> Early | None:
    """Claude Code for the agent of ``spec`` (from ``template``) as the deck will
    create it, spawned now (``cli.early``); None when it cannot be."""
    from dataclasses import replace

    from agentdeck.cli.importing import importing
    from agentdeck.core.usage import LOCAL_OWNER
    from agentdeck.runner import sdk_private

    # What spawns Claude Code: the SDK's options and transport, not yet the rest of
    # the SDK (and all of mcp with it), nor the store (imported while it boots).
    sdk_private.defer()
    with importing():
        from agentdeck.cli.early import spawn
    if template:  # as the embedded deck's create_agent makes the spec (the same order)
        from agentdeck.core.templates import apply_template
        from agentdeck.orchestration.templates import resolve

        spec = apply_template(resolve(settings, template, spec.project or spec.cwd), spec)
    if spec.owner is None:
        spec = replace(spec, owner=LOCAL_OWNER)
    return await spawn(settings, spec)


async def _to_the_end(work: Awaitable[None]) -> None:
    """``work`` run to its end even if this task is cancelled meanwhile (a signal):
    what it stops must not outlive the process."""
    task = asyncio.ensure_future(work)
    while not task.done():
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.shield(task)
    task.result()


async def daemon_deck(settings: Settings) -> RemoteDeck:
    """The daemon's deck, for what only a running daemon can do (a hand-started
    session's orchestrator tools: what they start must outlive this process);
    ``DaemonUnavailable`` when none runs for this home. The caller closes it."""
    from agentdeck.cli.client import connect
    from agentdeck.client.deck import RemoteDeck
    from agentdeck.errors import DaemonUnavailable

    if settings.url:
        return by_url(settings)
    client = await connect(settings)
    if client is None:
        raise DaemonUnavailable(
            f"no agentdeck daemon is running for {settings.home_dir}",
            hint="start it with `agentdeck up --detach`",
        )
    return RemoteDeck(client, owns_http=True)


def by_url(settings: Settings) -> RemoteDeck:
    """The deck ``AGENTDECK_URL`` names, with ``AGENTDECK_TOKEN``; ``ConfigError`` for a
    URL or token the hook client would refuse too (``hooks.hookclient_http``: plain
    http off loopback without ``AGENTDECK_ALLOW_INSECURE_URL``, a token that would
    break its header). The caller closes it."""
    from agentdeck.client.deck import RemoteDeck
    from agentdeck.errors import ConfigError
    from agentdeck.hooks.hookclient_http import Refused, configured

    assert settings.url is not None
    token = settings.token.get_secret_value() if settings.token is not None else ""
    environ = {"AGENTDECK_URL": settings.url, "AGENTDECK_TOKEN": token}
    if settings.allow_insecure_url:
        environ["AGENTDECK_ALLOW_INSECURE_URL"] = "1"
    try:
        configured(environ)
    except Refused as exc:
        raise ConfigError(str(exc)) from None
    return RemoteDeck.connect(settings.url.rstrip("/"), token, client="cli")


@contextlib.asynccontextmanager
async def url_deck(settings: Settings) -> AsyncIterator[RemoteDeck]:
    remote = by_url(settings)
    try:
        yield remote
    finally:
        await remote.aclose()


def is_remote(deck: Deck) -> bool:
    """Whether ``deck`` is a daemon's (what is started through it outlives this
    process) rather than this process's own."""
    from agentdeck.client.deck import RemoteDeck

    return isinstance(deck, RemoteDeck)
