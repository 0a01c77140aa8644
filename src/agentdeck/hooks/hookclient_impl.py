"""The hook client's logic: one hook event from Claude Code to the daemon and back.

Claude Code spawns ``python -S client.py HOME`` for every hook event and waits
for it, so this runs on every tool call. It imports the standard library only,
and little of it: ``json`` (which the floor, ``python -S -c 'import json,sys;
json.load(sys.stdin)'``, pays for too), and the C halves of ``socket`` and
``os`` (``_socket``, ``posix``: the Python halves pull in ``enum``,
``selectors`` and more for nothing we use). ``time``, ``posix`` and ``_signal``
are loaded at start-up anyway.

Flow: read ``HOME/hooks.json`` (socket, deadline, per-event fallbacks; defaults
when missing or broken), read stdin, check it is a hook payload, send it with
the forwarded environment as one line over the daemon's Unix socket, print what
the daemon answers. When the daemon is down, hung past the deadline, cannot
decide, or anything at all goes wrong, apply the event's fallback instead:
Claude Code's own hook timeout fails *open*, so we never wait for it (the
installer gives Claude Code 60 s; our deadline is at most 50 s, the stdin guard 30 s).
When the daemon puts the call to a person (the approval inbox), it says so
first (``{"pending":true,"wait":S}``): we wait S seconds more, within those
50 s, and with no answer by then answer "ask", so Claude Code prompts itself.

An agent agentdeck runs is governed in-process, so its own Claude Code's hooks
step aside: ``AGENTDECK_AGENT_ID`` is set and that process (``CLAUDE_PID``) is a
child of the runner (``AGENTDECK_RUNNER_PID``). Anything the agent starts
inherits the variables but is no child of the runner, so a ``claude -p`` run
from the agent's Bash is handled like any session started by hand.

``run`` is the whole logic without touching the process (tests drive it
in-process); ``main`` wires it to argv, stdin, stdout, stderr and the exit code.
The wire format is ``agentdeck.hooks.protocol``'s (this module cannot import it).
"""

import _signal  # type: ignore[import-not-found]  # signal's C half: no stubs, but loaded already
import _socket
import json
import posix
import sys
import time

TYPE_CHECKING = False  # typing's costs an import
if TYPE_CHECKING:
    from types import ModuleType

STARTED = time.monotonic()

DEFAULT_DEADLINE = 2.0
MAX_DEADLINE = 50.0  # below the 60 s Claude Code timeout the installer writes
DEFAULT_FALLBACKS: dict[str, str] = {}  # every event: "pass" (Claude Code's own rules decide)
ACTIONS = ("pass", "ask", "deny")
FORWARDED_ENV = (
    "CLAUDE_PROJECT_DIR",
    "CLAUDE_PID",
    "CLAUDE_CODE_SESSION_ID",
    "CLAUDE_CODE_ENTRYPOINT",
)
AGENT_ENV = "AGENTDECK_AGENT_ID"  # set for agents agentdeck runs: their hooks run in-process
RUNNER_ENV = "AGENTDECK_RUNNER_PID"  # the process that started that agent's Claude Code
# A deck reached by URL and token instead of the home's socket (hookclient_http.ENV).
URL_ENV = ("AGENTDECK_URL", "CLAUDE_PLUGIN_OPTION_URL")
REMOTE_ENV = (
    *URL_ENV,
    "AGENTDECK_TOKEN",
    "CLAUDE_PLUGIN_OPTION_TOKEN",
    "AGENTDECK_ALLOW_INSECURE_URL",
)
MAX_MESSAGE = 64 * 1024 * 1024  # the daemon's limit on a request line; ours on a reply
MAX_SUN_PATH = 107  # AF_UNIX path bytes, without the terminating NUL
PENDING_GRACE = 3.0  # seconds past the daemon's announced wait for its answer to arrive
STDIN_DEADLINE = 30  # seconds, under MAX_DEADLINE; Claude Code closes stdin at once
PREFIX = "agentdeck hook: "


