"""``agentdeck doctor``'s lines for the home's named model endpoints
(``endpoints.yaml``): each one's key variable set, its URL answering.

One line each, ``endpoint NAME``. What is wrong with one is a warning (an
endpoint no template uses yet is no fault of the deck); a file that cannot be
read fails (every agent naming an endpoint would be refused). The key is never
sent, shown or compared: only whether its variable is set.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping

from agentdeck.cli.doctor_check import Check
from agentdeck.core.endpoints import Endpoint
from agentdeck.errors import ConfigError
from agentdeck.settings import Settings

REACH_TIMEOUT_SECONDS = 3.0


async def endpoint_checks(settings: Settings, environ: Mapping[str, str]) -> list[Check]:
    from agentdeck.runner.endpoints import endpoints_file, load_endpoints, unreached
    from agentdeck.runner.mcp_servers import SECRETS_VAR, read_secrets_file

    try:
        named = load_endpoints(settings)
    except ConfigError as exc:
        fix = f"fix {endpoints_file(settings)}: name: {{base_url, api_key_env}}"
        return [Check("endpoints", "fail", exc.message, fix)]
    if not named:
        return []
    secrets: dict[str, str] = {}
    secrets_problem = None
    if settings.mcp_secrets_file is not None:
        try:
            secrets = read_secrets_file(settings.mcp_secrets_file)
        except ConfigError as exc:
            secrets_problem = exc.message
    timeout = REACH_TIMEOUT_SECONDS
    reached = await asyncio.gather(*(unreached(e.base_url, timeout) for e in named.values()))
    checks = []
    for endpoint, problem in zip(named.values(), reached, strict=True):
        checks.append(_check(endpoint, secrets, environ, problem, secrets_problem, SECRETS_VAR))
    return checks


def _check(
    endpoint: Endpoint,
    secrets: Mapping[str, str],
    environ: Mapping[str, str],
    unreached: str | None,
    secrets_problem: str | None,
    secrets_var: str,
) -> Check:
    name = f"endpoint {endpoint.name}"
    var = endpoint.api_key_env
    if var is not None and not (secrets.get(var) or environ.get(var)):
        why = f"; {secrets_problem}" if secrets_problem else ""
        return Check(
            name,
            "warn",
            f"{endpoint.base_url}: its key's variable {var} is set nowhere{why}; "
            "agents using it are refused",
            f"set {var} in agentdeck's environment or in {secrets_var}",
        )
    if unreached is not None:
        return Check(
            name,
            "warn",
            f"{endpoint.base_url} cannot be reached: {unreached}",
            "check the address and that the endpoint is up",
        )
    key = f"key in {var}" if var else "no key"
    return Check(name, "ok", f"{endpoint.base_url} answers ({key})")
