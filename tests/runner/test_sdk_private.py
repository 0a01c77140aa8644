"""The canary for an SDK upgrade: every private name of ``claude-agent-sdk`` that
``runner/sdk_private.py`` uses is still there, with the shape it needs. A failure
names the attribute that moved; adapt the one function of ``sdk_private`` that
uses it (the upgrade procedure is in that module's docstring)."""

from __future__ import annotations

import importlib
import importlib.metadata
import inspect
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest

from agentdeck.runner import sdk_private

ROOT = Path(__file__).resolve().parents[2]
WHERE = "see runner/sdk_private.py"


def moved(what: str, how: str = "is gone") -> str:
    return f"claude_agent_sdk: {what} {how}: {WHERE}"


def attribute(owner: Any, name: str, what: str) -> Any:
    if not hasattr(owner, name):
        pytest.fail(moved(what))
    return getattr(owner, name)


def parameters(function: Any, what: str) -> list[str]:
    return list(inspect.signature(function).parameters)


def assigned(cls: type, name: str) -> bool:
    """Whether ``cls``'s code assigns ``self.<name>`` (an instance attribute)."""
    source = inspect.getsource(cls)
    return f"self.{name} =" in source or f"self.{name}:" in source


def test_the_sdk_is_pinned_to_the_locked_version() -> None:
    """One exact version: an upgrade is a change of the pin, and this canary runs."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    (pin,) = [d for d in project["project"]["dependencies"] if d.startswith("claude-agent-sdk")]
    lock = tomllib.loads((ROOT / "uv.lock").read_text())
    (locked,) = [p["version"] for p in lock["package"] if p["name"] == "claude-agent-sdk"]
    assert pin == f"claude-agent-sdk=={locked}", f"pin {pin!r}, lock {locked}"
    assert importlib.metadata.version("claude-agent-sdk") == locked, "run `make setup`"


def test_the_subprocess_transport_is_where_and_as_we_use_it() -> None:
    try:
        module = importlib.import_module(sdk_private.TRANSPORT_MODULE)
    except ImportError:
        pytest.fail(moved(f"the module {sdk_private.TRANSPORT_MODULE}"))
    transport = attribute(module, "SubprocessCLITransport", "SubprocessCLITransport")
    init = parameters(transport.__init__, "SubprocessCLITransport.__init__")
    if init[1:3] != ["prompt", "options"]:
        pytest.fail(moved("SubprocessCLITransport.__init__(prompt, options)", f"is now {init}"))
    build = attribute(transport, "_build_command", "SubprocessCLITransport._build_command")
    if parameters(build, "_build_command") != ["self"]:
        pytest.fail(moved("SubprocessCLITransport._build_command()", "takes arguments now"))
    for public in ("connect", "close", "write", "end_input"):
        if not inspect.iscoroutinefunction(attribute(transport, public, public)):
            pytest.fail(moved(f"SubprocessCLITransport.{public}", "is no coroutine"))
    if not assigned(transport, "_process"):
        pytest.fail(moved("SubprocessCLITransport._process"))


def test_configure_can_use_tool_routes_permission_prompts_over_stdio() -> None:
    from claude_agent_sdk import types

    configure = attribute(types, "_configure_can_use_tool", "types._configure_can_use_tool")

    async def decide(*_: Any) -> Any:  # pragma: no cover - never called
        return None

    options = configure(types.ClaudeAgentOptions(can_use_tool=decide))
    if options.permission_prompt_tool_name != "stdio":
        pytest.fail(moved("types._configure_can_use_tool", "no longer asks on stdio"))


def test_the_client_keeps_its_transport_where_held_client_holds_it() -> None:
    from claude_agent_sdk import ClaudeAgentOptions, ClaudeSDKClient, CLIConnectionError

    assert issubclass(CLIConnectionError, Exception)
    if "transport" not in parameters(ClaudeSDKClient.__init__, "ClaudeSDKClient.__init__"):
        pytest.fail(moved("ClaudeSDKClient(transport=...)"))
    if not assigned(ClaudeSDKClient, "_transport"):
        pytest.fail(moved("ClaudeSDKClient._transport"))
    if "_configure_can_use_tool(" not in inspect.getsource(ClaudeSDKClient):
        pytest.fail(moved("ClaudeSDKClient's use of _configure_can_use_tool"))
    client = sdk_private.held_client(ClaudeAgentOptions())
    assert sdk_private.transport_of(client) is None and sdk_private.pid_of(client) is None


@pytest.mark.anyio
async def test_a_held_client_drops_only_an_answer_to_a_gone_process() -> None:
    from claude_agent_sdk import ClaudeAgentOptions, CLIConnectionError

    class Gone:
        async def write(self, data: str) -> None:
            raise CLIConnectionError("gone")

    client = sdk_private.held_client(ClaudeAgentOptions())
    client._transport = Gone()  # as connect sets it
    transport = sdk_private.transport_of(client)
    await transport.write('{"type": "control_response", "response": {}}\n')
    with pytest.raises(CLIConnectionError):
        await transport.write('{"type": "user"}\n')


def test_the_bundled_cli_is_where_we_look() -> None:
    if not sdk_private.bundled_cli_path().is_file():
        pytest.fail(moved(f"the bundled CLI ({sdk_private.bundled_cli_path()})"))


def test_the_spawn_needs_nothing_of_the_package_init() -> None:
    """The options and the transport load with the package's ``__init__`` deferred
    (``sdk_private.defer``), and with them no ``mcp``: an embedded run spawns early."""
    code = (
        "import sys\n"
        "from agentdeck.runner import sdk_private\n"
        "sdk_private.defer()\n"
        "import claude_agent_sdk.types\n"
        f"import {sdk_private.TRANSPORT_MODULE}\n"
        "print(sorted(m for m in sys.modules if m == 'mcp' or m.startswith('mcp.')))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    if done.returncode != 0:
        pytest.fail(moved("the spawn's modules", f"need the package __init__: {done.stderr}"))
    assert done.stdout.strip() == "[]", done.stdout
