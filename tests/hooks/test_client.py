"""The hook client as Claude Code runs it: a real process, a real socket."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from agentdeck.governance.profiles import load_profile
from agentdeck.hooks import hookclient_impl as impl
from agentdeck.hooks.config import HOOK_EVENTS, client_config
from agentdeck.hooks.protocol import HookReply, HookRequest
from agentdeck.settings import Settings
from tests.hooks.conftest import (
    CLIENT,
    Recorder,
    ServerThread,
    client_argv,
    hook_env,
    run_client,
    write_hooks_json,
)
from tests.hooks.payloads import EVENT_NAMES, SAMPLES, sample

# Daemon down: the client answers without waiting for anything. How fast (~25 ms,
# the 100 ms goal) is benchmarks/hooks.py's "daemon down" figure, not a timed test:
# here the deadline is long, and an answer well inside it shows nothing was waited on.
DOWN_DEADLINE = 40.0
DOWN_WITHIN = DOWN_DEADLINE / 2
HUNG_DEADLINE = 0.5  # hooks.json deadline for the hung-daemon tests
HUNG_MARGIN = 0.5  # spawn + interpreter start on a shared 2-CPU machine
INTERRUPTED_DEADLINE = 30.0  # long: the test interrupts the client well before it
CLAUDE_ENV = {
    "CLAUDE_PROJECT_DIR": "/work/demo",
    "CLAUDE_PID": "4242",
    "CLAUDE_CODE_SESSION_ID": SAMPLES["PreToolUse"]["session_id"],
    "CLAUDE_CODE_ENTRYPOINT": "sdk-cli",
    "CLAUDECODE": "1",
    "CLAUDE_CODE_MESSAGING_TOKEN": "secret-not-forwarded",
}


def write_installed_config(
    home: Path,
    profile: str = "default",
    deadline: float | None = None,
    governance: str = "deny-and-ask",
) -> None:
    """``hooks.json`` exactly as ``hooks install`` writes it for ``profile``."""
    settings = Settings(
        home=home, claude_config_dir=home / "claude-config", hook_governance=governance
    )
    if deadline is not None:
        settings = settings.model_copy(update={"hook_deadline_seconds": deadline})
    config = client_config(settings, load_profile(profile).default)
    (home / "hooks.json").write_text(json.dumps(config))


def ask_output(why: str) -> dict[str, Any]:
    return {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "ask",
            "permissionDecisionReason": f"agentdeck is not reachable ({why}): "
            "Claude Code asks instead",
        }
    }


# -- with a daemon ---------------------------------------------------------------


@pytest.mark.parametrize("name", EVENT_NAMES)
def test_every_recorded_event_reaches_the_daemon_intact(
    home: Path, daemon: ServerThread, recorder: Recorder, name: str
) -> None:
    done = run_client(home, SAMPLES[name], env=hook_env(**CLAUDE_ENV))

    assert (done.code, done.err) == (0, "")
    [request] = recorder.requests
    assert request.event == SAMPLES[name]
    assert request.name == name
    # Only the four variables the protocol names; never the messaging token.
    assert request.env == {k: v for k, v in CLAUDE_ENV.items() if k in impl.FORWARDED_ENV}
    assert done.json() == {"event": SAMPLES[name], "env": request.env}


def test_the_daemons_decision_is_printed_verbatim(
    home: Path, daemon: ServerThread, recorder: Recorder
) -> None:
    deny = {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": "rm -rf is denied by `Bash(rm:*)` — déjà vu ✓",
        }
    }
    recorder.decide = lambda request: HookReply(stdout=json.dumps(deny, ensure_ascii=False))

    done = run_client(home, sample("PreToolUse", tool_input={"command": "rm -rf /"}))

    assert (done.code, done.err) == (0, "")
    assert done.out == json.dumps(deny, ensure_ascii=False)
    assert done.json() == deny


def test_an_exit_code_and_stderr_from_the_daemon_are_passed_on(
    home: Path, daemon: ServerThread, recorder: Recorder
) -> None:
    recorder.decide = lambda request: HookReply(exit=2, stderr="blocked by agentdeck\n")

    done = run_client(home, SAMPLES["Stop"])

    assert (done.code, done.out, done.err) == (2, "", "blocked by agentdeck\n")


def test_a_large_tool_output_crosses_whole(
    home: Path, daemon: ServerThread, recorder: Recorder
) -> None:
    big = "line of tool output ✓\n" * 200_000  # ~4.6 MB
    payload = sample("PostToolUse", tool_response={"stdout": big, "stderr": ""})
    recorder.decide = lambda request: HookReply(stdout="ok")

    done = run_client(home, json.dumps(payload, indent=2, ensure_ascii=False).encode())

    assert (done.code, done.out, done.err) == (0, "ok", "")
    assert recorder.requests[0].event == payload


def test_the_daemon_failing_to_decide_means_the_fallback(
    home: Path, daemon: ServerThread, recorder: Recorder
) -> None:
    def crash(request: HookRequest) -> HookReply:
        raise RuntimeError("bridge broke")

    recorder.decide = crash

    done = run_client(home, SAMPLES["PreToolUse"])

    assert (done.code, done.err) == (0, "")
    why = "the daemon could not decide: the daemon's hook handler failed: RuntimeError"
    assert done.json() == ask_output(why)


def test_a_socket_path_longer_than_af_unix_allows(tmp_path: Path, recorder: Recorder) -> None:
    home = tmp_path / ("long-" * 25) / "home"
    home.mkdir(parents=True)
    assert len(str(home / "daemon.sock").encode()) > 107
    write_hooks_json(home)

    with ServerThread(home / "daemon.sock", recorder):
        done = run_client(home, SAMPLES["PreToolUse"])

    assert (done.code, done.err) == (0, "")
    assert done.json()["event"] == SAMPLES["PreToolUse"]


def test_a_broken_hooks_json_means_the_defaults(
    home: Path, daemon: ServerThread, recorder: Recorder
) -> None:
    (home / "hooks.json").write_text('{"socket": 3, "deadline": "soon"')  # truncated

    done = run_client(home, SAMPLES["SessionStart"])

    assert (done.code, done.err) == (0, "")
    assert done.json()["event"] == SAMPLES["SessionStart"]  # HOME/daemon.sock, found


# -- without a daemon ------------------------------------------------------------


@pytest.mark.parametrize("name", HOOK_EVENTS)
def test_daemon_down_every_event_passes_at_once_by_default(home: Path, name: str) -> None:
    """Passing leaves the tool to Claude Code's own rules and prompt, as without agentdeck."""
    write_installed_config(home, deadline=DOWN_DEADLINE)  # and no socket file at all

    done = run_client(home, sample(name, hook_event_name=name))

    assert done.wall < DOWN_WITHIN, f"{name}: {done.wall:.1f} s, its deadline {DOWN_DEADLINE} s"
    assert (done.code, done.out, done.err) == (0, "", "")


