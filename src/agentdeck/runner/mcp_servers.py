"""A template's MCP servers as the SDK's ``mcp_servers`` entries, and what Claude
Code says of them when it starts.

A template is hostile text and holds no secret (``core.agent_file`` refuses one):
a server's ``env`` values, ``headers`` values, ``args``, ``command`` and ``url``
may name one as ``${NAME}``, expanded here as the agent's process starts, from
the operator's secrets file (``AGENTDECK_MCP_SECRETS_FILE``: ``NAME=value`` lines,
readable by its owner only) or else agentdeck's own environment. The spec, the
store and the events keep ``${NAME}``; the value lives only in the options given
to the SDK. A name set nowhere refuses the start, naming the server and the name
(never a value). A server named without a definition is one Claude Code finds
itself (``.mcp.json``, the user's settings): nothing is passed for it.

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

from agentdeck.core.agent_file import AgentFile
from agentdeck.errors import ConfigError

__all__ = ["failed_servers", "read_secrets_file", "template_servers"]

REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]{0,127})\}")
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
) -> dict[str, dict[str, Any]]:
    """``{name: config}`` for each server ``claude`` defines, ``${NAME}`` expanded
    from ``secrets_file`` then ``environ``; ``ConfigError`` for a name set nowhere."""
    defined = [s for s in claude.mcp_servers if s.config is not None]
    if not defined:
        return {}
    secrets = read_secrets_file(secrets_file) if secrets_file is not None else {}
    out: dict[str, dict[str, Any]] = {}
    for server in defined:
        assert server.config is not None

        def expand(text: str, name: str = server.name) -> str:
            def one(match: re.Match[str]) -> str:
                var = match.group(1)
                value = secrets.get(var, environ.get(var))
                if value is None:
                    raise ConfigError(
                        f"{source}: MCP server `{name}` needs ${{{var}}}, which is set nowhere",
                        hint=f"set {var} in agentdeck's environment or in {SECRETS_VAR}",
                    )
                return value

            return REF.sub(one, text)

        out[server.name] = _expanded(server.config, expand)
    return out


def _expanded(config: Mapping[str, Any], expand: Any) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in config.items():
        if isinstance(value, str):
            result[key] = expand(value)
        elif isinstance(value, list):
            result[key] = [expand(v) if isinstance(v, str) else v for v in value]
        elif isinstance(value, Mapping):
            result[key] = {k: expand(v) if isinstance(v, str) else v for k, v in value.items()}
        else:
            result[key] = value
    return result


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
