"""The one settings object. Read once at start (``Settings()``), passed down.

Every field is documented in ``docs/settings.md``; a test fails when one is not.
Nothing else in agentdeck reads ``os.environ`` for a setting, but ``homedir`` (the
home alone, for the CLI's quick path, by the same rule).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import (
    AliasChoices,
    Field,
    SecretStr,
    ValidationError,
    field_validator,
)
from pydantic_settings import BaseSettings, SettingsConfigDict

from agentdeck.errors import ConfigError
from agentdeck.homedir import DEFAULT_HOME
from agentdeck.settings_bridges import BridgeSettings
from agentdeck.settings_database import hide_password, normalise
from agentdeck.settings_home import HomeLayout
from agentdeck.settings_hosts import HostSettings


class Settings(HomeLayout, HostSettings, BridgeSettings, BaseSettings):
    model_config = SettingsConfigDict(env_prefix="AGENTDECK_", extra="ignore")

    home: Path = Field(
        default=Path(DEFAULT_HOME),
        description="Where the database, token, workspaces, payloads and logs live.",
    )
    database_url: str | None = Field(
        default=None,
        description="The deck's store in PostgreSQL: postgresql+psycopg://USER[:PASSWORD]@HOST"
        "[:PORT]/DATABASE (needs `pip install 'agentdeck[postgres]'`). Unset: the SQLite "
        "file in the home. Shown and logged with its password hidden.",
    )
    host: str = Field(default="127.0.0.1", description="Address the daemon binds to.")
    port: int = Field(default=8765, description="Port the daemon listens on.")
    allowed_hosts: list[str] = Field(
        default_factory=list,
        description="Host names besides loopback and AGENTDECK_HOST that the daemon answers "
        "(e.g. behind a reverse proxy); JSON list.",
    )
    log_level: str = Field(default="WARNING", description="Logging level for agentdeck's logs.")
    claude_cli_path: Path | None = Field(
        default=None,
        description="Claude Code CLI to run; default: the one bundled with claude-agent-sdk.",
    )
    claude_config_dir: Path | None = Field(
        default=None,
        validation_alias=AliasChoices("AGENTDECK_CLAUDE_CONFIG_DIR", "CLAUDE_CONFIG_DIR"),
        description="Claude Code's config directory (default ~/.claude): if set, passed to "
        "agents as CLAUDE_CONFIG_DIR, and `hooks install --scope user` writes its "
        "settings.json there.",
    )
    mcp_secrets_file: Path | None = Field(
        default=None,
        description="A file of NAME=value lines a template's MCP servers may name as ${NAME} "
        "(looked up here first, then in the environment); it must be readable by its owner "
        "only (mode 0600), or agents using it do not start.",
    )
    model: str | None = Field(default=None, description="Default model for new agents.")
    profile: str = Field(
        default="default",
        description="Policy profile for agents that do not name one: a shipped profile "
        "(default, strict, permissive) or a YAML / settings.json file.",
    )
    max_retries: int = Field(
        default=2,
        description="CLAUDE_CODE_MAX_RETRIES for agents, so a dead endpoint fails in seconds.",
    )
    api_timeout_seconds: float | None = Field(
        default=None,
        description="If set, passed to agents as API_TIMEOUT_MS: how long one model request "
        "may hang before it is retried (Claude Code's default is 10 minutes); it also bounds "
        "the optional model-written summary (default 30 s).",
    )
    tool_output_limit: int = Field(
        default=32 * 1024,
        description="Bytes of a tool result kept in its event; the rest goes to payloads/.",
    )
    worktree_wip_commits: bool = Field(
        default=True,
        description="Commit what an agent in a worktree left uncommitted at the end of each "
        "turn (a WIP commit on its branch), so nothing lives only in a working tree.",
    )
    checkpoints: bool = Field(
        default=True,
        description="Snapshot an agent's workspace before each tool call that can change "
        "files (Write, Edit, MultiEdit, NotebookEdit, unknown tools, a Bash line not known "
        "to only read) into a shadow git repository under checkpoints/, so `agentdeck "
        "rewind` can restore it.",
    )
    checkpoint_max_file_bytes: int = Field(
        default=10 * 1024 * 1024,
        ge=1,
        description="Files larger than this are left out of checkpoints (each checkpoint "
        "lists them) and rewind leaves them alone.",
    )
    record: Literal["none", "all", "errors"] = Field(
        default="none",
        description="Record every agent's model traffic through the recording proxy into "
        "a cassette under recordings/: none, all, or errors (a cassette is kept only when "
        "the run ended in error). `agentdeck run --record` and the API's record: true "
        "record one agent whatever this says.",
    )
    recording_max_bytes: int = Field(
        default=50 * 1024 * 1024,
        ge=1024,
        description="Bytes one cassette may grow to; past them the proxy keeps forwarding "
        "but stops keeping bodies, and the cassette says so.",
    )
    raw_payloads: bool = Field(
        default=False,
        description="Keep the full tool outputs in payloads/ unscrubbed (files mode 0600). "
        "By default they are scrubbed of secrets like the events; events are always scrubbed.",
    )
    event_batch_size: int = Field(
        default=500, description="Most events the writer commits in one transaction."
    )
    stop_grace_seconds: float = Field(
        default=3.0,
        description="How long a stopping agent gets after each step (stdin close, SIGTERM).",
    )
    session_ttl_seconds: float = Field(
        default=43200.0,
        gt=0,
        allow_inf_nan=False,
        description="How long a dashboard login lasts before the token must be given again "
        "(a session also ends at once when its token is revoked or expires).",
    )
    connect_timeout_seconds: float = Field(
        default=60.0, description="Deadline for the Claude Code process to start and initialize."
    )
    command_poll_seconds: float = Field(
        default=0.2,
        description="How often an embedded run checks for steering commands from other clients.",
    )
    anthropic_base_url: str | None = Field(
        default=None,
        validation_alias=AliasChoices("AGENTDECK_ANTHROPIC_BASE_URL", "ANTHROPIC_BASE_URL"),
        description="Model endpoint passed to agents as ANTHROPIC_BASE_URL.",
    )
    anthropic_api_key: SecretStr | None = Field(
        default=None,
        validation_alias=AliasChoices("AGENTDECK_ANTHROPIC_API_KEY", "ANTHROPIC_API_KEY"),
        description="Passed to agents as ANTHROPIC_API_KEY. Never logged.",
    )
    claude_code_oauth_token: SecretStr | None = Field(
        default=None,
        validation_alias=AliasChoices(
            "AGENTDECK_CLAUDE_CODE_OAUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN"
        ),
        description="Passed to agents as CLAUDE_CODE_OAUTH_TOKEN. Never logged.",
    )
    url: str | None = Field(
        default=None,
        description="A deck's daemon by URL (https://HOST[:PORT][/PATH]; plain http only to "
        "this machine's loopback): with AGENTDECK_TOKEN, the hook client and the CLI's commands "
        "(agentdeck status, ls, approvals… and agentdeck mcp --orchestrate) go there instead of "
        "the home's daemon; agentdeck down refuses while it is set.",
    )
    token: SecretStr | None = Field(
        default=None,
        description="An operator's API token for AGENTDECK_URL (agentdeck tokens create). "
        "Never logged.",
    )
    allow_insecure_url: bool = Field(
        default=False,
        description="Let AGENTDECK_URL be plain http to another machine (the token then "
        "travels in clear).",
    )
    otel_endpoint: str | None = Field(
        default=None,
        validation_alias=AliasChoices("AGENTDECK_OTEL_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT"),
        description="OpenTelemetry collector's OTLP/HTTP base URL (e.g. http://localhost:4318): "
        "set, the daemon exports traces of its agents there and their Claude Code gets the "
        "same endpoint for its own telemetry. Unset: no OpenTelemetry at all.",
    )
    otel_protocol: str = Field(
        default="http/protobuf",
        validation_alias=AliasChoices("AGENTDECK_OTEL_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"),
        description="OTLP protocol; only http/protobuf is shipped (the daemon refuses to start "
        "with another while an endpoint is set).",
    )
    otel_sample_ratio: float = Field(
        default=1.0,
        ge=0.0,
        le=1.0,
        description="Share of agent trees traced when an OTLP endpoint is set (0 to 1, decided "
        "by the tree's trace id, so a tree is traced whole or not at all): what tracing costs "
        "the daemon's CPU scales with it.",
    )
    otel_metrics_exporter: str = Field(
        default="otlp",
        validation_alias=AliasChoices("AGENTDECK_OTEL_METRICS_EXPORTER", "OTEL_METRICS_EXPORTER"),
        description="otlp: while an OTLP endpoint is set, the daemon also pushes the figures of "
        "/metrics there; none: traces only. Another value stops the daemon at start.",
    )
    otel_metrics_endpoint: str | None = Field(
        default=None,
        validation_alias=AliasChoices(
            "AGENTDECK_OTEL_METRICS_ENDPOINT", "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT"
        ),
        description="Full OTLP/HTTP URL the metrics go to (default: the OTLP endpoint's "
        "/v1/metrics); used only while an OTLP endpoint is set.",
    )
    otel_metrics_protocol: str | None = Field(
        default=None,
        validation_alias=AliasChoices(
            "AGENTDECK_OTEL_METRICS_PROTOCOL", "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL"
        ),
        description="OTLP protocol of the metrics (default: the traces'); only http/protobuf "
        "is shipped (the daemon refuses to start with another while metrics are pushed).",
    )
    otel_metric_export_interval: str = Field(
        default="60000",
        validation_alias=AliasChoices(
            "AGENTDECK_OTEL_METRIC_EXPORT_INTERVAL", "OTEL_METRIC_EXPORT_INTERVAL"
        ),
        description="Milliseconds between two pushes of the metrics (100 to 86400000); a bad "
        "value stops the daemon at start while metrics are pushed, and a last push is made "
        "when it stops.",
    )

    max_depth: int = Field(
        default=3,
        ge=1,
        description="How deep the tree of agents may grow: an agent started by hand is at "
        "level 0, its children at 1. An orchestrator past it is told it cannot spawn.",
    )
    max_children: int = Field(
        default=8, ge=1, description="Live children one orchestrator may have at once."
    )
    max_live_agents: int = Field(
        default=32,
        ge=1,
        description="Agents that may run at once on this deck (each is a Claude Code process "
        "of about 220 MB); starting or spawning one more is refused with a clear error.",
    )
    max_concurrent_starts: int = Field(
        default=8,
        ge=1,
        description="Claude Code processes that may boot at once; more starts wait their "
        "turn as `starting` (a burst of starts does not stall a small machine).",
    )
    warm_pool: int = Field(
        default=1,
        ge=0,
        le=4,
        description="Claude Code processes the daemon keeps booted ahead: once an agent that "
        "started in a new workspace has ended its first turn, the next one with the same options "
        "(all but its prompt and name) is booted idle, and the next such agent takes it over "
        "(Claude Code's start-up, 0.5-2 s, saved). Each costs an idle Claude Code (about 165 MB, "
        "1 s of CPU to boot; see benchmarks/overhead.py); the options used last replace older "
        "ones, and one unclaimed for 10 minutes is stopped. 0 turns it off. A process sandbox is "
        "set up with it, for the workspace reserved for its agent. Not for agents with a "
        "working directory or a worktree, nor in `agentdeck run` without a daemon.",
    )
    deck_tool_timeout_seconds: float = Field(
        default=3600.0,
        ge=10,
        allow_inf_nan=False,
        description="Claude Code's timeout for one call of a deck tool (given to it as the "
        "deck MCP server's own timeout, so a shorter MCP_TOOL_TIMEOUT in the environment does "
        "not cut it). A wait_for_agents or ask_orchestrator call that would outlast it returns "
        "a 'still waiting' result shortly before, which the model repeats to wait on.",
    )
    sandbox_hosts: dict[str, str] = Field(
        default_factory=dict,
        description="Host names the sandbox's network proxy resolves to these addresses "
        "before asking DNS (JSON object, name to address), like curl --resolve: for allowed "
        "names with no DNS entry, such as a local server under a test name.",
    )
    hook_deadline_seconds: float = Field(
        default=2.0,
        gt=0,
        le=50,
        allow_inf_nan=False,
        description="How long the hook client waits for the daemon before it uses its "
        "fallback, more than 0 and at most 50 s: the installed hooks give the client 60 s, "
        "after which Claude Code kills it and lets the tool run (it fails open). The client "
        "reads it from hooks.json, which `hooks install` and `agentdeck up` write; there a "
        "value outside that range means 2 s.",
    )
    hook_fallbacks: dict[str, str] = Field(
        default_factory=dict,
        description="Per hook event, what the hook client does when the daemon is down or "
        "hung: pass (exit 0, no output), ask (Claude Code's own prompt; PreToolUse only) or "
        "deny (PreToolUse, PermissionRequest and UserPromptSubmit only); elsewhere ask and deny "
        "pass. JSON object. Default: every event passes, so Claude Code's own permission rules "
        "and prompt apply as without agentdeck; with AGENTDECK_HOOK_GOVERNANCE=full, "
        "PreToolUse denies under a profile whose default is deny.",
    )
    hook_governance: Literal["deny-and-ask", "full"] = Field(
        default="deny-and-ask",
        description="What the hooks enforce in Claude Code sessions started by hand: "
        "deny-and-ask applies the profile's deny and ask rules only, and otherwise gives no "
        "decision, so Claude Code's own permission rules (--allowedTools, its settings) and "
        "prompt decide; full applies the whole profile, its allow rules and default included, "
        "as for agents agentdeck runs. Any other value stops the daemon's start.",
    )
    hook_approval_seconds: float = Field(
        default=40.0,
        gt=0,
        le=45,
        allow_inf_nan=False,
        description="How long a call a hand-started session's hook asks about waits in the "
        "approval inbox (dashboard, `agentdeck approvals`, chat) for an answer; unanswered, "
        "the hook answers ask and Claude Code shows its own prompt. At most 45 s: the "
        "installed hooks give the client 60 s, and it waits at most 50 s.",
    )
    memory_enabled: bool = Field(
        default=True, description="Capture observations and summaries and inject context."
    )
    memory_ignore: list[str] = Field(
        default_factory=list,
        description="Project directories whose sessions are never remembered (JSON list); "
        "a project can also opt out with a file .agentdeck/ignore.",
    )
    memory_context_tokens: int = Field(
        default=1500,
        ge=0,
        description="Budget, in tokens, of the memory a new session is given at its start "
        "(0 or more; 0 tells it nothing).",
    )
    memory_model_summary: bool = Field(
        default=False,
        description="Also ask the model to summarize each session that ends (spends tokens): "
        "hand-started sessions at SessionEnd, agents run by agentdeck when their process ends.",
    )
    memory_summary_budget_usd: float = Field(
        default=0.05,
        description="Hard cap on what one model-written summary may cost; over it, none is made.",
    )
    memory_summary_model: str = Field(
        default="claude-haiku-4-5",
        description="Model used for the optional model-written summaries.",
    )

    notify_config: Path | None = Field(
        default=None,
        description="The notification targets' file (YAML; see the README's Team section); "
        "default: notify.yaml in the home, if it exists. A file that is wrong stops the "
        "daemon's start, naming the field; one holding a webhook secret must be mode 0600.",
    )
    notify_base_url: str | None = Field(
        default=None,
        description="The dashboard's address as people reach it, for the links in "
        "notifications (e.g. behind a reverse proxy); default: the daemon's own address.",
    )
    notify_timeout_seconds: float = Field(
        default=10.0,
        gt=0,
        allow_inf_nan=False,
        description="Deadline of one delivery attempt to a notification target.",
    )
    notify_attempts: int = Field(
        default=5,
        ge=1,
        description="Attempts to deliver one notification before it becomes a dead letter "
        "(`agentdeck notify dead`).",
    )
    notify_backoff_seconds: float = Field(
        default=2.0,
        ge=0,
        allow_inf_nan=False,
        description="Wait before the first retry of a failed notification; each further "
        "retry waits twice as long, up to AGENTDECK_NOTIFY_BACKOFF_MAX_SECONDS.",
    )
    notify_backoff_max_seconds: float = Field(
        default=300.0,
        ge=0,
        allow_inf_nan=False,
        description="Longest wait between two attempts to deliver a notification.",
    )
    notify_queue_size: int = Field(
        default=100,
        ge=1,
        description="Notifications one target may have waiting; one more becomes a dead "
        "letter at once (reason: queue full), so a slow target never holds anything up.",
    )

    @field_validator("database_url")
    @classmethod
    def _database_url(cls, value: str | None) -> str | None:
        return normalise(value) if value else None

    @property
    def database(self) -> Path | str:
        """What ``Store.open`` opens: the PostgreSQL URL when set, else the home's file."""
        return self.database_url or self.db_path

    @classmethod
    def load(cls) -> Settings:
        """Read the environment once; a bad value is a ``ConfigError`` naming its
        variable (never the value: it may be a secret)."""
        try:
            return cls()
        except ValidationError as exc:
            problems = "; ".join(
                f"AGENTDECK_{str(err['loc'][0]).upper()}: {err['msg']}"
                if err["loc"]
                else err["msg"]
                for err in exc.errors()
            )
            raise ConfigError(f"invalid setting: {problems}", hint="see docs/settings.md") from None

    def redacted(self) -> dict[str, Any]:
        """Effective settings for logging: secrets shown as set/unset only."""
        out: dict[str, Any] = {}
        for name in type(self).model_fields:
            value = getattr(self, name)
            if isinstance(value, SecretStr):
                value = "***" if value.get_secret_value() else ""
            if name == "database_url" and value:
                value = hide_password(value)
            out[name] = str(value) if isinstance(value, Path) else value
        return out