def test_daemon_down_under_full_governance_a_deny_by_default_profile_denies_every_tool(
    home: Path,
) -> None:
    write_installed_config(home, profile="strict", governance="full")

    done = run_client(home, SAMPLES["PreToolUse"])

    assert (done.code, done.err) == (0, "")
    output = done.json()["hookSpecificOutput"]
    assert output["permissionDecision"] == "deny"
    assert "the daemon is not running" in output["permissionDecisionReason"]


def test_a_socket_nobody_listens_on_falls_back_at_once(home: Path) -> None:
    dead = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    dead.bind(str(home / "daemon.sock"))  # the file a crashed daemon leaves: ECONNREFUSED
    dead.close()
    write_hooks_json(home, deadline=DOWN_DEADLINE)

    done = run_client(home, SAMPLES["PreToolUse"])

    assert done.wall < DOWN_WITHIN, f"{done.wall:.1f} s, its deadline {DOWN_DEADLINE} s"
    assert done.json() == ask_output("the daemon is not running")


@dataclass
class Hung:
    path: Path
    held: list[socket.socket] = field(default_factory=list)  # the connections accepted
    accepted: threading.Event = field(default_factory=threading.Event)


@pytest.fixture
def hung_daemon(home: Path) -> Iterator[Hung]:
    """A socket that accepts connections and never answers."""
    hung = Hung(home / "daemon.sock")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(hung.path))
    listener.listen()

    def accept() -> None:
        while True:
            try:
                hung.held.append(listener.accept()[0])
                hung.accepted.set()
            except OSError:
                return

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield hung
    finally:
        listener.shutdown(socket.SHUT_RDWR)
        listener.close()
        thread.join(5)
        for conn in hung.held:
            conn.close()


