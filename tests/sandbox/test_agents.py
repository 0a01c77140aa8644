"""Agents on the real Claude Code CLI, sandboxed: what their tools try outside
fails, what they do inside works, and the log says what was stopped."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from agentdeck.core.agent import AgentSpec, AgentState
from agentdeck.core.events import EventType
from agentdeck.daemon.compose import build_runner
from agentdeck.errors import AgentProcessError
from agentdeck.runner.runner import Runner
from agentdeck.settings import Settings
from agentdeck.store.store import Store
from tests.conftest import make_settings

from .conftest import World, needs_bwrap
from .test_escapes import ALLOWED, REFUSED

pytestmark = [needs_bwrap, pytest.mark.cli]


class Run:
    """One agent that tried every escape through its tools: each case's output."""

    def __init__(self, agent: Any, outputs: dict[str, str], blocked: set[tuple[str, str]]):
        self.agent = agent
        self.outputs = outputs
        self.blocked = blocked


def _settings(home: Path, world: World) -> Settings:
    return make_settings(home, sandbox_hosts=world.settings.sandbox_hosts)


@pytest.fixture
def settings(tmp_path: Path, world: World) -> Settings:
    return _settings(tmp_path, world)


def _cases(
    world: World, settings: Settings, ws: Path, probe: Path, allowed: str
) -> list[tuple[str, str, dict[str, Any]]]:
    """``(case, tool, input)``: every escape through the file tools and Bash,
    then the probe's own matrix from a child process, then the work that must
    go on."""
    out, user, home = world.outside, world.tmp / "user", settings.home_dir
    py, port, ip = sys.executable, world.local_port, world.host_ip
    other = settings.workspaces_dir / "other" / "secret.txt"
    environ = f"/proc/{os.getpid()}/environ"

    raw = f"import socket; socket.create_connection(('{ip}', {port}), 3); print('CONNECTED')"

    def fetch(url: str, *, bare: bool = False) -> str:
        code = f"import urllib.request as u; print(u.urlopen('{url}', timeout=5).read())"
        unset = "env -u HTTP_PROXY -u http_proxy -u HTTPS_PROXY -u https_proxy " if bare else ""
        return f'{unset}{py} -c "{code}"'

    return [
        # the file tools
        ("tool_write_absolute", "Write", {"file_path": f"{out}/t-abs.txt", "content": "x"}),
        (
            "tool_write_dotdot",
            "Write",
            {"file_path": f"{ws}/../../outside/t-dd.txt", "content": "x"},
        ),
        ("tool_write_tmp_trick", "Write", {"file_path": f"/tmp/..{out}/t-tmp.txt", "content": "x"}),
        ("tool_write_symlink", "Write", {"file_path": f"{ws}/link-out/t-link.txt", "content": "x"}),
        (
            "tool_write_git_hooks",
            "Write",
            {"file_path": f"{ws}/.git/hooks/pre-commit", "content": "x"},
        ),
        ("tool_read_ssh_key", "Read", {"file_path": f"{user}/.ssh/id_rsa"}),
        ("tool_read_token", "Read", {"file_path": f"{home}/token"}),
        ("tool_read_other_workspace", "Read", {"file_path": str(other)}),
        ("tool_read_victim", "Read", {"file_path": f"{out}/victim.txt"}),
        (
            "tool_edit_outside",
            "Edit",
            {"file_path": f"{out}/victim.txt", "old_string": "UNTOUCHED", "new_string": "EDITED"},
        ),
        # Bash
        ("bash_write_absolute", "Bash", {"command": f"echo x > {out}/b-abs.txt"}),
        ("bash_write_dotdot", "Bash", {"command": "echo x > ../../outside/b-dd.txt"}),
        ("bash_write_tmp_trick", "Bash", {"command": f"echo x > /tmp/..{out}/b-tmp.txt"}),
        ("bash_write_symlink", "Bash", {"command": "echo x > link-out/b-link.txt"}),
        (
            "bash_hard_link",
            "Bash",
            {"command": f"ln {out}/victim.txt hard.txt && echo x > hard.txt"},
        ),
        ("bash_write_git_hooks", "Bash", {"command": "echo x > .git/hooks/pre-commit"}),
        ("bash_read_ssh_key", "Bash", {"command": f"cat {user}/.ssh/id_rsa"}),
        ("bash_read_token", "Bash", {"command": f"cat {home}/token"}),
        ("bash_read_database", "Bash", {"command": f"head -c 16 {settings.db_path}"}),
        ("bash_read_other_workspace", "Bash", {"command": f"cat {other}"}),
        ("bash_read_daemon_environ", "Bash", {"command": f"head -c 40 {environ}"}),
        ("bash_http_by_ip", "Bash", {"command": fetch(f"http://127.0.0.1:{port}/")}),
        ("bash_http_by_localhost", "Bash", {"command": fetch(f"http://localhost:{port}/")}),
        ("bash_http_not_allowed", "Bash", {"command": fetch(f"http://not-allowed.test:{port}/")}),
        ("bash_http_proxy_unset", "Bash", {"command": fetch(f"http://{ip}:{port}/", bare=True)}),
        (
            "bash_raw_socket",
            "Bash",
            {"command": f'{py} -c "{raw}"'},
        ),
        (
            "bash_dns",
            "Bash",
            {"command": f"{py} -c \"import socket; print(socket.getaddrinfo('example.com', 80))\""},
        ),
        # a child process tries it all again
        ("child_probe", "Bash", {"command": f"{py} {world.probe} {probe}"}),
        # the work goes on
        ("tool_write_inside", "Write", {"file_path": f"{ws}/inside.txt", "content": "made"}),
        ("tool_read_project", "Read", {"file_path": f"{ws}/README.md"}),
        (
            "bash_write_inside",
            "Bash",
            {"command": "echo made > bash-inside.txt && cat bash-inside.txt"},
        ),
        ("bash_http_allowed", "Bash", {"command": fetch(f"http://{allowed}:{port}/")}),
    ]


