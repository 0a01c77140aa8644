"""Build ``ClaudeAgentOptions`` for an agent from its spec and the settings."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from agentdeck.core.agent import Agent, AgentSpec
from agentdeck.errors import CLINotFound
from agentdeck.runner import sdk_private
from agentdeck.runner.callbacks import Stopping, held, held_hooks
from agentdeck.settings import Settings
from agentdeck.telemetry.claude_env import claude_env

if TYPE_CHECKING:
    from claude_agent_sdk.types import (
        CanUseTool,
        ClaudeAgentOptions,
        EffortLevel,
        HookCallback,
        HookMatcher,
        PermissionMode,
        SdkPluginConfig,
        SettingSource,
        SystemPromptPreset,
        ThinkingConfig,
    )

    from agentdeck.core.policy_profile import Profile
    from agentdeck.runner.skills import SkillOptions


def resolve_cli(settings: Settings) -> Path:
    path = settings.claude_cli_path or sdk_private.bundled_cli_path()
    path = path.expanduser()
    if not path.is_file():
        raise CLINotFound(
            f"Claude Code CLI not found at {path}",
            hint="reinstall agentdeck (claude-agent-sdk bundles the CLI) "
            "or set AGENTDECK_CLAUDE_CLI_PATH",
        )
    return path


def agent_env(
    settings: Settings, base_url: str | None = None, agent_id: str | None = None
) -> dict[str, str]:
    """What the Claude Code process gets on top of the inherited environment.

    The SDK already drops ``CLAUDECODE`` so the deck works inside a Claude Code
    session; the model endpoint and credentials pass through from the settings.
    """
    env = {"CLAUDE_CODE_MAX_RETRIES": str(settings.max_retries)}
    if agent_id is not None:
        # agentdeck's installed command hooks step aside for its own agents:
        # those are governed and remembered in-process. Only for the Claude
        # Code process itself, which the SDK spawns as our direct child: what
        # the agent starts (a nested `claude -p`) inherits both variables but
        # has another parent, so its hooks still report to the daemon.
        env["AGENTDECK_AGENT_ID"] = agent_id
        env["AGENTDECK_RUNNER_PID"] = str(os.getpid())
    url = base_url or settings.anthropic_base_url
    if url:
        env["ANTHROPIC_BASE_URL"] = url
    if settings.anthropic_api_key is not None:
        env["ANTHROPIC_API_KEY"] = settings.anthropic_api_key.get_secret_value()
    if settings.claude_code_oauth_token is not None:
        env["CLAUDE_CODE_OAUTH_TOKEN"] = settings.claude_code_oauth_token.get_secret_value()
    if base_url is not None:
        # The scripted model: nothing else should leave the machine, and any
        # key will do.
        env.setdefault("ANTHROPIC_API_KEY", "sk-agentdeck-scripted")
        env["CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"] = "1"
    if settings.api_timeout_seconds is not None:
        env["API_TIMEOUT_MS"] = str(int(settings.api_timeout_seconds * 1000))
    if settings.claude_config_dir is not None:
        env["CLAUDE_CONFIG_DIR"] = str(settings.claude_config_dir.expanduser())
    # Telemetry on: Claude Code's own joins the deck's trace (empty when off).
    env.update(claude_env(settings, agent_id))
    return env


MAX_LINE_BYTES = 64 * 1024 * 1024


def build_options(
    spec: AgentSpec,
    *,
    settings: Settings,
    cwd: Path,
    can_use_tool: CanUseTool | None,
    stderr: Any,
    pre_tool: HookCallback | None = None,
    hook_timeout: float = 660.0,
    extra_hooks: dict[str, list[HookMatcher]] | None = None,
    agent_id: str | None = None,
    base_url: str | None = None,
    resume: str | None = None,
    fork: bool = False,
    mcp_servers: dict[str, Any] | None = None,
    extra_env: dict[str, str] | None = None,
    stopping: Stopping | None = None,
    profile: Profile | None = None,
) -> ClaudeAgentOptions:
    """The SDK's options for one agent; with ``stopping``, no callback answers a
    process that is being stopped (``callbacks.held``). With ``profile`` (the one
    it runs under), a template key that would give more is refused
    (``TemplateError``) before anything starts."""
    # Here, not at module level: the runner imports this module, and a deck opened
    # for one command starts no Claude Code (the SDK imports all of mcp).
    from claude_agent_sdk.types import ClaudeAgentOptions

    if stopping is not None:
        can_use_tool = held(stopping, can_use_tool) if can_use_tool else None
        pre_tool = held(stopping, pre_tool) if pre_tool else None
        extra_hooks = held_hooks(stopping, extra_hooks)
    system_prompt: SystemPromptPreset = {"type": "preset", "preset": "claude_code"}
    if spec.append_system_prompt:
        system_prompt["append"] = spec.append_system_prompt
    # A template's tool list: the built-in tools it names are the only ones
    # Claude Code offers (MCP tools in it are enforced by the policy).
    builtins = list(dict.fromkeys(t.split("(")[0] for t in spec.tools if not t.startswith("mcp__")))
    claude = spec.claude  # the template's other Claude Code keys
    if profile is not None and (claude or spec.tools):
        from agentdeck.core.templates_policy import refuse_loosening

        refuse_loosening(f"template {spec.template}", spec.tools, claude, profile)
    servers, server_env = _template_servers(spec, settings)
    skills = _skills(spec, settings, cwd)
    return ClaudeAgentOptions(
        tools=builtins if spec.tools else None,
        # The template's servers (Claude Code expands their ``${NAME}`` from the
        # values in its environment: no secret on its command line); the deck's last.
        mcp_servers={**servers, **(mcp_servers or {})},
        cli_path=resolve_cli(settings),
        cwd=str(cwd),
        model=spec.model or settings.model,
        # A rule that allows a whole tool ("Read", "Read(*)") would be approved by the CLI
        # before agentdeck's policy sees the call (the SDK refuses to start then): the
        # policy applies it instead, after its deny rules.
        allowed_tools=[rule for rule in spec.allow if not _whole_tool(rule)],
        disallowed_tools=list(spec.deny),
        system_prompt=system_prompt,
        # Edits inside the agent's own workspace are its job; everything else
        # goes through the allow/deny rules and ``can_use_tool``. A template's
        # mode (held to its profile: core.templates_policy) replaces it.
        permission_mode=cast("PermissionMode", claude.permission_mode or "acceptEdits"),
        effort=cast("EffortLevel | None", claude.effort),
        # Its command hooks, as Claude Code's settings (the sandbox's merge in).
        settings=json.dumps(claude.hook_settings()) if claude.hooks else None,
        max_turns=spec.max_turns,
        max_budget_usd=spec.budget_usd,
        env=_config_dir(
            spec,
            settings,
            agent_id,
            profile,
            {
                **server_env,
                **agent_env(settings, base_url, agent_id),
                **_endpoint_env(spec, profile, settings, scripted=base_url is not None),
                **(extra_env or {}),
            },
        ),
        thinking=cast("ThinkingConfig | None", spec.thinking),
        can_use_tool=can_use_tool,
        # The policy sees every tool call first. A failing or timed-out hook must
        # block, not fail open (Claude Code's default for hooks).
        hooks=_hooks(pre_tool, hook_timeout, extra_hooks),
        stderr=stderr,
        resume=resume,
        fork_session=fork,
        # A tool may print megabytes on one stream-json line.
        max_buffer_size=MAX_LINE_BYTES,
        # The text as it is written, for live followers (never stored: the hub
        # coalesces it; the final text is one event as before).
        include_partial_messages=True,
        # A structured result: Claude Code offers StructuredOutput (core.output_schema).
        output_format={"type": "json_schema", "schema": spec.output_schema}
        if spec.output_schema
        else None,
        # A template's skills: only those are listed (runner.skills).
        skills=skills.skills,
        plugins=cast("list[SdkPluginConfig]", skills.plugins),
        setting_sources=cast("list[SettingSource] | None", skills.setting_sources),
        agents=skills.agents,
    )


def _skills(spec: AgentSpec, settings: Settings, cwd: Path) -> SkillOptions:
    from agentdeck.runner.skills import for_agent

    source = f"template {spec.template}" if spec.template else "the agent's spec"
    return for_agent(spec.claude, settings, cwd, source=source)


def _config_dir(
    spec: AgentSpec,
    settings: Settings,
    agent_id: str | None,
    profile: Profile | None,
    env: dict[str, str],
) -> dict[str, str]:
    """``env`` with the agent's own config directory when its template or profile
    isolates it (runner.config_dirs)."""
    from agentdeck.runner.config_dirs import is_isolated, isolate

    if agent_id is None or not is_isolated(spec, profile):
        return env

    return {**env, "CLAUDE_CONFIG_DIR": str(isolate(settings, agent_id, env))}


def _endpoint_env(
    spec: AgentSpec, profile: Profile | None, settings: Settings, *, scripted: bool
) -> dict[str, str]:
    """The model endpoint its template or profile names, and its key (runner.endpoints):
    checked for the scripted model too, whose URL then stays."""
    from agentdeck.runner.endpoints import endpoint_env, resolve

    endpoint = resolve(spec, profile, settings)
    if endpoint is None:
        return {}
    env = endpoint_env(endpoint, settings, os.environ)
    return {} if scripted else env


def _template_servers(spec: AgentSpec, settings: Settings) -> tuple[dict[str, Any], dict[str, str]]:
    from agentdeck.runner.mcp_servers import template_servers

    source = f"template {spec.template}" if spec.template else "the agent's spec"
    return template_servers(spec.claude, os.environ, settings.mcp_secrets_file, source=source)


def _hooks(
    pre_tool: HookCallback | None,
    timeout: float,
    extra: dict[str, list[HookMatcher]] | None,
) -> dict[Any, list[HookMatcher]] | None:
    from claude_agent_sdk.types import HookMatcher

    hooks: dict[Any, list[HookMatcher]] = dict(extra or {})
    if pre_tool is not None:
        # The policy sees every tool call first. A failing or timed-out hook must
        # block, not fail open (Claude Code's default for hooks).
        hooks["PreToolUse"] = [
            HookMatcher(matcher=None, hooks=[pre_tool], timeout=timeout, on_failure="block")
        ]
    return hooks or None


def _whole_tool(rule: str) -> bool:
    """Whether an allow rule allows every call of its tool (no specifier, ``()``, ``(*)``)."""
    rule = rule.strip()
    if "(" not in rule:
        return bool(rule)
    return rule.endswith(")") and rule[rule.index("(") + 1 : -1] in ("", "*")


def settings_for(
    settings: Settings, agent: Agent, base_url: str | None, profile: Profile | None
) -> Settings:
    """``settings`` as the agent's sandbox sees them: naming its own config directory
    (made and seeded now) when it is isolated; ``base_url``: its scripted model's."""
    from agentdeck.runner.config_dirs import is_isolated, isolate

    if not is_isolated(agent.spec, profile):
        return settings
    parent = agent.extra.get("forked_from")
    env = agent_env(settings, base_url, agent.id)
    own = isolate(settings, agent.id, env, forked_from=parent if isinstance(parent, str) else None)
    return settings.model_copy(update={"claude_config_dir": own})