@pytest.mark.parametrize(
    ("fallbacks", "name", "expected"),
    [
        ({"PreToolUse": "pass"}, "PreToolUse", None),  # the default: Claude Code decides
        ({"PreToolUse": "ask"}, "PreToolUse", ask_output(f"no answer within {HUNG_DEADLINE:g} s")),
        ({"PreToolUse": "deny"}, "PreToolUse", "deny"),
        ({"UserPromptSubmit": "deny"}, "UserPromptSubmit", "block"),
        ({"Stop": "deny"}, "Stop", None),  # blocking Stop while down would loop the model
        ({"PostToolUse": "ask"}, "PostToolUse", None),  # ask means nothing outside PreToolUse
    ],
)
def test_a_hung_daemon_means_the_fallback_at_the_deadline(
    home: Path, hung_daemon: Hung, fallbacks: dict[str, str], name: str, expected: Any
) -> None:
    write_hooks_json(home, deadline=HUNG_DEADLINE, fallbacks=fallbacks)

    done = run_client(home, SAMPLES[name])

    assert HUNG_DEADLINE <= done.wall < HUNG_DEADLINE + HUNG_MARGIN
    assert (done.code, done.err) == (0, "")
    why = f"no answer within {HUNG_DEADLINE:g} s"
    if expected is None:
        assert done.out == ""
    elif expected == "deny":
        output = done.json()["hookSpecificOutput"]
        assert output["permissionDecision"] == "deny"
        assert why in output["permissionDecisionReason"]
        assert "denies when it is unreachable" in output["permissionDecisionReason"]
    elif expected == "block":
        assert done.json()["decision"] == "block"
        assert why in done.json()["reason"]
    else:
        assert done.json() == expected


# -- a call put to a person (the approval inbox) ----------------------------------

ASKING_DEADLINE = 0.3  # the client's own, far shorter than the person's answer takes


@dataclass
class Asking:
    """A daemon that says it asks a person, then answers after ``answer_after``
    seconds (never, if None)."""

    wait: float
    answer_after: float | None
    requests: list[HookRequest] = field(default_factory=list)

    async def __call__(self, request: HookRequest) -> HookReply:
        self.requests.append(request)
        assert request.pending is not None, "the socket server lets the handler say it waits"
        await request.pending(self.wait)
        if self.answer_after is None:
            await asyncio.Event().wait()  # until the server closes
        await asyncio.sleep(self.answer_after or 0)
        output = {"hookEventName": "PreToolUse", "permissionDecision": "allow"}
        return HookReply(stdout=json.dumps({"hookSpecificOutput": output}))


def test_a_call_put_to_a_person_is_waited_for_past_the_clients_deadline(home: Path) -> None:
    write_hooks_json(home, deadline=ASKING_DEADLINE)
    asking = Asking(wait=20.0, answer_after=1.5)  # five times the client's deadline
    with ServerThread(home / "daemon.sock", asking):  # type: ignore[arg-type]
        done = run_client(home, SAMPLES["PreToolUse"])

    assert (done.code, done.err) == (0, "")
    assert done.json()["hookSpecificOutput"]["permissionDecision"] == "allow"


def test_a_call_nobody_answers_in_time_is_claude_codes_own_prompt(home: Path) -> None:
    write_hooks_json(home, deadline=ASKING_DEADLINE, fallbacks={"PreToolUse": "pass"})
    asking = Asking(wait=0.5, answer_after=None)
    with ServerThread(home / "daemon.sock", asking):  # type: ignore[arg-type]
        done = run_client(home, SAMPLES["PreToolUse"])

    assert (done.code, done.err) == (0, "")
    # Not the fallback (pass): the person was asked, so Claude Code asks too.
    output = done.json()["hookSpecificOutput"]
    assert output["permissionDecision"] == "ask"
    assert "nobody answered within 0.5 s" in output["permissionDecisionReason"]


