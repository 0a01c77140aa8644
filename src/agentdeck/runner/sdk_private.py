"""Every use of the Claude Agent SDK's private surface, in one place.

The deck drives Claude Code through ``claude-agent-sdk``, and a few things it
needs the SDK does not offer publicly: the process of a client (to stop its
tree, to know its pid), the command line a client would spawn (to tell whether
a warm process fits an agent), a transport spawned before its client exists
(the warm pool, ``cli.early``), an answer to a process that is gone dropped
instead of raised in the SDK's own task, and the package's ``__init__`` run
after its submodules (a quicker ``agentdeck run``). Each is one small function
here, saying why; nothing else in agentdeck reaches past the SDK's public names.

The SDK is pinned to one exact version (pyproject.toml), and
``tests/runner/test_sdk_private.py`` checks that every private name used here is
still there with the shape this module needs. To upgrade the SDK: change the pin,
``uv lock``, run that test; where it names an attribute that moved, adapt the
one function here that uses it, then run tests/runner.

Nothing of the SDK is imported at module level: ``agentdeck run``'s quick path
imports this module before the SDK (``defer``).
"""

from __future__ import annotations

import functools
import importlib.util
import logging
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeAlias

if TYPE_CHECKING:
    from claude_agent_sdk import ClaudeSDKClient
    from claude_agent_sdk._internal.transport.subprocess_cli import SubprocessCLITransport
    from claude_agent_sdk.types import ClaudeAgentOptions

    # A warm process's transport, for the annotations of the modules that hold one.
    Transport: TypeAlias = SubprocessCLITransport

logger = logging.getLogger(__name__)

PACKAGE = "claude_agent_sdk"
# Where the transport module lives (private: ``_internal``).
TRANSPORT_MODULE = "claude_agent_sdk._internal.transport.subprocess_cli"
_RESPONSE = '{"type": "control_response"'

# -- the package's __init__ after its submodules --------------------------------
#
# ``import claude_agent_sdk`` imports ``mcp.types``, and with it the whole of
# ``mcp`` (its package imports mcp's client, server and FastMCP): ~0.6 s, most of
# what an embedded ``agentdeck run`` imported before it could spawn Claude Code.
# The spawn itself needs only the options (``claude_agent_sdk.types``) and the
# subprocess transport, which import none of it (private: the SDK may one day
# import a name of the package there; the canary test checks it does not).
#
# ``defer()`` puts the package in ``sys.modules`` without running its ``__init__``
# (``importlib.util.module_from_spec``), so that those submodules load alone;
# ``finish()`` runs the ``__init__`` in it, as the first import would have. Until
# then, the first name asked of the package itself (``from claude_agent_sdk import
# X``) runs it too, so nothing reads a half-made package: a submodule that imports
# names from the package (``claude_agent_sdk.client``) must wait for ``finish()``.

_deferred: set[str] = set()  # packages whose __init__ waits for ``finish``


def defer(package: str = PACKAGE) -> None:
    """The package importable by its submodules alone, its ``__init__`` not run yet.
    Does nothing when it is imported already."""
    if package in sys.modules:
        return
    spec = importlib.util.find_spec(package)
    if spec is None or spec.loader is None:  # not installed: the import says so later
        return
    module = importlib.util.module_from_spec(spec)

    def __getattr__(name: str) -> Any:  # only for a name not there (yet)
        finish(package)
        try:
            return module.__dict__[name]
        except KeyError:
            raise AttributeError(f"module {package!r} has no attribute {name!r}") from None

    module.__dict__["__getattr__"] = __getattr__
    sys.modules[package] = module
    _deferred.add(package)


def finish(package: str = PACKAGE) -> None:
    """The package's ``__init__`` run, if ``defer`` postponed it (once: a name
    missing while it runs is missing, as in any import)."""
    module = sys.modules.get(package)
    if module is None:
        importlib.import_module(package)
        return
    if package not in _deferred:
        return  # never deferred, or run already
    _deferred.discard(package)
    del module.__dict__["__getattr__"]
    spec = module.__spec__
    assert spec is not None and spec.loader is not None
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[package]  # the next import starts afresh, and says what failed
        raise


# -- the bundled CLI ---------------------------------------------------------------


def bundled_cli_path() -> Path:
    """The Claude Code the SDK bundles: the deck runs it unless the settings name
    another. Its place in the wheel (``_bundled/claude``) is the SDK's own."""
    import claude_agent_sdk

    return Path(claude_agent_sdk.__file__).parent / "_bundled" / "claude"


