"""The one error tree. Adapters raise these; the CLI and web layer translate them.

Every error says what happened (``message``) and, where it helps, what to do next
(``hint``). Structured fields let callers react without parsing text.

Each class carries its HTTP status (``http_status``): the daemon renders an error as
``to_wire`` says (``{"error": {"status", "message", "hint", "type", ...}}``) and a
client rebuilds the same class from that body with ``from_wire``: one mapping, both
directions.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing's own costs the CLI's quick path (which reads this) ~10 ms
if TYPE_CHECKING:
    from collections.abc import Sequence


class AgentdeckError(Exception):
    """Base of every error agentdeck raises on purpose."""

    exit_code: int = 1
    http_status: int = 500
    # Structured fields the error body carries beside the message: (body key, attribute).
    wire_fields: tuple[tuple[str, str], ...] = ()

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return f"{self.message} ({self.hint})" if self.hint else self.message


class UsageError(AgentdeckError):
    """The caller asked for something malformed (bad option, bad value)."""

    http_status = 400
    exit_code = 2


class OutOfRange(UsageError):
    """A value no request can use: a reference longer than any agent's, a number
    past what the store holds. Refused before the store sees it (the API: 422)."""

    http_status = 422


class NotFound(AgentdeckError):
    """An id or name that does not exist."""

    http_status = 404
    wire_fields = (("kind", "kind"), ("id", "ident"))

    def __init__(self, kind: str, ident: str, *, hint: str | None = None) -> None:
        super().__init__(f"no {kind} with id {ident!r}", hint=hint)
        self.kind = kind
        self.ident = ident


class ConfigError(AgentdeckError):
    """Settings or the home directory cannot be used as given."""


class ScenarioError(AgentdeckError):
    """A scripted-model scenario file is malformed."""

    http_status = 422
    exit_code = 2

    def __init__(self, file: str, problem: str, *, turn: int | None = None) -> None:
        where = f"{file}, turn {turn}" if turn is not None else file
        super().__init__(f"{where}: {problem}")
        self.file = file
        self.turn = turn
        self.problem = problem


class StoreError(AgentdeckError):
    """The database could not be opened, migrated or written."""


class DiskFull(StoreError):
    """The disk holding the database has no room left (SQLite's SQLITE_FULL, ENOSPC):
    what was to be written is not, and is said so in the log."""

    http_status = 507


class AgentProcessError(AgentdeckError):
    """The Claude Code process could not be started or died unexpectedly."""

    http_status = 502

    def __init__(
        self,
        message: str,
        *,
        exit_code: int | None = None,
        stderr: str = "",
        hint: str | None = None,
    ) -> None:
        super().__init__(message, hint=hint)
        self.process_exit_code = exit_code
        self.stderr = stderr


class CLINotFound(AgentProcessError):
    """The Claude Code CLI binary is missing."""


class InvalidState(AgentdeckError):
    """The agent (or the approval request, the question: ``noun``) is not in a state
    that allows the requested operation."""

    http_status = 409

    def __init__(self, agent_id: str, state: str, operation: str, *, noun: str = "agent") -> None:
        super().__init__(
            f"{noun} {agent_id} is {state}; cannot {operation}",
        )
        self.agent_id = agent_id
        self.state = state
        self.operation = operation


class TemplateError(AgentdeckError):
    """An agent template is malformed: every problem (file, key, what is wrong),
    one per line."""

    http_status = 422
    exit_code = 2

    def __init__(self, problems: Sequence[object]) -> None:
        self.problems = list(problems)
        super().__init__("\n".join(str(p) for p in self.problems))


class WorktreeError(UsageError):
    """A worktree cannot be made or read: not a repository, a dirty base, a detached
    HEAD, a branch name taken, git failing."""


class SandboxUnavailable(AgentdeckError):
    """A profile requires a sandbox this machine cannot give: what is missing and
    how to get it."""


class Refused(AgentdeckError):
    """A well-formed request the deck's rules refuse now: a limit of the agent tree,
    a used-up budget, a question already answered by someone else."""

    http_status = 409


class Fenced(Refused):
    """A runner host wrote for an agent whose lease it no longer holds (expired, or
    claimed by another host since): the write is refused, nothing of it stored. The
    host must stop that agent's process; the agent's new holder writes for it now."""

    wire_fields = (("host", "host"), ("agent_id", "agent_id"))

    def __init__(self, host: str, agent_id: str, token: int) -> None:
        super().__init__(
            f"runner host {host} no longer holds agent {agent_id}'s lease (token {token}): "
            "its write was refused",
            hint="stop the agent's process on this host; `agentdeck hosts` shows who holds it",
        )
        self.host = host
        self.agent_id = agent_id
        self.token = token


class SecretNotKept(Refused):
    """What would have to be given again held a secret, which agentdeck never writes
    down: only its redacted copy is stored, so it is refused rather than sent
    redacted (a first prompt after a restart, a message queued for another process)."""


class ShuttingDown(AgentdeckError):
    """The daemon is stopping: it starts no agent now."""

    http_status = 503

    def __init__(self, message: str = "the daemon is stopping: it starts no agent now") -> None:
        super().__init__(message, hint="start it again (agentdeck up), then retry")


class Forbidden(AgentdeckError):
    """The caller's role does not allow this (a viewer steering, an operator managing
    users): the API's 403 for a route above the token's role."""

    http_status = 403


class PolicyDenied(AgentdeckError):
    """A tool call was refused by policy."""

    http_status = 403

    def __init__(self, reason: str, rule: str | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.rule = rule


class PolicyError(AgentdeckError):
    """A permission rule or profile is malformed: where (``source``, ``line``) and what."""

    http_status = 422
    exit_code = 2

    def __init__(self, source: str, problem: str, *, line: int | None = None) -> None:
        where = f"{source}, line {line}" if line is not None else source
        super().__init__(f"{where}: {problem}")
        self.source = source
        self.line = line
        self.problem = problem


class DeliveryFailed(AgentdeckError):
    """A notification target did not take a notification (test or replay)."""

    http_status = 502

    def __init__(self, target: str, reason: str) -> None:
        super().__init__(
            f"notification target {target!r} failed: {reason}",
            hint="check the target's URL and that it answers 2xx; `agentdeck notify list`",
        )
        self.target = target
        self.reason = reason


class DaemonUnavailable(AgentdeckError):
    """No daemon answers where a client looks for one: none runs, it is restarting,
    it did not answer in time, or its event stream broke."""

    http_status = 503


class BrokenStream(DaemonUnavailable):
    """The daemon's event stream carried a line that is not one of an event stream
    (not UTF-8, or longer than any it writes): read it again from the last event."""


# --- the error body: the daemon renders it, a client rebuilds the error -------------

# An answer without a type we know (a route the daemon lacks, an invalid body, a
# subclass defined outside this module) is rebuilt as the class its status means.
_BY_STATUS: dict[int, type[AgentdeckError]] = {
    400: UsageError,
    403: Forbidden,
    404: NotFound,
    409: InvalidState,
    422: UsageError,
}


def to_wire(exc: AgentdeckError) -> dict[str, object]:
    """The body the daemon answers an error with (its status: ``exc.http_status``)."""
    error: dict[str, object] = {
        "status": exc.http_status,
        "message": exc.message,
        "hint": exc.hint,
        "type": type(exc).__name__,
    }
    for key, attribute in exc.wire_fields:
        error[key] = getattr(exc, attribute)
    return {"error": error}


def _named(name: object) -> type[AgentdeckError] | None:
    """The class of this module called ``name``: only ours, never another module's."""
    if not isinstance(name, str):
        return None
    found = globals().get(name)
    ours = isinstance(found, type) and issubclass(found, AgentdeckError)
    return found if ours and found.__module__ == __name__ else None


