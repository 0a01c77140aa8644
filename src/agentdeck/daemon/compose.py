"""The composition root: the one place the deck's object graph is built.

Every way agentdeck runs gets its objects here: the daemon and one CLI command
without a daemon (``open_deck``, ``embedded`` for the latter), an ``agentdeck run``
in this process (``build_runner`` + ``build_orchestration``), the MCP servers. No
constructor of the graph builds its collaborators, subscribes to the store or
starts a task: this module passes the collaborators in and starts what runs, in
order (the hub follows the log before orchestration listens to the writer).
"""

from __future__ import annotations

from agentdeck.daemon.deck.facade import Collaborators, Deck
from agentdeck.daemon.hub import EventHub
from agentdeck.daemon.identity import Identity
from agentdeck.governance.governor import Governor
from agentdeck.hooks.bridge import HookBridge
from agentdeck.memory.service import Memory
from agentdeck.notify.config import load_targets
from agentdeck.notify.service import Notifier
from agentdeck.orchestration.service import Orchestrator
from agentdeck.runner import sdk_private
from agentdeck.runner.budgets import DailyBudgets
from agentdeck.runner.merge_queue import MergeQueue
from agentdeck.runner.payloads import PayloadStore
from agentdeck.runner.runner import Runner
from agentdeck.runner.runner_base import RunnerParts
from agentdeck.runner.steering import Steering
from agentdeck.runner.warm import WarmPool
from agentdeck.settings import Settings
from agentdeck.store.store import Store
from agentdeck.store.usage import UsageStore
from agentdeck.store.users import UserStore
from agentdeck.worktrees import Worktrees
from agentdeck.worktrees.checkpoints import Checkpoints

# How long a node trusts what it proved of a token before asking the shared
# database again (a revocation or a role change made on another node).
IDENTITY_RECHECK_SECONDS = 2.0


def open_store(settings: Settings) -> Store:
    """The deck's store (made or migrated to the schema's head): the home's file,
    or the PostgreSQL database of ``AGENTDECK_DATABASE_URL``."""
    settings.ensure_home()
    return Store.open(settings.database, batch_size=settings.event_batch_size)


def build_runner(store: Store, settings: Settings, *, warm_pool: int = 0) -> Runner:
    """A runner and what it works with. ``warm_pool``: Claude Code processes started
    ahead per template (the daemon's ``settings.warm_pool``; one command keeps none)."""
    governor = Governor(store, settings)
    parts = RunnerParts(
        governor=governor,
        memory=Memory(store, settings),
        daily=DailyBudgets(store),
        worktrees=Worktrees(settings.worktrees_dir),
        checkpoints=Checkpoints(
            settings.checkpoints_dir, max_file_bytes=settings.checkpoint_max_file_bytes
        ),
        merges=MergeQueue(store, governor, settings.worktrees_dir / ".merges"),
        payloads=PayloadStore(settings.payloads_dir, raw=settings.raw_payloads),
        warm=WarmPool(warm_pool),
    )
    return Runner(store, settings, parts)


def build_orchestration(store: Store, runner: Runner, settings: Settings) -> Orchestrator:
    """Orchestration over ``runner``, started: it follows the store's writes and
    serves the runner's sessions their deck tools (``Orchestrator.close`` ends it)."""
    orchestration = Orchestrator(store, runner, settings)
    orchestration.start()
    return orchestration


async def open_deck(settings: Settings, *, embedded: bool = False, notify: bool = True) -> Deck:
    """The deck of ``settings``' home, its feeds started. ``embedded``: for one
    command in this process (the CLI without a daemon): no warm pool, no
    notification targets, and its agents stop (not suspend) when it closes.
    ``notify`` False: no notification targets (a runner host: the API nodes notify)."""
    # A bad notification config stops the start, before anything is opened.
    targets = [] if embedded or not notify else load_targets(settings)
    if not embedded:
        # The daemon starts Claude Codes: it imports the SDK (and all of mcp, ~1 s)
        # now, not on its loop as its first agent starts. One command imports it
        # only if it starts one (nothing else of the deck imports it).
        sdk_private.finish()
    store = open_store(settings)
    try:
        runner = build_runner(store, settings, warm_pool=0 if embedded else settings.warm_pool)
        # On a shared database a daemon's new agents wait for a runner host that fits
        # (``agentdeck up`` is one unless --no-runner); one command runs its own.
        runner.queueing = settings.database_url is not None and not embedded
        hub = EventHub(store)
        await hub.start()
        runner.partials = hub  # the text being written, live (never stored)
        parts = Collaborators(
            steering=Steering(store, runner),
            hooks=HookBridge(store, runner.governor, runner.memory),
            orchestration=build_orchestration(store, runner, settings),
            notifier=Notifier(settings, store, hub, targets),
            identity=Identity(
                UserStore(store),
                session_ttl=settings.session_ttl_seconds,
                # Several nodes on one database: what another node revoked ends here too.
                recheck_seconds=IDENTITY_RECHECK_SECONDS if settings.database_url else None,
            ),
            usage=UsageStore(store),
        )
    except BaseException:
        await store.close()
        raise
    return Deck(settings, store, runner, hub, parts, embedded=embedded)