REFUSED_BY_TOOLS = [
    "tool_write_absolute", "tool_write_dotdot", "tool_write_tmp_trick", "tool_write_symlink",
    "tool_write_git_hooks", "tool_read_ssh_key", "tool_read_token",
    "tool_read_other_workspace", "tool_edit_outside",
]  # fmt: skip
REFUSED_BY_BASH = [
    "bash_write_absolute", "bash_write_dotdot", "bash_write_tmp_trick", "bash_write_symlink",
    "bash_hard_link", "bash_write_git_hooks", "bash_read_ssh_key", "bash_read_token",
    "bash_read_database", "bash_read_other_workspace", "bash_read_daemon_environ",
    "bash_http_by_ip", "bash_http_by_localhost", "bash_http_not_allowed",
    "bash_http_proxy_unset", "bash_raw_socket", "bash_dns",
]  # fmt: skip
WORKS = ["tool_write_inside", "tool_read_project", "bash_write_inside", "bash_http_allowed"]
SECRETS = ("FAKE-PRIVATE-KEY", "DECK-TOKEN", "SQLite format", "OTHER-AGENTS-WORK", "SERVED")


def effective(mode: str) -> str:
    """The sandbox an agent gets: as root, ``bash`` is ``process`` (Claude Code's
    own Bash sandbox would keep root's capabilities)."""
    return "process" if mode == "bash" and os.geteuid() == 0 else mode


