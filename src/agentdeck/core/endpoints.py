"""Model endpoints: where an agent's Claude Code sends its requests, and with which
key. Pure.

The operator names endpoints in the home's ``endpoints.yaml``::

    gateway:                         # lowercase letters, digits, hyphens
      base_url: https://llm.example.com/anthropic
      api_key_env: GATEWAY_KEY       # the key's variable: agentdeck's environment
                                     # or the 0600 secrets file (never the key)
    local:
      base_url: http://127.0.0.1:4000   # no api_key_env: no key is sent

A template says ``model_endpoint: gateway`` (a name) or, inline,
``model_endpoint: {base_url: …, api_key_env: NAME}``; a profile says
``model_endpoint: NAME`` (its agents' endpoint when their template names none),
``model_endpoints: [NAME, …]`` (the only endpoints its agents may use) and
``inline_endpoints: true`` (a template may give a ``base_url`` of its own).

A template is hostile text (an agent may write one in its workspace), so:

* an inline ``base_url`` is used only when it is one ``endpoints.yaml`` names
  (then it is that endpoint, and its ``api_key_env`` must be that one's or
  absent) or when the profile allows inline endpoints; otherwise the agent is
  refused before anything starts: never the user's key sent to a URL the
  template chose;
* an ``api_key_env`` may never name the deck's own credentials (``AGENTDECK_*``
  anywhere; in a template also ``ANTHROPIC_*``, ``CLAUDE_*``, ``AWS_*``,
  ``GOOGLE_APPLICATION_*``); a URL never holds a user or password;
* a profile's ``model_endpoints`` pins what is used, inline or named;
* whatever endpoint is used, the agent's other credentials (the deck's Anthropic
  key, OAuth tokens) are withheld from its process (``runner.endpoints``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from agentdeck.core.agent_file import DECK_OWN_NAMES, looks_secret
from agentdeck.core.quoting import key_shown
from agentdeck.errors import ConfigError, Refused

__all__ = [
    "Endpoint",
    "EndpointPolicy",
    "ModelEndpoint",
    "choose",
    "endpoint_policy",
    "parse_endpoints",
    "parse_model_endpoint",
]

ENDPOINT_NAME = re.compile(r"^[a-z][a-z0-9]*(?:-[a-z0-9]+)*$")
KEY_ENV = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")
MAX_URL = 2048
MAX_ENDPOINTS = 64
# Never the key of an endpoint, whoever names it: the deck's own tokens.
DECK_TOKENS = ("AGENTDECK_",)
_CONTROL = re.compile(r"[\x00-\x20\x7f]")
_INLINE_KEYS = frozenset({"base_url", "api_key_env"})

Fail = Callable[[str | None, str], None]


@dataclass(frozen=True)
class ModelEndpoint:
    """What a template asks for: a ``name`` in ``endpoints.yaml``, or an inline
    ``base_url`` (with the variable its key is in, if any)."""

    name: str | None = None
    base_url: str | None = None
    api_key_env: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "base_url": self.base_url, "api_key_env": self.api_key_env}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> ModelEndpoint | None:
        if not data:
            return None
        return cls(data.get("name"), data.get("base_url"), data.get("api_key_env"))

    def shown(self) -> str:
        return self.name or str(self.base_url)


@dataclass(frozen=True)
class Endpoint:
    """An endpoint an agent is run against: ``name`` None for an inline one."""

    name: str | None
    base_url: str
    api_key_env: str | None = None

    def shown(self) -> str:
        return f"{self.name} ({self.base_url})" if self.name else f"{self.base_url} (inline)"


@dataclass(frozen=True)
class EndpointPolicy:
    """A profile's say: its agents' endpoint when their template names none, the
    only ones they may use (None: any the operator named), inline ones or not."""

    endpoint: str | None = None
    allowed: tuple[str, ...] | None = None
    inline: bool = False


# -- reading --------------------------------------------------------------------------


def url_problem(url: Any) -> str | None:
    """Why ``url`` is no endpoint's base URL, or None."""
    if not isinstance(url, str) or not url or len(url) > MAX_URL:
        return f"`base_url` must be an http:// or https:// address of at most {MAX_URL} characters"
    if _CONTROL.search(url):
        return "`base_url` holds spaces or control characters"
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - a port out of range raises
    except ValueError:
        return "`base_url` is not a URL"
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return "`base_url` must be an http:// or https:// address"
    if parts.username is not None or parts.password is not None or "@" in parts.netloc:
        return "`base_url` may not hold a user or password (keys come from api_key_env)"
    if parts.query or parts.fragment:
        return "`base_url` may not have a query or a fragment"
    if looks_secret(url):
        return "`base_url` holds what looks like a secret (keys come from api_key_env)"
    return None