class Malformed(Exception):
    """Stdin is not a hook payload (the message is the one line we print)."""


class Unreachable(Exception):
    """No answer from the daemon; the message says why, for the fallback's reason."""


class Unanswered(Exception):
    """The daemon asked a person, who did not answer in time: Claude Code asks."""


Result = tuple[int, str, str]  # exit code, stdout, stderr

# The event being handled and its fallback, for ``main`` should anything escape ``run``.
current = {"name": "", "action": "pass"}


def run(argv: list[str], stdin: bytes, environ: dict[str, str], started: float = 0.0) -> Result:
    """Handle one hook event; never raises. ``started`` is when the deadline
    began (``time.monotonic()``; default: now)."""
    current.update(name="", action="pass")
    if own_agent(environ):
        return 0, "", ""
    if len(argv) < 2 or not argv[1]:
        return 0, "", PREFIX + "no AGENTDECK_HOME argument; reinstall the hooks\n"
    started = started or time.monotonic()
    name = ""
    action = "pass"
    by_url = any(environ.get(k) for k in URL_ENV)
    try:
        sock_path, deadline, fallbacks = read_config(argv[1])
        event_text, name = parse_event(stdin)
        action = fallbacks.get(name, "pass")
        current.update(name=name, action=action)
        env = {k: environ[k] for k in FORWARDED_ENV if k in environ}
        # The payload is spliced in as read: it parsed strictly, so a raw CR or
        # LF in it can only be whitespace between tokens, and the line stays one line.
        body = (
            '{"v":1,"event":'
            + event_text.replace("\n", " ").replace("\r", " ")
            + ',"env":'
            + json.dumps(env)
            + "}\n"
        ).encode("utf-8")
        if len(body) > MAX_MESSAGE:
            raise Unreachable("the hook payload is larger than 64 MiB")
        if by_url:
            line = exchange_http(remote(environ), body, started + deadline, deadline, started)
        else:
            line = exchange(sock_path, body, started + deadline, deadline, started)
        return read_reply(line)
    except Malformed as exc:
        return 0, "", PREFIX + str(exc) + "\n"
    except Unanswered as exc:
        if name == "PreToolUse":
            return decision("ask", f"agentdeck: {exc}: Claude Code asks instead")
        return fallback(name, action, str(exc))
    except Unreachable as exc:
        code, out, err = fallback(name, action, str(exc))
        # Over the socket a deck that is down is the usual case, said nowhere; a
        # URL the user gave that does not work is said (Claude Code shows it in
        # its transcript).
        return code, out, (PREFIX + one_line(str(exc)) + "\n") if by_url else err
    except BaseException as exc:  # noqa: BLE001 - Claude Code must never see a traceback
        # KeyboardInterrupt and SystemExit too: a deny profile still denies.
        code, out, _ = fallback(name, action, "the hook client failed")
        return code, out, PREFIX + one_line(f"{type(exc).__name__}: {exc}") + "\n"


def remote(environ: dict[str, str]) -> tuple[tuple[str, str, int, str], str]:
    """The deck's URL (parsed) and token; ``Unreachable`` when they are refused."""
    http = http_module()
    try:
        found = http.configured(environ)
    except http.Refused as exc:
        raise Unreachable(str(exc)) from None
    assert found is not None  # a URL is set
    return found  # type: ignore[no-any-return]


def own_agent(environ: dict[str, str]) -> bool:
    """Whether this is the Claude Code of an agent agentdeck runs (its hooks run
    in-process): marked as one, and a child of the runner that started it."""
    if not environ.get(AGENT_ENV):
        return False
    runner, claude = environ.get(RUNNER_ENV, ""), environ.get("CLAUDE_PID", "")
    if not (runner.isdigit() and claude.isdigit()):
        return False
    try:
        return parent_pid(int(claude)) == int(runner)
    except (OSError, ValueError, IndexError):
        return False  # gone or unreadable: handle the event like any other


