"""A template's MCP servers as the SDK's ``mcp_servers`` entries, and what Claude
Code says of them when it starts.

A template is hostile text and holds no secret (``core.agent_file`` refuses one):
a server's ``env`` values, ``headers`` values, ``args``, ``command`` and ``url``
may name one as ``${NAME}``, looked up as the agent's process starts in the
operator's secrets file (``AGENTDECK_MCP_SECRETS_FILE``: ``NAME=value`` lines,
readable by its owner only), else agentdeck's own environment. The value goes
into the environment of the agent's Claude Code process, which expands the
reference itself: never on a command line (``ps`` would show it), and the spec,
the store and the events keep ``${NAME}``. A name set nowhere refuses the start,
naming the server and the name (never a value); so does a name of the deck's own
credentials (``ANTHROPIC_*``, ``CLAUDE_*``, ``AGENTDECK_*``…), which a hostile
template would otherwise send to a server of its choosing. A server named
without a definition is one Claude Code finds itself (``.mcp.json``, the
user's settings): nothing is passed for it.

What confines a server: it is a child of the agent's Claude Code process, so it
runs inside the agent's sandbox (files, network, processes) when the profile
sandboxes the agent; its tools are ``mcp__server__tool`` calls the policy
decides like any other (rules, asks, audit).
"""

from __future__ import annotations

import re
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from agentdeck.core.agent_file import SECRET_REF, AgentFile, reference_refused
from agentdeck.errors import ConfigError

__all__ = ["failed_servers", "read_secrets_file", "template_servers"]

SECRETS_VAR = "AGENTDECK_MCP_SECRETS_FILE"
MAX_SECRETS_FILE = 64 * 1024
# Statuses of Claude Code's init message that are not a server at work.
_FAILED = frozenset({"failed", "needs-auth", "disabled"})


def template_servers(
    claude: AgentFile,
    environ: Mapping[str, str],
    secrets_file: Path | None = None,
    *,
    source: str = "the template",
) -> tuple[dict[str, dict[str, Any]], dict[str, str]]:
    """``({name: config}, env)``: each server ``claude`` defines, its ``${NAME}``
    references kept (Claude Code expands them from its own environment, so no
    value is ever on a command line), and the values they name, from
    ``secrets_file`` then ``environ``, for that environment. ``ConfigError`` for a
    name set nowhere, one of the deck's own credentials, or any other ``${…}``."""
    defined = [s for s in claude.mcp_servers if s.config is not None]
    if not defined:
        return {}, {}
    secrets = read_secrets_file(secrets_file) if secrets_file is not None else {}
    servers: dict[str, dict[str, Any]] = {}
    env: dict[str, str] = {}
    for server in defined:
        assert server.config is not None
        for text in _texts(server.config):
            for var in _references(text, server.name, source):
                value = secrets.get(var, environ.get(var))
                if value is None:
                    raise ConfigError(
                        f"{source}: MCP server `{server.name}` needs ${{{var}}}, "
                        "which is set nowhere",
                        hint=f"set {var} in agentdeck's environment or in {SECRETS_VAR}",
                    )
                env[var] = value
        servers[server.name] = _copied(server.config)
    return servers, env


def _references(text: str, server: str, source: str) -> list[str]:
    """The names ``text`` refers to as ``${NAME}``; again here, for a spec that
    did not come through a template's checks (``core.agent_file``)."""
    refused = reference_refused(text)
    if refused:
        raise ConfigError(f"{source}: MCP server `{server}`: {refused}")
    return SECRET_REF.findall(text)


def _texts(config: Mapping[str, Any]) -> list[str]:
    out: list[str] = []
    for value in config.values():
        if isinstance(value, str):
            out.append(value)
        elif isinstance(value, list):
            out.extend(v for v in value if isinstance(v, str))
        elif isinstance(value, Mapping):
            out.extend(v for v in value.values() if isinstance(v, str))
    return out


def _copied(config: Mapping[str, Any]) -> dict[str, Any]:
    return {
        k: dict(v) if isinstance(v, Mapping) else list(v) if isinstance(v, list) else v
        for k, v in config.items()
    }


def read_secrets_file(path: Path) -> dict[str, str]:
    """The ``NAME=value`` lines of the operator's secrets file, which only its
    owner may read; ``ConfigError`` otherwise (never with what it holds)."""
    path = path.expanduser()
    try:
        mode = path.stat().st_mode
        if mode & (stat.S_IRWXG | stat.S_IRWXO):
            raise ConfigError(
                f"the MCP secrets file {path} may be read by others "
                f"(mode {stat.S_IMODE(mode):o}); it is refused",
                hint=f"chmod 600 {path}",
            )
        if not stat.S_ISREG(mode) or path.stat().st_size > MAX_SECRETS_FILE:
            raise ConfigError(f"the MCP secrets file {path} is not a file of at most 64 KiB")
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read the MCP secrets file {path}: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise ConfigError(f"the MCP secrets file {path} is not UTF-8 text") from None
    secrets: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        name, eq, value = line.partition("=")
        if not eq or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]{0,127}", name.strip()):
            raise ConfigError(f"the MCP secrets file {path}, line {number}: not NAME=value")
        secrets[name.strip()] = value.strip()
    return secrets


def failed_servers(init: Mapping[str, Any]) -> list[tuple[str, str]]:
    """``(name, why)`` for each server Claude Code's init message says did not
    start (``mcp_servers``: ``{name, status, error?}``)."""
    found = init.get("mcp_servers")
    if not isinstance(found, list):
        return []
    failed: list[tuple[str, str]] = []
    for entry in found:
        if not isinstance(entry, Mapping):
            continue
        status = entry.get("status")
        if status in _FAILED:
            error = entry.get("error")
            why = f"{status}: {error}" if isinstance(error, str) and error else str(status)
            failed.append((str(entry.get("name")), why))
    return failed