def escape_run(world: World, base: Path, mode: str) -> Run:
    base.mkdir()  # beside the world's outside, not in /tmp (a sandbox's own)
    settings = _settings(base, world)
    settings.ensure_home()
    (settings.home_dir / "token").write_text("DECK-TOKEN")
    other = settings.workspaces_dir / "other"
    other.mkdir(parents=True)
    (other / "secret.txt").write_text("OTHER-AGENTS-WORK")
    ws = base / "project" / "ws"  # ../../outside is not the world's outside: see below
    ws.mkdir(parents=True)
    (ws / "README.md").write_text("THE PROJECT")
    (ws / "test_ok.py").write_text("def test_ok():\n    assert True\n")
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    os.symlink(world.outside, ws / "link-out")
    (base / "outside").symlink_to(world.outside)  # so ../../outside is the world's outside
    probe = base / "probe.json"
    config = json.loads(world.config.read_text())
    config.update(
        workspace=str(ws),
        token=str(settings.home_dir / "token"),
        database=str(settings.db_path),
        other_workspace_file=str(other / "secret.txt"),
        model_url=None,  # the agent's own: ANTHROPIC_BASE_URL
    )
    probe.write_text(json.dumps(config))
    # Claude Code's own proxy (bash mode) resolves names itself: this machine's
    # name stands for an allowed domain there.
    allowed = "allowed.test" if effective(mode) == "process" else socket.gethostname()
    cases = _cases(world, settings, ws, probe, allowed)
    profile = base / f"{mode}.yaml"
    profile.write_text(
        yaml.safe_dump(
            {
                "name": f"boxed-{mode}",
                "default": "allow",
                "sandbox": {
                    "mode": mode,
                    "required": True,
                    "network": {"mode": "allowlist", "allowed_domains": [allowed]},
                },
            }
        )
    )
    scenario = base / f"escape-{mode}.yaml"
    turns = [{"reply": [{"tool_use": {"name": tool, "input": data}}]} for _, tool, data in cases]
    scenario.write_text(
        yaml.safe_dump(
            {"name": f"escape-{mode}", "turns": [*turns, {"reply": [{"text": "Tried it all."}]}]}
        )
    )

    async def go() -> Run:
        store = Store.open(settings.db_path)
        runner = build_runner(store, settings)
        try:
            spec = AgentSpec(
                prompt="escape", scenario=str(scenario), profile=str(profile), cwd=str(ws)
            )
            session = await runner.start(spec)
            await session.wait_finished(timeout=240)
            agent = await store.get_agent(session.agent.id)
            events = await store.read(agent_id=agent.id)
        finally:
            await runner.shutdown()
            await store.close()
        outputs = [e.data["output"] for e in events if e.type == EventType.TOOL_RETURNED]
        blocked = {
            (e.data["what"], e.data["target"])
            for e in events
            if e.type == EventType.SANDBOX_BLOCKED
        }
        assert len(outputs) == len(cases), [
            e.data for e in events if e.type == EventType.ERROR_OCCURRED
        ]
        return Run(
            agent, {name: out for (name, _, _), out in zip(cases, outputs, strict=True)}, blocked
        )

    return asyncio.run(go())


@pytest.fixture(scope="module")
def process_run(world: World) -> Run:
    return escape_run(world, world.tmp / "process", "process")


@pytest.fixture(scope="module")
def bash_run(world: World) -> Run:
    return escape_run(world, world.tmp / "bash", "bash")


def refused(output: str) -> bool:
    markers = (
        "Read-only file system",
        "EROFS",
        "No such file",
        "does not exist",
        "Permission denied",
        "Invalid cross-device link",
        "403",
        "Connection refused",
        "Network is unreachable",
        "name resolution",
        "EACCES",
        "are never an agent's",  # the policy, before the sandbox (agentdeck's own files)
        "Operation not permitted",
        "HTTP Error",
    )
    return any(m in output for m in markers) and not any(s in output for s in SECRETS)


@pytest.mark.parametrize("case", REFUSED_BY_TOOLS + REFUSED_BY_BASH)
def test_process_mode_refuses(case: str, process_run: Run, world: World) -> None:
    output = process_run.outputs[case]
    assert refused(output), f"{case}: {output[:500]}"
    assert (world.outside / "victim.txt").read_text() == "UNTOUCHED"


@pytest.mark.parametrize("case", REFUSED)
def test_process_mode_refuses_a_child_process(case: str, process_run: Run) -> None:
    results = json.loads(process_run.outputs["child_probe"].strip().splitlines()[-1])
    assert results[case].startswith("refused:"), f"{case}: {results[case]}"


@pytest.mark.parametrize("case", ALLOWED)
def test_process_mode_child_process_works(case: str, process_run: Run) -> None:
    results = json.loads(process_run.outputs["child_probe"].strip().splitlines()[-1])
    assert results[case].startswith("ok:"), f"{case}: {results[case]}"


@pytest.mark.parametrize("case", WORKS)
def test_process_mode_work_goes_on(case: str, process_run: Run) -> None:
    output = process_run.outputs[case]
    assert not refused(output) and "rror" not in output, f"{case}: {output[:500]}"


