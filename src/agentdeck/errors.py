"""The one error tree. Adapters raise these; the CLI and web layer translate them.

Every error says what happened (``message``) and, where it helps, what to do next
(``hint``). Structured fields let callers react without parsing text.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing's own costs the CLI's quick path (which reads this) ~10 ms
if TYPE_CHECKING:
    from collections.abc import Sequence


class AgentdeckError(Exception):
    """Base of every error agentdeck raises on purpose."""

    exit_code: int = 1

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return f"{self.message} ({self.hint})" if self.hint else self.message


class UsageError(AgentdeckError):
    """The caller asked for something malformed (bad option, bad value)."""

    exit_code = 2


class OutOfRange(UsageError):
    """A value no request can use: a reference longer than any agent's, a number
    past what the store holds. Refused before the store sees it (the API: 422)."""


class NotFound(AgentdeckError):
    """An id or name that does not exist."""

    def __init__(self, kind: str, ident: str, *, hint: str | None = None) -> None:
        super().__init__(f"no {kind} with id {ident!r}", hint=hint)
        self.kind = kind
        self.ident = ident


class ConfigError(AgentdeckError):
    """Settings or the home directory cannot be used as given."""


class ScenarioError(AgentdeckError):
    """A scripted-model scenario file is malformed."""

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


class AgentProcessError(AgentdeckError):
    """The Claude Code process could not be started or died unexpectedly."""

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


class SecretNotKept(Refused):
    """What would have to be given again held a secret, which agentdeck never writes
    down: only its redacted copy is stored, so it is refused rather than sent
    redacted (a first prompt after a restart, a message queued for another process)."""


class ShuttingDown(AgentdeckError):
    """The daemon is stopping: it starts no agent now."""

    def __init__(self, message: str = "the daemon is stopping: it starts no agent now") -> None:
        super().__init__(message, hint="start it again (agentdeck up), then retry")


class PolicyDenied(AgentdeckError):
    """A tool call was refused by policy."""

    def __init__(self, reason: str, rule: str | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.rule = rule


class PolicyError(AgentdeckError):
    """A permission rule or profile is malformed: where (``source``, ``line``) and what."""

    exit_code = 2

    def __init__(self, source: str, problem: str, *, line: int | None = None) -> None:
        where = f"{source}, line {line}" if line is not None else source
        super().__init__(f"{where}: {problem}")
        self.source = source
        self.line = line
        self.problem = problem


class DeliveryFailed(AgentdeckError):
    """A notification target did not take a notification (test or replay)."""

    def __init__(self, target: str, reason: str) -> None:
        super().__init__(
            f"notification target {target!r} failed: {reason}",
            hint="check the target's URL and that it answers 2xx; `agentdeck notify list`",
        )
        self.target = target
        self.reason = reason
