"""The quick path: what it may load, that it parses as Typer does, that it says
what the Typer path says, and that it steps aside when unsure."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import typer
from typer._click.exceptions import ClickException

from agentdeck.cli import quick, quick_spec
from agentdeck.cli.app import app
from agentdeck.client.locate import HomeDir
from agentdeck.daemon.home import DaemonInfo, DaemonLock, ensure_token, write_info
from agentdeck.homedir import home_dir
from agentdeck.settings import Settings
from tests.support.daemonproc import Daemon
from tests.support.deckcli import deck, deck_env

# What a steering command must not load when a daemon answers it: the store, the
# SDK, the web framework, and the frameworks the quick path exists to avoid.
HEAVY = (
    "agentdeck.store", "agentdeck.runner", "agentdeck.web", "agentdeck.settings",
    "agentdeck.serve", "agentdeck.daemon.server", "claude_agent_sdk", "sqlalchemy", "fastapi",
    "starlette", "uvicorn", "typer", "click", "pydantic", "pydantic_settings", "httpx", "asyncio",
)  # fmt: skip


# What a daemon-client command does not load either (issue 14: each answers in well
# under 100 ms): the standard library's heavier modules, which the dataclass records,
# ``typing``, ``json``, ``socket``, ``re`` and ``pathlib`` bring in. Run as the
# installed script runs it (``-m`` would load ``runpy``, and with it some of these).
LEAN = frozenset({
    "dataclasses", "inspect", "typing", "re", "enum", "json", "socket", "selectors",
    "contextlib", "collections", "functools", "pathlib", "datetime", "urllib",
    "agentdeck.core.agent", "agentdeck.core.event_types",
})  # fmt: skip
AS_INSTALLED = ("-c", "from agentdeck.cli import main; main()")


def loaded_modules(
    env: dict[str, str], *args: str, way: tuple[str, ...] = ("-m", "agentdeck")
) -> tuple[int, set[str], str]:
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", *way, *args],
        env=env, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    modules = {
        line.rsplit("|", 1)[-1].strip()
        for line in proc.stderr.splitlines()
        if line.startswith("import time:")
    }
    errors = "\n".join(ln for ln in proc.stderr.splitlines() if not ln.startswith("import time:"))
    return proc.returncode, modules, errors


def typer_path(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    """The command as the Typer app runs it, bypassing the quick path."""
    argv = [sys.executable, "-c", "from agentdeck.cli.app import main; main()", *args]
    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120)


# Without a daemon, reads peek at the database: that much of the store, no more.
PEEK = frozenset({"agentdeck.store", "agentdeck.store.peek", "agentdeck.store.head",
                  "agentdeck.store.rows"})  # fmt: skip


def heavy(modules: set[str], allowed: frozenset[str] = frozenset()) -> set[str]:
    return {m for m in modules - allowed if any(m == h or m.startswith(h + ".") for h in HEAVY)}


@pytest.fixture
async def served_env(tmp_path: Path, daemons: list[Daemon]) -> dict[str, str]:
    """A home with a daemon running and one finished agent, ``q``."""
    env = deck_env(tmp_path)
    daemons.append(await Daemon(env).start())
    assert deck(env, "run", "--scenario", "chat", "--name", "q", "Hello! Who are you?").code == 0
    return env


@pytest.mark.cli
@pytest.mark.anyio
async def test_daemon_commands_load_no_store_sdk_web_or_framework(
    served_env: dict[str, str],
) -> None:
    env = served_env
    commands: list[tuple[tuple[str, ...], int]] = [
        (("run", "--scenario", "chat", "--name", "r", "Hello! Who are you?"), 0),
        (("ls",), 0), (("ls", "--json", "--state", "done"), 0), (("ls", "--tree"), 0),
        (("show", "q"), 0), (("logs", "q"), 0), (("logs", "q", "--json"), 0),
        (("resume", "q", "And again"), 0), (("send", "q", "Hello again"), 0),
        (("interrupt", "q"), 0), (("kill", "q", "--keep-children"), 0),
        (("approvals", "--all"), 0), (("approve", "nope", "--always"), 1),
        (("deny", "nope", "--reason", "no"), 1), (("asks",), 0), (("answer", "nope", "x"), 1),
        (("status", "--json"), 0), (("memory", "search", "hello", "--limit", "3"), 0),
        (("policy", "check", "Bash(git status)"), 0), (("queue", "--all"), 0),
        (("down",), 0),  # last: it stops the daemon
    ]  # fmt: skip
    for args, code in commands:
        got, modules, errors = loaded_modules(env, *args, way=AS_INSTALLED)
        assert got == code, (args, errors)
        assert heavy(modules) == set(), args
        assert "agentdeck.cli.quick" in modules
        if args[0] not in ("run", "down"):  # a spec to build; a signal to send
            assert modules & LEAN == set(), args
        if args[0] == "policy":  # the daemon judged it: no engine, no YAML loaded here
            assert {"agentdeck.core.policy", "yaml"}.isdisjoint(modules), args


@pytest.mark.cli
def test_without_a_daemon_run_embeds_the_agent_without_the_typer_app(tmp_path: Path) -> None:
    # Typer and the other commands' modules would delay the early spawn of Claude
    # Code (cli.early); the run is the Typer command's own, outcome included.
    env = deck_env(tmp_path)
    code, modules, errors = loaded_modules(
        env, "run", "--scenario", "chat", "--name", "e", "Hello! Who are you?", "--json",
        way=AS_INSTALLED,
    )  # fmt: skip
    assert code == 0, errors
    assert {"typer", "agentdeck.cli.app", "agentdeck.cli.run"}.isdisjoint(modules)
    assert {"agentdeck.cli.run_agent", "agentdeck.cli.early"} <= modules
    slow = typer_path(env, "run", "--scenario", "chat", "--name", "t", "Hello! Who are you?")
    assert slow.returncode == 0, slow.stderr
    agents = json.loads(deck(env, "ls", "--json").out)
    assert sorted((a["name"], a["state"]) for a in agents) == [("e", "done"), ("t", "done")]


@pytest.mark.cli
def test_without_a_daemon_reads_load_no_store_sdk_or_framework(tmp_path: Path) -> None:
    env = deck_env(tmp_path)
    fresh = loaded_modules(env, "ls")  # no database yet: the Typer path makes it
    assert fresh[0] == 0 and "sqlalchemy" in fresh[1]
    assert deck(env, "run", "--scenario", "chat", "--name", "q", "Hello! Who are you?").code == 0
    reads = (("ls",), ("ls", "--tree", "--json"), ("show", "q"), ("logs", "q"),
             ("approvals", "--all"), ("asks",), ("show", "nope"), ("queue", "--json"),
             ("down",))  # fmt: skip
    for args in reads:
        got, modules, errors = loaded_modules(env, *args)
        assert got == (1 if "nope" in args else 0), (args, errors)
        assert heavy(modules, PEEK) == set(), args
        if args == ("ls",):
            continue  # its AGE column may tick between the two runs; --json is compared
        quick_run, slow = deck(env, *args), typer_path(env, *args)
        assert (quick_run.code, quick_run.out, quick_run.err) == (
            slow.returncode, slow.stdout, slow.stderr
        ), args  # fmt: skip


@pytest.mark.cli
@pytest.mark.anyio
async def test_the_quick_path_says_what_the_typer_path_says(served_env: dict[str, str]) -> None:
    env = served_env
    for args in (
        ("ls", "--json"), ("show", "q", "--json"), ("show", "q"), ("logs", "q"),
        ("logs", "q", "--json"), ("approvals", "--all"), ("asks", "--all"),
        ("approvals", "--json"), ("asks", "--all", "--json"), ("show", "nope"),
        ("memory", "search", "hello", "--json"), ("policy", "check", "Bash(rm -rf /)"),
        # the daemon judges these (a built-in profile); the Typer path, in its process
        ("policy", "check", "--json", "Bash(git status)"),
        ("policy", "check", "--profile", "strict", "Read(~/.ssh/id_rsa)"),
        ("policy", "check", "--profile", "nope", "Bash(ls)"),
        ("kill", "q"), ("ls", "--state", "bogus"),
        # an empty ref names nothing (its path would be the list's): NotFound, no traceback
        ("show", ""), ("logs", ""), ("interrupt", ""), ("kill", ""), ("send", "", "hi"),
        ("resume", ""), ("approve", ""), ("deny", ""), ("answer", "", "x"),
    ):  # fmt: skip
        quick_run, slow = deck(env, *args), typer_path(env, *args)
        assert "Traceback" not in quick_run.err, args
        assert (quick_run.code, quick_run.out, quick_run.err) == (
            slow.returncode, slow.stdout, slow.stderr
        ), args  # fmt: skip


@pytest.mark.cli
@pytest.mark.anyio
async def test_values_out_of_reach_are_usage_errors_with_a_daemon(
    served_env: dict[str, str],
) -> None:
    from tests.cli.test_commands import TOO_MUCH

    for args in TOO_MUCH:
        quick_run, slow = deck(served_env, *args), typer_path(served_env, *args)
        for code, out, err in ((quick_run.code, quick_run.out, quick_run.err),
                               (slow.returncode, slow.stdout, slow.stderr)):  # fmt: skip
            assert code == 2, (args[:2], err[-2000:])
            assert "Traceback" not in err and out == "" and len(err) < 2_000, args[:2]
    assert deck(served_env, "ls").code == 0  # the daemon still answers


def click_params(name: str, args: list[str]) -> dict[str, Any] | None:
    command: Any = typer.main.get_command(app)
    for word in name.split():
        command = command.commands[word]
    try:
        ctx = command.make_context(name, list(args))
    except (ClickException, typer.Exit):  # usage errors, --help: the quick path steps aside
        return None
    return {k: plain(v) for k, v in ctx.params.items()}


def plain(value: Any) -> Any:
    """Typer's value as the quick path carries it: an enum as its value, a path as
    text, a repeated option as a list (None when not given)."""
    if isinstance(value, tuple):
        return [plain(v) for v in value] or None
    if isinstance(value, Path):
        return str(value)
    return value.value if hasattr(value, "value") else value


@pytest.mark.parametrize(
    ("name", "args"),
    [
        ("ls", []), ("ls", ["--state", "idle", "--state=done", "--limit", "5"]),
        ("ls", ["--limit=0"]), ("ls", ["--limit", "x"]), ("ls", ["--tree", "--json"]),
        ("ls", ["extra"]), ("ls", ["--limit"]),
        ("show", ["a1"]), ("show", []), ("show", ["--json", "a1"]), ("show", ["--", "-odd"]),
        ("logs", ["a1", "--follow"]), ("kill", ["a1", "--keep-children"]),
        ("kill", ["a1", "--tree"]), ("resume", ["a1", "go on", "--fork"]),
        ("resume", ["a1", "--no-fork"]), ("send", ["a1", "-", "--json"]),
        ("run", ["do it", "--allow", "Bash(ls)", "--allow", "Read", "--budget-usd", "0.5"]),
        ("run", ["do it", "--max-turns", "0"]), ("run", ["x", "--budget-usd=-1"]),
        ("approve", ["r1", "--always", "--scope", "session", "--message", "ok"]),
        ("approve", ["r1", "--scope", "forever"]), ("deny", ["r1", "--reason", "--json"]),
        ("memory search", ["tests", "--limit", "101"]), ("memory search", ["q", "--project", "."]),
        ("policy check", ["Bash(ls)", "--profile", "strict", "--cwd", "/tmp"]),
        ("policy check", ["--tool", "Bash", "--input", '{"command": "ls"}']),
        ("answer", ["k1", "yes", "no"]), ("status", ["--json"]),
    ],
)  # fmt: skip
def test_the_quick_path_parses_as_typer_does(name: str, args: list[str]) -> None:
    parsed = quick.parse(json.loads(quick_spec.COMMANDS[name]), args)
    expected = click_params(name, args)
    if parsed is None:
        return  # stepped aside: Typer parses (and explains) it, whatever it is
    assert expected is not None, f"the quick path took what Typer refuses: {args}"
    assert expected == parsed


@pytest.mark.parametrize(
    "args",
    [
        ["ls", "--help"],
        ["ls", "--limit", "0"],
        ["show"],
        ["ls", "-x"],
        ["queue", "cancel", "x"],
        ["up"],
        [],
    ],
)
def test_the_quick_path_steps_aside_when_unsure(args: list[str]) -> None:
    assert quick.run_quick(args) is None


def test_every_quick_command_is_a_command_of_the_app() -> None:
    group: Any = typer.main.get_command(app)
    for name in quick.HANDLERS:
        command = group
        for word in name.split():
            command = command.commands[word]
        # A command, or a group that runs its own callback (queue; queue cancel is Typer's)
        assert not hasattr(command, "commands") or command.invoke_without_command, name


@pytest.mark.parametrize(
    "env",
    [{}, {"AGENTDECK_HOME": "/tmp/x/../y"}, {"agentdeck_home": "~/deck"}, {"AGENTDECK_HOME": ""}],
)
def test_the_quick_home_is_the_settings_home(
    env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for key in [k for k in os.environ if k.lower() == "agentdeck_home"]:
        monkeypatch.delenv(key)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    assert home_dir() == Settings.load().home_dir


@pytest.mark.parametrize("listening", [True, False], ids=["never-answers", "refuses"])
def test_policy_check_passes_a_daemon_by_that_cannot_answer(
    tmp_path: Path, listening: bool
) -> None:
    """The home's lock is held and ``daemon.json`` names a port where nobody answers
    (a socket that never accepts) or nobody listens: ``policy check`` judges the call
    itself, as the Typer path does, instead of failing or waiting for the daemon."""
    env = deck_env(tmp_path)
    home = HomeDir(env["AGENTDECK_HOME"])
    Path(env["AGENTDECK_HOME"]).mkdir(parents=True, exist_ok=True)
    lock = DaemonLock(home)
    lock.acquire()
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        if listening:
            sock.listen(1)
        ensure_token(home)
        write_info(home, DaemonInfo(os.getpid(), "127.0.0.1", sock.getsockname()[1], 0.0))
        try:
            for args in (("Bash(git status)",), ("--json", "Bash(rm -rf /)")):
                quick_run = deck(env, "policy", "check", *args)
                slow = typer_path(env, "policy", "check", *args)
                assert quick_run.code == slow.returncode == (0 if "--json" not in args else 1)
                assert (quick_run.out, quick_run.err) == (slow.stdout, slow.stderr), args
        finally:
            lock.release()