def parent_pid(pid: int) -> int:
    """The parent of ``pid``, from ``/proc/PID/stat`` (the 4th field; the 2nd,
    the command name in parentheses, may hold spaces and parentheses itself)."""
    fd = posix.open(f"/proc/{pid}/stat", posix.O_RDONLY)
    try:
        stat = posix.read(fd, 4096)
    finally:
        posix.close(fd)
    return int(stat.rpartition(b")")[2].split()[1])


def read_config(home: str) -> tuple[str, float, dict[str, str]]:
    """``hooks.json``, each part falling back to its default when missing or invalid."""
    sock_path, deadline, fallbacks = home + "/daemon.sock", DEFAULT_DEADLINE, DEFAULT_FALLBACKS
    try:
        with open(home + "/hooks.json", "rb") as f:  # noqa: PTH123 - pathlib is one more import
            config = json.loads(f.read())
    except (OSError, ValueError, RecursionError):
        return sock_path, deadline, fallbacks
    if not isinstance(config, dict):
        return sock_path, deadline, fallbacks
    if isinstance(config.get("socket"), str) and config["socket"]:
        sock_path = config["socket"]
    value = config.get("deadline")
    if isinstance(value, int | float) and not isinstance(value, bool) and 0 < value <= MAX_DEADLINE:
        deadline = float(value)  # under the timeout where Claude Code gives up (failing open)
    given = config.get("fallbacks")
    if isinstance(given, dict):
        fallbacks = dict(fallbacks)
        fallbacks.update((k, v) for k, v in given.items() if isinstance(k, str) and v in ACTIONS)
    return sock_path, deadline, fallbacks


def parse_event(stdin: bytes) -> tuple[str, str]:
    """The payload as text and its event name; ``Malformed`` if it is no hook payload."""
    try:
        text = stdin.decode("utf-8")
    except UnicodeDecodeError:
        raise Malformed("stdin is not UTF-8; expected one hook event as JSON") from None
    if not text.strip():
        raise Malformed("stdin is empty; expected one hook event as JSON")
    try:
        event = json.loads(text)
    except ValueError as exc:
        raise Malformed(f"stdin is not JSON ({one_line(str(exc))})") from None
    except RecursionError:
        raise Malformed("stdin is JSON nested too deeply to read") from None
    if not isinstance(event, dict):
        raise Malformed(f"stdin is a JSON {type(event).__name__}, not an object")
    name = event.get("hook_event_name")
    if not isinstance(name, str) or not name:
        raise Malformed('stdin has no "hook_event_name"; not a Claude Code hook event')
    return text, name


def exchange(
    sock_path: str, body: bytes, deadline_at: float, deadline: float, started: float = 0.0
) -> bytes:
    """Send ``body``, return the reply line; ``Unreachable`` on any failure,
    ``Unanswered`` when the daemon said it asks a person and no answer came."""
    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        sock.settimeout(remaining(deadline_at))
        connect(sock, sock_path)
        sock.settimeout(remaining(deadline_at))
        sock.sendall(body)  # with a timeout, sendall's is the total
        return replies(sock, b"", deadline_at, deadline, started)
    except TimeoutError:
        raise Unreachable(f"no answer within {deadline:g} s") from None
    except (FileNotFoundError, ConnectionRefusedError):
        raise Unreachable("the daemon is not running") from None
    except OSError as exc:
        raise Unreachable(f"socket error: {exc.strerror or exc}") from None
    finally:
        sock.close()


def exchange_http(
    remote: tuple[tuple[str, str, int, str], str],
    body: bytes,
    deadline_at: float,
    deadline: float,
    started: float = 0.0,
) -> bytes:
    """``exchange`` with a deck by its URL and token (``hookclient_http``): the
    same lines follow the answer's head."""
    http = http_module()
    target, token = remote
    sock = None
    try:
        sock = http.opened(target, deadline_at)
        sock.settimeout(remaining(deadline_at))
        sock.sendall(http.request_head(target, token, len(body)) + body)
        first = http.answer_head(sock, deadline_at)
        return replies(sock, first, deadline_at, deadline, started)
    except http.Failed as exc:
        raise Unreachable(str(exc)) from None
    except TimeoutError:
        raise Unreachable(f"no answer from the deck within {deadline:g} s") from None
    except ConnectionRefusedError:
        raise Unreachable("nothing answers at the deck's URL (connection refused)") from None
    except OSError as exc:  # ssl's errors too: an unverified certificate
        raise Unreachable(f"network error: {one_line(str(exc.strerror or exc))}") from None
    finally:
        if sock is not None:
            sock.close()