def key_env_problem(name: Any, *, template: bool) -> str | None:
    """Why ``name`` may not be an endpoint's ``api_key_env``, or None. A template
    may not name any of the deck's or Claude Code's own credentials: it would
    send them to a place of its choosing."""
    if not isinstance(name, str) or not KEY_ENV.fullmatch(name):
        return "`api_key_env` must be a variable's name (letters, digits, _), never a key"
    refused = DECK_OWN_NAMES if template else DECK_TOKENS
    if name.upper().startswith(refused):
        return f"`api_key_env` may not name {name}: the deck's own credentials stay with it"
    return None


def same_place(a: str, b: str) -> bool:
    """Whether two base URLs are one endpoint (scheme and host case aside, a
    trailing slash aside, the default port aside)."""

    def norm(url: str) -> tuple[str, str, int | None, str]:
        p = urlsplit(url)
        port = p.port or {"http": 80, "https": 443}.get(p.scheme.lower())
        return p.scheme.lower(), (p.hostname or "").lower(), port, p.path.rstrip("/")

    try:
        return norm(a) == norm(b)
    except ValueError:
        return False


def parse_model_endpoint(
    value: Any, fail: Fail, *, key: str = "model_endpoint"
) -> ModelEndpoint | None:
    """A template's ``model_endpoint``: a name, or ``{base_url, api_key_env}``."""
    if value is None:
        return None
    if isinstance(value, str):
        if not ENDPOINT_NAME.fullmatch(value) or len(value) > 64:
            fail(key, "must name an endpoint of endpoints.yaml or be {base_url, api_key_env}")
            return None
        return ModelEndpoint(name=value)
    if not isinstance(value, Mapping):
        fail(key, "must name an endpoint of endpoints.yaml or be {base_url, api_key_env}")
        return None
    extra = sorted(key_shown(k) for k in value if k not in _INLINE_KEYS)
    if extra:
        fail(key, f"unknown key(s) {', '.join(extra)} (known: base_url, api_key_env)")
        return None
    problem = url_problem(value.get("base_url"))
    env = value.get("api_key_env")
    if problem is None and env is not None:
        problem = key_env_problem(env, template=True)
    if problem is not None:
        fail(key, problem)
        return None
    return ModelEndpoint(base_url=str(value["base_url"]), api_key_env=env)


def parse_endpoints(data: Any, source: str) -> dict[str, Endpoint]:
    """The operator's ``endpoints.yaml`` (``{name: {base_url, api_key_env}}``);
    ``ConfigError`` naming the file, the endpoint and what is wrong."""
    if data is None:
        return {}
    if not isinstance(data, Mapping):
        raise ConfigError(f"{source}: must map endpoint names to {{base_url, api_key_env}}")
    if len(data) > MAX_ENDPOINTS:
        raise ConfigError(f"{source}: more than {MAX_ENDPOINTS} endpoints")
    found: dict[str, Endpoint] = {}
    for name, entry in data.items():
        if not isinstance(name, str) or not ENDPOINT_NAME.fullmatch(name) or len(name) > 64:
            raise ConfigError(
                f"{source}: {key_shown(name)} is not an endpoint name "
                "(lowercase letters, digits, single hyphens)"
            )
        if not isinstance(entry, Mapping) or any(k not in _INLINE_KEYS for k in entry):
            raise ConfigError(f"{source}: {name}: must be {{base_url, api_key_env}}")
        problem = url_problem(entry.get("base_url"))
        env = entry.get("api_key_env")
        if problem is None and env is not None:
            problem = key_env_problem(env, template=False)
        if problem is not None:
            raise ConfigError(f"{source}: {name}: {problem}")
        found[name] = Endpoint(name, str(entry["base_url"]), env)
    return found


PROFILE_KEYS = ("model_endpoint", "model_endpoints", "inline_endpoints")