@pytest.mark.parametrize(
    "line",
    [
        b'{"pending":true,"wait":1000}\n',  # past the client's ceiling
        b'{"pending":true,"wait":"soon"}\n',
        b'{"pending":true}\n',
        b'{"pending":true,"wait":1}\n{"pending":true,"wait":1}\n',  # twice
    ],
)
def test_a_pending_line_the_client_cannot_use_is_no_answer(home: Path, line: bytes) -> None:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as server:
        server.bind(str(home / "daemon.sock"))
        server.listen()
        write_hooks_json(home, deadline=5.0, fallbacks={"PreToolUse": "deny"})

        def answer() -> None:
            conn, _ = server.accept()
            with conn:
                conn.recv(1 << 20)
                conn.sendall(line)

        thread = threading.Thread(target=answer, daemon=True)
        thread.start()
        done = run_client(home, SAMPLES["PreToolUse"])
        thread.join(5)

    assert (done.code, done.err) == (0, "")
    assert done.json()["hookSpecificOutput"]["permissionDecision"] == "deny"  # the fallback


# -- bad input, bad wiring -------------------------------------------------------


@pytest.mark.parametrize(
    ("stdin", "says"),
    [
        (b"", "stdin is empty"),
        (b" \n\t", "stdin is empty"),
        (b"not json", "stdin is not JSON"),
        (b'{"hook_event_name": "PreToolUse", "tool_input": {', "stdin is not JSON"),
        (b"[1, 2]", "stdin is a JSON list, not an object"),
        (b'{"session_id": "x"}', 'no "hook_event_name"'),
        (b'{"hook_event_name": 7}', 'no "hook_event_name"'),
        (b"\xff\xfe{}", "stdin is not UTF-8"),
        (b"[" * 100_000, "nested too deeply"),
    ],
)
def test_bad_stdin_gets_one_clear_line_and_exit_0(home: Path, stdin: bytes, says: str) -> None:
    done = run_client(home, stdin)

    assert (done.code, done.out) == (0, "")
    [line] = done.err_lines
    assert line.startswith("agentdeck hook: ")
    assert says in line
    assert "Traceback" not in done.err


def test_missing_home_argument_is_one_line(home: Path) -> None:
    done = run_client(home, SAMPLES["PreToolUse"], argv=[sys.executable, "-S", str(CLIENT)])

    assert (done.code, done.out) == (0, "")
    [line] = done.err_lines
    assert "no AGENTDECK_HOME argument" in line


@pytest.fixture
def child() -> Iterator[subprocess.Popen[bytes]]:
    """A process of ours standing in for an agent's Claude Code (we are its runner)."""
    with subprocess.Popen([sys.executable, "-S", "-c", "input()"], stdin=subprocess.PIPE) as proc:
        try:
            yield proc
        finally:
            proc.kill()


def agent_env(claude_pid: int | str, runner_pid: int | str | None = None) -> dict[str, str]:
    env = hook_env(AGENTDECK_AGENT_ID="a0kz3m", CLAUDE_PID=str(claude_pid))
    if runner_pid is not None:
        env["AGENTDECK_RUNNER_PID"] = str(runner_pid)
    return env


def test_an_agent_run_by_agentdeck_is_left_to_its_in_process_hooks(
    home: Path, daemon: ServerThread, recorder: Recorder, child: subprocess.Popen[bytes]
) -> None:
    done = run_client(home, SAMPLES["PreToolUse"], env=agent_env(child.pid, os.getpid()))

    assert (done.code, done.out, done.err) == (0, "", "")
    assert recorder.requests == []


def test_a_session_an_agent_started_is_governed_like_any_other(
    home: Path, daemon: ServerThread, recorder: Recorder, child: subprocess.Popen[bytes]
) -> None:
    """A `claude -p` run from an agent's Bash inherits AGENTDECK_AGENT_ID and
    AGENTDECK_RUNNER_PID, but its Claude Code is no child of the runner."""
    not_ours = [
        agent_env(child.pid, runner_pid=child.pid),  # a grandchild of the runner, say
        agent_env(os.getpid(), runner_pid=os.getpid()),  # the runner is not its own parent
        agent_env(child.pid),  # no runner pid (an older runner's variable alone)
        agent_env(child.pid, runner_pid="12x"),
        agent_env("", runner_pid=os.getpid()),
        agent_env(2**22 + 1, runner_pid=os.getpid()),  # above pid_max: no such process
    ]
    for env in not_ours:
        done = run_client(home, SAMPLES["PreToolUse"], env=env)
        assert (done.code, done.err) == (0, ""), env
        assert done.json()["event"] == SAMPLES["PreToolUse"], env  # forwarded
    assert len(recorder.requests) == len(not_ours)