def http_module() -> "ModuleType":  # one module or the other, the same names
    """``hookclient_http``: beside us under ``python -S client.py``, else in our package."""
    if __package__:
        from agentdeck.hooks import hookclient_http

        return hookclient_http
    import hookclient_http  # type: ignore[import-not-found,no-redef]

    return hookclient_http


def replies(
    sock: _socket.socket, first: bytes, deadline_at: float, deadline: float, started: float
) -> bytes:
    """The reply line that follows ``first`` (what came already); a pending notice
    (a person is asked) moves the deadline to the wait it announces."""
    asked = 0.0  # the wait the daemon announced, once it did
    chunks, size, fresh = [first], len(first), first
    try:
        while True:
            if b"\n" in fresh:
                line, _, rest = b"".join(chunks).partition(b"\n")
                wait = pending_wait(line) if not asked else None
                if wait is None:
                    return line
                # A person is asked: wait for the answer as long as the daemon
                # does, never past the ceiling below Claude Code's own timeout.
                asked = wait
                ceiling = (started or time.monotonic()) + MAX_DEADLINE
                deadline_at = min(time.monotonic() + wait + PENDING_GRACE, ceiling)
                chunks, size, fresh = [rest], len(rest), rest
                continue
            if size > MAX_MESSAGE:
                raise Unreachable("the daemon's answer is larger than 64 MiB")
            sock.settimeout(remaining(deadline_at))
            chunk = sock.recv(65536)
            if not chunk:
                return b"".join(chunks)
            chunks.append(chunk)
            size += len(chunk)
            fresh = chunk
    except TimeoutError:
        if asked:
            raise Unanswered(f"nobody answered within {asked:g} s") from None
        raise Unreachable(f"no answer within {deadline:g} s") from None


def pending_wait(line: bytes) -> float | None:
    """The seconds a ``{"pending":true,"wait":S}`` line announces, else None."""
    if not line.startswith(b'{"pending"'):
        return None
    try:
        said = json.loads(line)
    except (ValueError, RecursionError):
        return None
    wait = said.get("wait") if isinstance(said, dict) and said.get("pending") is True else None
    if isinstance(wait, int | float) and not isinstance(wait, bool) and 0 < wait <= MAX_DEADLINE:
        return float(wait)
    return None


def remaining(deadline_at: float) -> float:
    left = deadline_at - time.monotonic()
    if left <= 0:
        raise TimeoutError
    return left


def connect(sock: _socket.socket, path: str) -> None:
    """Connect, through ``/proc/self/fd`` when the path is too long for AF_UNIX."""
    if len(path.encode()) <= MAX_SUN_PATH:
        sock.connect(path)
        return
    directory, _, name = path.rpartition("/")
    fd = posix.open(directory or "/", posix.O_PATH | posix.O_DIRECTORY)
    try:
        sock.connect(f"/proc/self/fd/{fd}/{name}")
    finally:
        posix.close(fd)


def read_reply(line: bytes) -> Result:
    """What the daemon said, as our result; ``Unreachable`` if it said nothing usable."""
    if not line.strip():
        raise Unreachable("the daemon closed the connection without an answer")
    try:
        reply = json.loads(line)
    except (ValueError, RecursionError):
        raise Unreachable("the daemon's answer is not JSON") from None
    if not isinstance(reply, dict):
        raise Unreachable("the daemon's answer is not a JSON object")
    if "pending" in reply:  # a second one, or one we could not read
        raise Unreachable("the daemon's answer is not understood")
    if reply.get("fallback") is True:
        reason = reply.get("reason")
        raise Unreachable(f"the daemon could not decide: {one_line(str(reason or 'no reason'))}")
    code, out, err = reply.get("exit", 0), reply.get("stdout", ""), reply.get("stderr", "")
    if type(code) is not int or not 0 <= code <= 255:
        raise Unreachable(f"the daemon's answer has exit {code!r}")
    if not isinstance(out, str) or not isinstance(err, str):
        raise Unreachable("the daemon's answer has a stdout or stderr that is not text")
    return code, out, err