def endpoint_policy(
    data: Mapping[str, Any], error: Callable[[str, str], Exception]
) -> EndpointPolicy:
    """A profile's endpoint keys; ``error(key, problem)`` is raised for a bad one."""
    default = data.get("model_endpoint")
    if default is not None and (
        not isinstance(default, str) or not ENDPOINT_NAME.fullmatch(default)
    ):
        raise error("model_endpoint", "`model_endpoint` must name an endpoint of endpoints.yaml")
    allowed = data.get("model_endpoints")
    if allowed is not None:
        if not isinstance(allowed, list) or not all(
            isinstance(n, str) and ENDPOINT_NAME.fullmatch(n) for n in allowed
        ):
            raise error("model_endpoints", "`model_endpoints` must list endpoint names")
        allowed = tuple(dict.fromkeys(allowed))
        if default is not None and default not in allowed:
            raise error("model_endpoint", f"`model_endpoint` {default} is not in `model_endpoints`")
    inline = data.get("inline_endpoints", False)
    if not isinstance(inline, bool):
        raise error("inline_endpoints", "`inline_endpoints` must be true or false")
    return EndpointPolicy(default, allowed, inline)


def policy_meet(parent: EndpointPolicy, child: EndpointPolicy) -> EndpointPolicy:
    """What a child runs under: the endpoints both allow, inline only if both do."""
    if parent.allowed is None or child.allowed is None:
        allowed = child.allowed if parent.allowed is None else parent.allowed
    else:
        allowed = tuple(n for n in child.allowed if n in parent.allowed)
    return EndpointPolicy(
        child.endpoint or parent.endpoint, allowed, parent.inline and child.inline
    )


def policy_looser(child: EndpointPolicy, parent: EndpointPolicy) -> list[str]:
    out: list[str] = []
    if child.inline and not parent.inline:
        out.append("it allows inline model endpoints, its parent does not")
    if parent.allowed is not None:
        extra = (
            ["any"]
            if child.allowed is None
            else [n for n in child.allowed if n not in parent.allowed]
        )
        if extra:
            out.append(f"it allows model endpoints its parent does not: {', '.join(extra)}")
    return out


# -- choosing -------------------------------------------------------------------------


def choose(
    wanted: ModelEndpoint | None,
    policy: EndpointPolicy,
    named: Mapping[str, Endpoint],
    *,
    source: str,
    profile: str = "its profile",
) -> Endpoint | None:
    """The endpoint an agent runs against: its template's (``wanted``), else its
    profile's default, else None (the deck's own). ``ConfigError`` for a name
    ``endpoints.yaml`` does not hold; ``Refused`` for what the profile does not
    allow (an endpoint outside its ``model_endpoints``, an inline one)."""
    if wanted is None:
        if policy.endpoint is None:
            return None
        return _named(policy.endpoint, named, f"{profile}'s model_endpoint")
    if wanted.name is not None:
        found = _named(wanted.name, named, source)
    else:
        assert wanted.base_url is not None
        found = _inline(wanted, policy, named, source, profile)
    if policy.allowed is not None and found.name not in policy.allowed:
        allowed = ", ".join(policy.allowed) or "none"
        raise Refused(
            f"{source}: the model endpoint {found.shown()} is not one {profile} allows "
            f"(model_endpoints: {allowed})"
        )
    return found


def _named(name: str, named: Mapping[str, Endpoint], source: str) -> Endpoint:
    if name not in named:
        known = ", ".join(sorted(named)) or "none"
        raise ConfigError(
            f"{source}: no model endpoint named {name} in endpoints.yaml (named: {known})",
            hint="add it to endpoints.yaml in agentdeck's home",
        )
    return named[name]


def _inline(
    wanted: ModelEndpoint,
    policy: EndpointPolicy,
    named: Mapping[str, Endpoint],
    source: str,
    profile: str,
) -> Endpoint:
    assert wanted.base_url is not None
    problem = url_problem(wanted.base_url) or (
        key_env_problem(wanted.api_key_env, template=True) if wanted.api_key_env else None
    )
    if problem is not None:  # a spec that did not come through a template's checks
        raise ConfigError(f"{source}: model_endpoint: {problem}")
    for endpoint in named.values():
        if same_place(endpoint.base_url, wanted.base_url):
            if wanted.api_key_env not in (None, endpoint.api_key_env):
                raise Refused(
                    f"{source}: the model endpoint {wanted.base_url} is endpoint {endpoint.name}, "
                    f"whose key is not {wanted.api_key_env}",
                    hint=f"name it instead: model_endpoint: {endpoint.name}",
                )
            return endpoint
    if not policy.inline:
        raise Refused(
            f"{source}: the model endpoint {wanted.base_url} is no endpoint of endpoints.yaml, "
            f"and {profile} does not allow inline endpoints",
            hint="name it in endpoints.yaml in agentdeck's home, or set inline_endpoints: "
            "true in the profile",
        )
    return Endpoint(None, wanted.base_url, wanted.api_key_env)