# -- a transport without its client (warm processes) --------------------------------


async def _no_input() -> AsyncIterator[dict[str, Any]]:
    return
    yield {}  # pragma: no cover - an async generator that yields nothing


def new_transport(options: ClaudeAgentOptions) -> SubprocessCLITransport:
    """The transport ``ClaudeSDKClient.connect`` would make for ``options``, made
    before any client: a warm process is spawned ahead and handed to its agent's
    client later (``held_client(transport=...)``). The options go through the same
    private ``_configure_can_use_tool`` as the client's connect, so that the command
    line asks for permission prompts on stdio exactly as the client's would."""
    from claude_agent_sdk._internal.transport.subprocess_cli import SubprocessCLITransport
    from claude_agent_sdk.types import _configure_can_use_tool

    return SubprocessCLITransport(prompt=_no_input(), options=_configure_can_use_tool(options))


def spawn_command(options: ClaudeAgentOptions) -> list[str]:
    """The command line a client spawns Claude Code with for ``options``
    (``SubprocessCLITransport._build_command``): a warm process is adopted only if
    it was spawned with exactly this one."""
    return new_transport(options)._build_command()


# -- a client's process ---------------------------------------------------------------


def transport_of(client: object) -> Any:
    """The transport of an SDK client (``ClaudeSDKClient._transport``), once it
    connects; None before. The deck closes its input (a one-shot run's end) and
    reaches its process through it."""
    return getattr(client, "_transport", None)


def process_of(transport: object) -> Any:
    """The Claude Code process (anyio's ``Process``) of a subprocess transport
    (``SubprocessCLITransport._process``), once spawned; None before. The deck
    stops its whole tree (the SDK stops only the process itself) and waits on it."""
    return getattr(transport, "_process", None)


def client_process(client: object) -> Any:
    """The Claude Code process of an SDK client, once it has one."""
    return process_of(transport_of(client))


def pid_of(client: object) -> int | None:
    """The Claude Code process's pid of an SDK client, once it has one."""
    pid = getattr(client_process(client), "pid", None)
    return pid if isinstance(pid, int) else None


async def end_input(client: object) -> None:
    """The client's Claude Code gets no more input (its stdin closed): a one-shot
    run ends once its work does. The client has no public way to say so (the
    transport's ``end_input`` is public; reaching the transport is not). A
    failure (the process gone) is logged: there is nothing left to close."""
    transport = transport_of(client)
    if transport is None:
        return
    try:
        await transport.end_input()
    except Exception as exc:  # noqa: BLE001 - gone already: its input is closed
        logger.debug("closing Claude Code's input failed: %s", exc)


# -- a client that drops an answer a process can no longer take ----------------------


@functools.cache
def _held_client_class() -> type[ClaudeSDKClient]:
    from claude_agent_sdk import ClaudeSDKClient, CLIConnectionError

    class HeldClient(ClaudeSDKClient):
        """A client whose transport drops an answer a process can no longer take
        (it is being stopped, or gone). The client sets ``self._transport`` as it
        connects (private): the transport it is given gets its ``write`` wrapped."""

        @property
        def _transport(self) -> Any:
            return self.__dict__.get("_held_transport")

        @_transport.setter
        def _transport(self, transport: Any) -> None:
            if transport is not None:
                transport.write = _quiet_write(transport.write, CLIConnectionError)
            self.__dict__["_held_transport"] = transport

    return HeldClient


def _quiet_write(write: Any, gone: type[Exception]) -> Any:
    async def quiet_write(data: str) -> None:
        try:
            await write(data)
        except gone as exc:
            # Only an answer to the CLI is dropped (the process is stopping or
            # gone, a Ctrl-C say): it is written from a task nothing awaits,
            # where raising only prints "Task exception was never retrieved".
            # A request or a message still fails its caller.
            if not data.startswith(_RESPONSE):
                raise
            logger.debug("an answer to a Claude Code that is gone: %s", exc)

    return quiet_write


def held_client(
    options: ClaudeAgentOptions, transport: SubprocessCLITransport | None = None
) -> ClaudeSDKClient:
    """An SDK client for ``options`` (on ``transport``, a warm process, if given)
    whose transport drops an answer its Claude Code can no longer take.

    What the SDK answers on its own (an in-process MCP server's notifications) is
    written from a task of the SDK's; when the deck is stopping the process, that
    write fails where nothing can catch it: dropped here instead of raised in a
    task nothing awaits (``callbacks`` holds back our own callbacks' answers)."""
    return _held_client_class()(options, transport=transport)
