"""What a machine without bubblewrap (or socat) is told, the command line a
sandbox is built from, and the ``agentdeck sandbox`` commands."""

from __future__ import annotations

import itertools
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from agentdeck.core.sandbox import NetworkMode, SandboxMode, SandboxSpec
from agentdeck.errors import SandboxUnavailable
from agentdeck.runner.sandboxing import claude_sandbox, prepare
from agentdeck.sandbox import support
from agentdeck.sandbox.plan import Plan
from agentdeck.settings import Settings
from tests.support.deckcli import deck, deck_env

from .conftest import World, needs_bwrap, shadow_path


def test_without_bubblewrap_every_mode_says_what_to_install(no_bwrap: str) -> None:
    for mode in (SandboxMode.PROCESS, SandboxMode.BASH):
        found = support.support(mode)
        assert not found.ok
        assert found.detail == (
            "bubblewrap (bwrap) is not installed: install bubblewrap "
            "(Debian/Ubuntu: apt-get install bubblewrap)"
        )
    assert support.support(SandboxMode.OFF).ok


@needs_bwrap
def test_bash_mode_also_needs_socat(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", shadow_path(tmp_path, "socat"))
    support.reset()
    try:
        assert support.support(SandboxMode.PROCESS).ok
        found = support.support(SandboxMode.BASH)
        if os.geteuid() == 0:  # bash mode runs as process mode: socat is not needed
            assert found.ok and "process sandbox instead" in found.detail
        else:
            assert not found.ok and "apt-get install socat" in found.detail
    finally:
        monkeypatch.undo()
        support.reset()


def test_a_bubblewrap_that_cannot_make_namespaces_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = tmp_path / "fake" / "bwrap"
    fake.parent.mkdir()
    fake.write_text(
        "#!/bin/sh\necho 'bwrap: No permissions to creating new namespace' >&2\nexit 1\n"
    )
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake.parent}:{os.environ['PATH']}")
    support.reset()
    try:
        found = support.support(SandboxMode.PROCESS)
    finally:
        monkeypatch.undo()
        support.reset()
    assert not found.ok
    assert "cannot create a sandbox here: bwrap: No permissions" in found.detail
    assert "user namespaces look disabled" in found.detail


@pytest.mark.anyio
async def test_a_required_sandbox_is_refused_and_an_optional_one_says_so(
    no_bwrap: str, tmp_path: Path
) -> None:
    settings = Settings(home=tmp_path / "home")
    required = SandboxSpec(mode=SandboxMode.PROCESS, required=True)
    with pytest.raises(SandboxUnavailable) as info:
        await prepare(
            required, workspace=tmp_path, settings=settings, endpoint=None, on_blocked=print
        )
    assert "\n" not in str(info.value)
    assert "the profile asks for a process sandbox" in str(info.value)
    assert "apt-get install bubblewrap" in str(info.value)

    optional = SandboxSpec(mode=SandboxMode.PROCESS)
    made = await prepare(
        optional, workspace=tmp_path, settings=settings, endpoint=None, on_blocked=print
    )
    assert made.label == "unavailable" and made.confinement is None
    assert made.notice is not None and made.notice.endswith("running unsandboxed (not required)")
    off = await prepare(
        SandboxSpec(), workspace=tmp_path, settings=settings, endpoint=None, on_blocked=print
    )
    assert off.label == "off" and off.notice is None


def _plan(world: World, spec: SandboxSpec) -> Plan:
    return Plan(
        spec=spec,
        workspace=world.workspace,
        home=world.tmp / "user",
        agentdeck_home=world.settings.home_dir,
        claude_config=world.tmp / "claude-config",
        private_tmp=world.tmp / "private-tmp",
        sockets=world.tmp / "sockets",
        forwards={3128: "proxy.sock"},
        config_view=world.tmp / "config-view",
        config_entries=("hooks",),
    )


def test_the_plan_hides_the_deck_before_it_opens_the_workspace(world: World) -> None:
    config = world.tmp / "claude-config"
    (config / "hooks").mkdir(parents=True, exist_ok=True)
    (world.tmp / "config-view" / "hooks").mkdir(parents=True, exist_ok=True)
    argv = _plan(world, SandboxSpec(mode=SandboxMode.PROCESS)).argv(["claude", "--x"])
    pairs = list(itertools.pairwise(argv))
    hide = pairs.index(("--tmpfs", str(world.settings.home_dir)))
    opened = pairs.index(("--bind", str(world.workspace)))
    assert hide < opened < pairs.index(("--ro-bind", str(world.workspace / ".git" / "hooks")))
    # Claude Code's config: the agent's read-only view over it, after every
    # writable place, the user's entries bound in read-only: a later session's
    # settings, hooks and agents stay out of reach, present or not.
    view = argv.index(str(world.tmp / "config-view"))
    assert argv[view - 1 : view + 2] == ["--ro-bind", str(world.tmp / "config-view"), str(config)]
    assert opened < view < pairs.index(("--ro-bind-try", str(config / "hooks")))
    assert ("--bind", str(config)) not in pairs
    assert "--unshare-net" in argv and "--unshare-pid" in argv
    assert "--die-with-parent" not in argv  # a crashed supervisor must not lose the session
    assert ("--ro-bind", str(world.tmp / "user" / ".ssh")) not in pairs
    assert ("--tmpfs", str(world.tmp / "user" / ".ssh")) in pairs
    assert argv[-2:] == ["claude", "--x"]
    assert "3128=/run/agentdeck/proxy.sock" in argv


def test_an_open_network_shares_the_hosts_and_needs_no_relay(world: World) -> None:
    spec = SandboxSpec(mode=SandboxMode.PROCESS, network=NetworkMode.OPEN)
    argv = _plan(world, spec).argv(["claude"])
    assert "--unshare-net" not in argv
    assert not any("relay.py" in a for a in argv)