def fallback(name: str, action: str, why: str) -> Result:
    """The configured action for ``name`` when the daemon did not decide.

    "ask" means something only for PreToolUse (Claude Code prompts as if no
    hook were installed); "deny" blocks PreToolUse, PermissionRequest and
    UserPromptSubmit; anything else passes (exit 0, silent). A Stop blocked
    whenever agentdeck is down would loop the model.
    """
    if name == "PreToolUse" and action == "ask":
        return decision("ask", f"agentdeck is not reachable ({why}): Claude Code asks instead")
    if action != "deny":
        return 0, "", ""
    reason = f"agentdeck is not reachable ({why}) and this profile denies when it is unreachable"
    if name == "PreToolUse":
        return decision("deny", reason)
    if name == "PermissionRequest":
        output = {"hookEventName": name, "decision": {"behavior": "deny", "message": reason}}
        return 0, json.dumps({"hookSpecificOutput": output}) + "\n", ""
    if name == "UserPromptSubmit":
        return 0, json.dumps({"decision": "block", "reason": reason}) + "\n", ""
    return 0, "", ""


def decision(permission: str, reason: str) -> Result:
    output = {
        "hookEventName": "PreToolUse",
        "permissionDecision": permission,
        "permissionDecisionReason": reason,
    }
    return 0, json.dumps({"hookSpecificOutput": output}) + "\n", ""


def one_line(text: str) -> str:
    return " ".join(text.split())[:500]


def main() -> None:
    """Wire ``run`` to the process, then leave at once (no interpreter teardown)."""
    code, answered = 0, False
    try:
        environ = {}
        for key in (AGENT_ENV, RUNNER_ENV, *FORWARDED_ENV, *REMOTE_ENV):
            value = posix.environ.get(key.encode())
            if value is not None:
                environ[key] = value.decode("utf-8", "surrogateescape")
        code, out, err = run(sys.argv, read_stdin(), environ, STARTED)
        answered = True
        write(1, out)
        write(2, err)
    except BaseException as exc:  # noqa: BLE001 - top-level: never a traceback
        # A second Ctrl-C must not interrupt the fallback (nor print a traceback).
        _signal.signal(_signal.SIGINT, _signal.SIG_IGN)
        code = 0
        if not answered:  # the event's fallback, if we got as far as knowing the event
            code, out, _ = fallback(current["name"], current["action"], "the hook client failed")
            write(1, out)
        write(2, PREFIX + one_line(f"{type(exc).__name__}: {exc}") + "\n")
    posix._exit(code)


def read_stdin() -> bytes:
    """All of stdin, or ``TimeoutError`` if it stays open (an alarm guards the read)."""

    def expired(signum: int, frame: object) -> None:
        raise TimeoutError(f"stdin was not closed within {STDIN_DEADLINE} s")

    previous = _signal.signal(_signal.SIGALRM, expired)
    _signal.alarm(STDIN_DEADLINE)
    try:
        return sys.stdin.buffer.read()
    finally:
        _signal.alarm(0)
        _signal.signal(_signal.SIGALRM, previous)


def write(fd: int, text: str) -> None:
    """All of ``text`` to ``fd``, unbuffered (we leave with ``_exit``, nothing is flushed)."""
    try:
        data = text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        data = text.encode("utf-8", "replace")
    try:
        while data:
            data = data[posix.write(fd, data) :]
    except OSError:
        pass  # Claude Code stopped listening; nothing left to tell it
