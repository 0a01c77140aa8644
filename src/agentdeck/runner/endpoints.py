"""An agent's model endpoint, for its Claude Code process: the home's
``endpoints.yaml`` read, the endpoint chosen (``core.endpoints``), its key looked
up.

The key is read as the process starts from the operator's secrets file
(``AGENTDECK_MCP_SECRETS_FILE``, 0600) then agentdeck's environment, under the
name the endpoint gives (``api_key_env``), and goes into that process's
environment only: never the spec, the store, the events, a log or a command
line. A name set nowhere refuses the agent, naming the variable (never a value).
Whatever endpoint is used, the deck's own credentials are withheld: Claude Code
would otherwise send the deck's Anthropic key or the user's OAuth token to
whatever URL the endpoint names.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import yaml

from agentdeck.core.endpoints import (
    Endpoint,
    EndpointPolicy,
    ModelEndpoint,
    choose,
    parse_endpoints,
)
from agentdeck.errors import AgentdeckError, ConfigError, Refused, TemplateError
from agentdeck.runner.mcp_servers import SECRETS_VAR, read_secrets_file

if TYPE_CHECKING:
    from agentdeck.core.agent import AgentSpec
    from agentdeck.core.policy_profile import Profile
    from agentdeck.core.templates import Template
    from agentdeck.settings import Settings

__all__ = [
    "endpoint_env",
    "endpoints_file",
    "load_endpoints",
    "model_url",
    "resolve",
    "shown",
    "unreached",
]

FILE_NAME = "endpoints.yaml"
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # read at every agent start
MAX_FILE = 64 * 1024
# Sent when an endpoint names no key: something must be, or Claude Code falls
# back to the user's own login and sends that.
NO_KEY = "sk-agentdeck-no-key"
# Claude Code's credentials besides ANTHROPIC_API_KEY: emptied for an endpoint.
WITHHELD = ("ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN")


def endpoints_file(settings: Settings) -> Path:
    return settings.home.expanduser() / FILE_NAME


def load_endpoints(settings: Settings) -> dict[str, Endpoint]:
    """The operator's named endpoints (none when the file does not exist);
    ``ConfigError`` naming the file and what is wrong."""
    path = endpoints_file(settings)
    try:
        if path.stat().st_size > MAX_FILE:
            raise ConfigError(f"{path}: larger than {MAX_FILE // 1024} KiB")
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{path} is not UTF-8 text") from None
    try:
        data = yaml.load(text, Loader=_LOADER)  # a safe loader (the C one where built)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f", line {mark.line + 1}" if mark is not None else ""
        raise ConfigError(f"{path}{where}: not YAML") from None
    return parse_endpoints(data, str(path))


def resolve(spec: AgentSpec, profile: Profile | None, settings: Settings) -> Endpoint | None:
    """The endpoint ``spec`` runs against under ``profile`` (None: the deck's own,
    ``settings.anthropic_base_url`` or Anthropic's). ``ConfigError`` /
    ``Refused`` as ``core.endpoints.choose`` says."""
    policy = profile.endpoints if profile is not None else None
    if spec.model_endpoint is None and (policy is None or policy.endpoint is None):
        return None  # nothing to read
    source = f"template {spec.template}" if spec.template else "the agent's spec"
    return choose(
        spec.model_endpoint,
        policy or EndpointPolicy(),
        load_endpoints(settings),
        source=source,
        profile=f"profile {profile.name}" if profile is not None else "its profile",
    )


def endpoint_env(
    endpoint: Endpoint, settings: Settings, environ: Mapping[str, str]
) -> dict[str, str]:
    """What Claude Code's environment gets for ``endpoint``: its URL, its key,
    the deck's other credentials emptied. ``ConfigError`` naming the variable
    when the key is set nowhere."""
    key = NO_KEY
    if endpoint.api_key_env is not None:
        var = endpoint.api_key_env
        secrets = (
            read_secrets_file(settings.mcp_secrets_file)
            if settings.mcp_secrets_file is not None
            else {}
        )
        found = secrets.get(var, environ.get(var))
        if not found:
            raise ConfigError(
                f"model endpoint {endpoint.shown()} needs its key in {var}, which is set nowhere",
                hint=f"set {var} in agentdeck's environment or in {SECRETS_VAR}",
            )
        key = found
    return {
        "ANTHROPIC_BASE_URL": endpoint.base_url,
        "ANTHROPIC_API_KEY": key,
        **dict.fromkeys(WITHHELD, ""),
    }


def model_url(spec: AgentSpec, profile: Profile | None, settings: Settings) -> str | None:
    """The URL ``spec``'s model endpoint names, if any: what its sandbox lets through."""
    endpoint = resolve(spec, profile, settings)
    return endpoint.base_url if endpoint is not None else None


def shown(
    wanted: ModelEndpoint | None, profile: Profile | None, settings: Settings
) -> tuple[str, str]:
    """``agents show``'s value and origin for an endpoint: its name and URL and the
    variable its key is in, never the key; why it would be refused, if it would."""
    policy = profile.endpoints if profile is not None else EndpointPolicy()
    by = f"profile {profile.name}" if profile is not None else "its profile"
    try:
        endpoint = choose(wanted, policy, load_endpoints(settings), source="template", profile=by)
    except AgentdeckError as exc:
        return "refused", exc.message
    if endpoint is None:
        return settings.anthropic_base_url or "Anthropic's API", "the deck's own (settings)"
    key = f"key in {endpoint.api_key_env}" if endpoint.api_key_env else "no key"
    return endpoint.shown(), f"{'template' if wanted else by}; {key}"


async def unreached(url: str, timeout: float) -> str | None:
    """None when ``url`` answers anything over HTTP within ``timeout`` (no key is
    sent: only whether it is there), else why not."""
    import httpx

    try:
        async with httpx.AsyncClient(timeout=timeout) as http:
            await http.head(url)
    except httpx.HTTPError as exc:
        return type(exc).__name__
    return None


def refuse_endpoint(template: Template, profile: Profile, settings: Settings) -> None:
    """``TemplateError`` (its ``model_endpoint`` line) when ``profile`` would refuse
    the template's endpoint or ``endpoints.yaml`` lacks its name: said at spawn
    and by ``agents validate``, before anything starts. Its key is looked up only
    as the agent starts."""
    from agentdeck.core.templates import Problem

    if template.model_endpoint is None:
        return
    source = f"template {template.name}"
    try:
        choose(
            template.model_endpoint,
            profile.endpoints,
            load_endpoints(settings),
            source=source,
            profile=f"profile {profile.name}",
        )
    except (ConfigError, Refused) as exc:
        why = exc.message.removeprefix(f"{source}: ")
        hint = f"; {exc.hint}" if exc.hint else ""
        raise TemplateError([Problem(template.source, "model_endpoint", why + hint)]) from None