def test_the_parent_pid_is_read_past_a_command_name_with_parentheses(tmp_path: Path) -> None:
    odd = tmp_path / "a) S 1 (b"  # /proc/PID/stat shows it as "(a) S 1 (b)"
    odd.symlink_to(sys.executable)
    with subprocess.Popen([str(odd), "-S", "-c", "input()"], stdin=subprocess.PIPE) as proc:
        try:
            assert b"(a) S 1 (b)" in Path(f"/proc/{proc.pid}/stat").read_bytes()
            assert impl.parent_pid(proc.pid) == os.getpid()
        finally:
            proc.kill()


def test_the_client_imports_only_what_the_floor_does_plus_its_socket(home: Path) -> None:
    """No agentdeck package, nothing outside the standard library, nothing heavy."""

    def imported(argv: list[str]) -> set[str]:
        proc = subprocess.run(
            [argv[0], "-X", "importtime", *argv[1:]],
            input=json.dumps(SAMPLES["PreToolUse"]).encode(),
            capture_output=True,
            env=hook_env(),
            check=True,
        )
        lines = proc.stderr.decode().splitlines()
        return {line.rsplit("|", 1)[1].strip() for line in lines if line.startswith("import")}

    floor = imported([sys.executable, "-S", "-c", "import json,sys; json.load(sys.stdin)"])
    client = imported(client_argv(home))

    assert client - floor == {"_socket", "hookclient_impl"}
    assert not any(name.startswith("agentdeck") for name in client)


@pytest.mark.parametrize(
    "failure",
    [MemoryError("out of memory"), KeyboardInterrupt(), SystemExit(3), GeneratorExit()],
    ids=lambda e: type(e).__name__,
)
def test_an_unexpected_failure_is_one_line_and_the_fallback(
    home: Path, monkeypatch: pytest.MonkeyPatch, failure: BaseException
) -> None:
    def broken(*args: object) -> bytes:
        raise failure

    monkeypatch.setattr(impl, "exchange", broken)
    write_hooks_json(home, fallbacks={"PreToolUse": "deny"})

    code, out, err = impl.run(["client", str(home)], json.dumps(SAMPLES["PreToolUse"]).encode(), {})

    assert code == 0
    output = json.loads(out)["hookSpecificOutput"]
    assert output["permissionDecision"] == "deny"
    assert "the hook client failed" in output["permissionDecisionReason"]
    assert err == f"agentdeck hook: {type(failure).__name__}: {failure}".rstrip() + "\n"