def from_wire(status: int, body: object, path: str = "?") -> AgentdeckError:
    """The error a daemon's answer (its status and its parsed JSON ``body``) says, as
    the class it was raised as, with its message, hint and structured fields. A body
    not in our shape still says the status; a 404 that does not name what is missing
    names the ``path`` asked for."""
    error = body.get("error") if isinstance(body, dict) else None
    if not isinstance(error, dict) or not isinstance(error.get("message"), str):
        error = {"message": f"daemon answered {status}"}
    hint = error.get("hint") if isinstance(error.get("hint"), str) else None
    named = _named(error.get("type"))
    cls = named if named is not None and named.http_status == status else None
    cls = cls or _BY_STATUS.get(status, AgentdeckError)
    rebuilt = cls.__new__(cls)
    AgentdeckError.__init__(rebuilt, error["message"], hint=hint)
    _fill(rebuilt, error, path)
    return rebuilt


def from_body(status: int, body: bytes, path: str = "?") -> AgentdeckError:
    """``from_wire`` of a body as it came (bytes, maybe not JSON at all)."""
    from agentdeck import jsontext

    try:
        parsed = jsontext.loads(body) if body else None
    except ValueError:  # not JSON (a proxy's page): the status says it
        parsed = None
    return from_wire(status, parsed, path)


def _fill(rebuilt: AgentdeckError, error: dict[str, object], path: str) -> None:
    """The structured fields of a rebuilt error: the body's, or what the class's
    constructor would have set when the body lacks them."""
    for key, attribute in rebuilt.wire_fields:
        value = error.get(key)
        setattr(rebuilt, attribute, None if value is None else str(value))
    if isinstance(rebuilt, NotFound) and (rebuilt.kind is None or rebuilt.ident is None):
        rebuilt.kind, rebuilt.ident = "resource", path
    defaults: dict[type[AgentdeckError], dict[str, object]] = {
        InvalidState: {"agent_id": "?", "state": "?", "operation": "?"},
        ScenarioError: {"file": "?", "turn": None, "problem": rebuilt.message},
        PolicyError: {"source": "?", "line": None, "problem": rebuilt.message},
        PolicyDenied: {"reason": rebuilt.message, "rule": None},
        AgentProcessError: {"process_exit_code": None, "stderr": ""},
        TemplateError: {"problems": rebuilt.message.split("\n")},
        DeliveryFailed: {"target": "?", "reason": rebuilt.message},
    }
    for cls, fields in defaults.items():
        if isinstance(rebuilt, cls):
            for attribute, value in fields.items():
                setattr(rebuilt, attribute, value)