def test_bash_mode_settings_keep_every_command_inside(world: World) -> None:
    spec = SandboxSpec(mode=SandboxMode.BASH, required=True, allowed_domains=("pypi.org",))
    made = claude_sandbox(
        spec,
        workspace=world.workspace,
        settings=world.settings,
        endpoint="http://127.0.0.1:9/",
    )
    assert made["enabled"] and made["failIfUnavailable"]
    assert made["allowUnsandboxedCommands"] is False
    assert made["autoAllowBashIfSandboxed"] is False  # the policy still decides
    assert made["network"]["allowedDomains"] == ["pypi.org", "127.0.0.1"]
    assert str(world.settings.home_dir) in made["filesystem"]["denyRead"]
    assert made["filesystem"]["allowRead"] == [str(world.workspace)]
    assert str(world.workspace / ".git" / "hooks") in made["filesystem"]["denyWrite"]


def _profile(tmp_path: Path, block: str) -> str:
    path = tmp_path / "p.yaml"
    path.write_text(f"name: p\ndefault: ask\nsandbox:\n{block}")
    return str(path)


def test_sandbox_check_says_what_works_and_what_a_profile_gets(tmp_path: Path) -> None:
    env = deck_env(tmp_path)
    done = deck(env, "sandbox", "check", "--profile", "strict")
    assert done.code == (0 if support.support(SandboxMode.PROCESS).ok else 1), done.err
    if done.code == 0:
        assert "ok process" in done.out
        assert "profile sandbox: process, network off, required → agents run sandboxed" in done.out

    missing = deck({**env, "PATH": shadow_path(tmp_path, "bwrap")}, "sandbox", "check", "--json")
    assert missing.code == 0  # the default profile does not require its sandbox
    data = missing.json()
    assert data["modes"]["process"]["ok"] is False
    assert data["profile"]["agents"].startswith("unsandboxed, with a notice")
    strict = deck(
        {**env, "PATH": shadow_path(tmp_path, "bwrap")}, "sandbox", "check", "--profile", "strict"
    )
    assert strict.code == 1
    assert "refused: the profile requires a sandbox" in strict.out
    assert "apt-get install bubblewrap" in strict.out


@needs_bwrap
def test_sandbox_run_confines_a_command(world: World, tmp_path: Path) -> None:
    env = deck_env(tmp_path, HOME=str(world.tmp / "user"))
    victim = world.outside / "victim.txt"
    write = f"open({str(victim)!r}, 'w').write('escaped')"
    done = deck(
        env, "sandbox", "run", "--profile", "strict", "--cwd", str(world.workspace),
        "--", sys.executable, "-c", write,
    )  # fmt: skip
    assert done.code == 1 and "Read-only file system" in done.err
    assert victim.read_text() == "UNTOUCHED"
    inside = deck(
        env, "sandbox", "run", "--profile", "strict", "--cwd", str(world.workspace),
        "--", sys.executable, "-c", "open('made-by-run.txt', 'w').write('ok')",
    )  # fmt: skip
    assert inside.code == 0, inside.err
    assert (world.workspace / "made-by-run.txt").read_text() == "ok"
    key = deck(
        env, "sandbox", "run", "--profile", "default", "--cwd", str(world.workspace),
        "--", "cat", str(world.tmp / "user" / ".ssh" / "id_rsa"),
    )  # fmt: skip
    assert key.code == 1 and "FAKE-PRIVATE-KEY" not in key.out
    blocked = deck(
        {**env, "AGENTDECK_SANDBOX_HOSTS": '{"not-allowed.test": "127.0.0.1"}'},
        "sandbox", "run", "--cwd", str(world.workspace),
        "--", sys.executable, "-c",
        f"import urllib.request as u; u.urlopen('http://not-allowed.test:{world.local_port}/')",
    )  # fmt: skip
    assert blocked.code == 1
    assert f"sandbox: blocked a connection to not-allowed.test:{world.local_port}" in blocked.err


def test_sandbox_run_says_how_to_use_it(tmp_path: Path) -> None:
    env = deck_env(tmp_path)
    none = deck(env, "sandbox", "run", "--profile", "permissive", "--", "true")
    assert none.code == 2 and "the profile has no sandbox" in none.err
    empty = deck(env, "sandbox", "run")
    assert empty.code == 2 and "give the command after --" in empty.err
    bad = deck(
        env, "sandbox", "run", "--profile", _profile(tmp_path, "  mode: jail\n"), "--", "true"
    )
    assert bad.code == 2 and "sandbox.mode: must be one of" in bad.err


def test_the_relay_lets_go_of_stdio_and_ends_with_its_command(tmp_path: Path) -> None:
    """A command that ends is seen to end by whoever reads its output (the SDK),
    and its relay does not outlive it."""
    import subprocess
    import time

    from agentdeck.sandbox.plan import RELAY

    marker = str(tmp_path / "marker.sock")
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-S", str(RELAY), f"0={marker}", "--", "sh", "-c", "echo out; exit 3"],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert done.returncode == 3 and done.stdout == "out\n"
    assert time.monotonic() - started < 10  # not held open by the relay
    import psutil

    relays = [p for p, line in _processes() if marker in line]
    _, alive = psutil.wait_procs(relays, timeout=5)  # returns as each one exits
    assert not alive, "the relay outlived its command"


def _processes() -> list[tuple[Any, str]]:
    """Every process with its command line, read once (one that ends or turns
    zombie meanwhile, another test's, is left out)."""
    import psutil

    found = []
    for process in psutil.process_iter():
        try:
            found.append((process, " ".join(process.cmdline())))
        except psutil.Error:
            continue
    return found