def test_a_failure_escaping_run_still_gets_the_fallback_in_main(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``main``'s last resort: the event's fallback, one line, and exit 0."""
    written: list[tuple[int, str]] = []
    exits: list[int] = []

    def interrupted(*args: object) -> impl.Result:
        impl.current.update(name="PreToolUse", action="deny")  # as run does once it knows
        raise KeyboardInterrupt

    monkeypatch.setattr(impl, "run", interrupted)
    monkeypatch.setattr(impl, "read_stdin", lambda: b"{}")
    monkeypatch.setattr(impl, "write", lambda fd, text: written.append((fd, text)))
    monkeypatch.setattr(impl.posix, "_exit", exits.append)
    monkeypatch.setattr(sys, "argv", ["client.py", str(home)])
    ctrl_c = signal.getsignal(signal.SIGINT)
    try:
        impl.main()
    finally:
        signal.signal(signal.SIGINT, ctrl_c)  # main ignores a second Ctrl-C from there on

    assert exits == [0]
    [(out_fd, out), (err_fd, err)] = written
    assert (out_fd, err_fd) == (1, 2)
    assert json.loads(out)["hookSpecificOutput"]["permissionDecision"] == "deny"
    assert err == "agentdeck hook: KeyboardInterrupt:\n"


def test_ctrl_c_while_waiting_on_the_daemon_applies_the_deny_fallback(
    home: Path, hung_daemon: Hung
) -> None:
    """A real client process, interrupted: no traceback, and a deny profile still denies."""
    write_hooks_json(home, deadline=INTERRUPTED_DEADLINE, fallbacks={"PreToolUse": "deny"})
    payload = home / "payload.json"
    payload.write_text(json.dumps(SAMPLES["PreToolUse"]))
    started = time.monotonic()
    with (
        payload.open("rb") as stdin,
        subprocess.Popen(
            client_argv(home),
            stdin=stdin,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=hook_env(),
        ) as proc,
    ):
        assert hung_daemon.accepted.wait(INTERRUPTED_DEADLINE), "the client never connected"
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=INTERRUPTED_DEADLINE)

    assert time.monotonic() - started < INTERRUPTED_DEADLINE
    assert proc.returncode == 0
    assert err.decode() == "agentdeck hook: KeyboardInterrupt:\n"
    output = json.loads(out)["hookSpecificOutput"]
    assert output["permissionDecision"] == "deny"
    assert "the hook client failed" in output["permissionDecisionReason"]


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        ("[]", ("HOME/daemon.sock", 2.0, {})),
        (
            {"socket": "/s", "deadline": 0.25, "fallbacks": {"Stop": "deny", "PreToolUse": "no"}},
            ("/s", 0.25, {"Stop": "deny"}),
        ),
        ({"deadline": True}, ("HOME/daemon.sock", 2.0, {})),
        ({"deadline": 50}, ("HOME/daemon.sock", 50.0, {})),
        # Past 50 s Claude Code's 60 s timeout could kill the client first (failing open).
        ({"deadline": 50.5}, ("HOME/daemon.sock", 2.0, {})),
        ({"deadline": 900}, ("HOME/daemon.sock", 2.0, {})),
        ({"deadline": 0}, ("HOME/daemon.sock", 2.0, {})),
        ({"deadline": -1}, ("HOME/daemon.sock", 2.0, {})),
        ('{"deadline": NaN}', ("HOME/daemon.sock", 2.0, {})),
        ('{"deadline": Infinity}', ("HOME/daemon.sock", 2.0, {})),
        ({"fallbacks": {"PreToolUse": "deny"}}, ("HOME/daemon.sock", 2.0, {"PreToolUse": "deny"})),
    ],
)
def test_each_part_of_hooks_json_falls_back_to_its_default_alone(
    home: Path, config: Any, expected: tuple[str, float, dict[str, str]]
) -> None:
    (home / "hooks.json").write_text(config if isinstance(config, str) else json.dumps(config))

    sock, deadline, fallbacks = impl.read_config(str(home))

    assert (sock.replace(str(home), "HOME"), deadline, fallbacks) == expected


def test_a_payload_over_the_daemons_limit_is_not_sent(home: Path) -> None:
    write_hooks_json(home, fallbacks={"PostToolUse": "deny", "PreToolUse": "deny"})
    huge = sample("PostToolUse", tool_response={"stdout": "x" * impl.MAX_MESSAGE})

    code, out, err = impl.run(["client.py", str(home)], json.dumps(huge).encode(), {})

    assert (code, out, err) == (0, "", "")  # PostToolUse has nothing to deny: it passes
    code, out, err = impl.run(
        ["client.py", str(home)],
        json.dumps(sample("PreToolUse", tool_input={"command": "x" * impl.MAX_MESSAGE})).encode(),
        {},
    )
    reason = json.loads(out)["hookSpecificOutput"]["permissionDecisionReason"]
    assert "the hook payload is larger than 64 MiB" in reason


def test_permission_request_deny_fallback_answers_in_its_own_shape(home: Path) -> None:
    write_hooks_json(home, fallbacks={"PermissionRequest": "deny"})

    code, out, err = impl.run(
        ["client.py", str(home)], json.dumps(SAMPLES["PermissionRequest"]).encode(), {}
    )

    assert (code, err) == (0, "")
    decision = json.loads(out)["hookSpecificOutput"]
    assert decision["hookEventName"] == "PermissionRequest"
    assert decision["decision"]["behavior"] == "deny"
    assert "the daemon is not running" in decision["decision"]["message"]


def test_the_client_module_is_compiled_once_even_under_dontwritebytecode(
    home: Path, tmp_path: Path
) -> None:
    prefix = tmp_path / "pycache"
    env = hook_env(PYTHONDONTWRITEBYTECODE="1", PYTHONPYCACHEPREFIX=str(prefix))

    first = run_client(home, SAMPLES["Stop"], env=env)
    written = {p: p.stat().st_mtime_ns for p in prefix.rglob("*.pyc")}
    again = run_client(home, SAMPLES["Stop"], env=env)

    assert (first.code, first.err, again.code, again.err) == (0, "", 0, "")
    assert f"hookclient_impl.{sys.implementation.cache_tag}.pyc" in {p.name for p in written}
    assert {p: p.stat().st_mtime_ns for p in prefix.rglob("*.pyc")} == written  # reused