def test_process_mode_agent_is_done_and_reports_what_it_stopped(
    process_run: Run, world: World
) -> None:
    agent = process_run.agent
    assert agent.state == AgentState.DONE, agent.last_error
    assert agent.extra["sandbox"] == "process"
    ws = Path(agent.cwd)
    assert (ws / "inside.txt").read_text() == "made"
    assert "THE PROJECT" in process_run.outputs["tool_read_project"]
    assert "SERVED" in process_run.outputs["bash_http_allowed"]
    assert not (ws / ".git" / "hooks" / "pre-commit").exists()
    assert sorted(p.name for p in world.outside.iterdir() if p.name.startswith(("t-", "b-"))) == []
    blocked = process_run.blocked
    assert ("network", f"not-allowed.test:{world.local_port}") in blocked
    assert ("write", f"{world.outside}/t-abs.txt") in blocked
    assert ("write", f"{world.outside}/b-abs.txt") in blocked
    assert not any(t.split(":")[0] == "allowed.test" for _, t in blocked)


@pytest.mark.parametrize("case", REFUSED_BY_BASH)
def test_bash_mode_refuses_what_bash_tries(case: str, bash_run: Run) -> None:
    output = bash_run.outputs[case]
    assert refused(output), f"{case}: {output[:500]}"


@pytest.mark.parametrize("case", WORKS)
def test_bash_mode_work_goes_on(case: str, bash_run: Run) -> None:
    if case == "bash_http_allowed" and not _resolves(socket.gethostname()):
        pytest.skip("this machine's name does not resolve: no allowed name for Claude Code's proxy")
    output = bash_run.outputs[case]
    assert not refused(output) and "rror" not in output, f"{case}: {output[:500]}"
    assert bash_run.agent.extra["sandbox"] == effective("bash")


def boxed_profile(tmp_path: Path, *, required: bool) -> str:
    path = tmp_path / "boxed.yaml"
    path.write_text(
        yaml.safe_dump(
            {
                "name": "boxed",
                "default": "allow",
                "sandbox": {"mode": "process", "required": required},
            }
        )
    )
    return str(path)


@pytest.mark.anyio
async def test_a_required_sandbox_that_cannot_be_made_stops_the_agent_before_it_starts(
    deck: tuple[Store, Runner], tmp_path: Path, no_bwrap: str
) -> None:
    store, runner = deck
    with pytest.raises(AgentProcessError) as info:
        await runner.start(
            AgentSpec(
                prompt="hello", scenario="chat", profile=boxed_profile(tmp_path, required=True)
            )
        )
    assert str(info.value).startswith("sandbox unavailable:")
    (agent,) = await store.list_agents()
    assert agent.state == AgentState.ERROR
    assert agent.pid is None and agent.session_id is None  # no Claude Code process ever ran
    assert agent.last_error is not None and "\n" not in agent.last_error
    assert agent.last_error.startswith("sandbox unavailable: the profile asks for a process")
    assert "apt-get install bubblewrap" in agent.last_error
    (error,) = [
        e for e in await store.read(agent_id=agent.id) if e.type == EventType.ERROR_OCCURRED
    ]
    assert error.data["kind"] == "sandbox"


@pytest.mark.anyio
async def test_an_optional_sandbox_that_cannot_be_made_runs_and_says_so(
    deck: tuple[Store, Runner], tmp_path: Path, no_bwrap: str
) -> None:
    store, runner = deck
    session = await runner.start(
        AgentSpec(prompt="hello", scenario="chat", profile=boxed_profile(tmp_path, required=False))
    )
    await session.wait_finished(timeout=60)
    agent = await store.get_agent(session.agent.id)
    assert agent.state == AgentState.DONE and agent.extra["sandbox"] == "unavailable"
    (notice,) = [
        e.data
        for e in await store.read(agent_id=agent.id)
        if e.type == EventType.NOTICE and e.data["kind"] == "sandbox"
    ]
    assert "running unsandboxed (not required)" in notice["message"]


def _resolves(name: str) -> bool:
    try:
        return bool(socket.getaddrinfo(name, 80))
    except OSError:
        return False


def test_the_planted_secrets_are_not_ones_the_event_log_redacts() -> None:
    # The outputs above are read from the event log, which is scrubbed: a planted
    # secret the scrubber redacted would hide a leak.
    from agentdeck.core.redact import scrub

    for secret in SECRETS:
        assert scrub(f"cat: {secret}\n{secret}") == f"cat: {secret}\n{secret}"
