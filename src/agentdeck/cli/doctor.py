"""``agentdeck doctor``: what agentdeck needs, checked, each problem with its fix.

Claude Code and its version, the model endpoint and its credentials (one cheap
request, bounded retries), the home's permissions, the database's integrity and
migrations, the daemon, the hooks, the sandbox and free disk. Exit 0 when nothing
fails (a warning is something to know, not a fault), 1 otherwise.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import stat
from dataclasses import asdict
from typing import Annotated, Any

import typer
from pydantic import SecretStr

from agentdeck import __version__
from agentdeck.cli.context import console, run_async
from agentdeck.cli.doctor_check import Check as Check
from agentdeck.cli.doctor_check import Status as Status
from agentdeck.settings import Settings

MODEL_TRIES = 3  # the endpoint check: a 429, a 5xx or a timeout is tried again
MODEL_TIMEOUT_SECONDS = 10.0
LOW_DISK_BYTES = 2 * 1024**3
NO_DISK_BYTES = 200 * 1024**2


def register(app: typer.Typer) -> None:
    app.command("doctor")(doctor)


def doctor(as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False) -> None:
    """Check what agentdeck needs and say how to fix what is wrong: Claude Code, the
    model endpoint and credentials, the home, the database, the daemon, the hooks,
    the sandbox, free disk. Exit 1 if a check fails."""

    async def go(settings: Settings) -> int:
        found = await checks(settings)
        if as_json:
            print(
                json.dumps(
                    {
                        "ok": all(c.status != "fail" for c in found),
                        "checks": [asdict(c) for c in found],
                    },
                    indent=2,
                )
            )
        else:
            colours = {"ok": "green", "warn": "yellow", "fail": "red"}
            for c in found:
                console.print(
                    f"[{colours[c.status]}]{c.status:<5}[/] [bold]{c.name}[/]: {c.detail}",
                    highlight=False,
                )
                if c.fix:
                    console.print(f"      fix: {c.fix}", markup=False, highlight=False)
        return 1 if any(c.status == "fail" for c in found) else 0

    raise typer.Exit(run_async(go))


async def checks(settings: Settings) -> list[Check]:
    return [
        await _claude(settings),
        await _model(settings),
        *await _endpoints(settings),
        _home(settings),
        _database(settings),
        await _daemon(settings),
        _hooks(settings),
        await _sandbox(settings),
        _disk(settings),
    ]


async def _endpoints(settings: Settings) -> list[Check]:
    """One line per endpoint of the home's endpoints.yaml (cli.doctor_endpoints)."""
    from agentdeck.cli.doctor_endpoints import endpoint_checks

    return await endpoint_checks(settings, os.environ)


async def _claude(settings: Settings) -> Check:
    from agentdeck.errors import AgentdeckError
    from agentdeck.runner.options import resolve_cli

    try:
        path = resolve_cli(settings)
    except AgentdeckError as exc:
        return Check("claude", "fail", exc.message, exc.hint)
    try:
        proc = await asyncio.create_subprocess_exec(
            str(path),
            "--version",
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
        )
        out, _ = await asyncio.wait_for(proc.communicate(), 30)
    except (OSError, TimeoutError) as exc:
        return Check(
            "claude",
            "fail",
            f"{path} does not run: {exc!r}",
            "reinstall agentdeck (claude-agent-sdk bundles Claude Code)",
        )
    text = out.decode("utf-8", "replace").strip().splitlines()
    if proc.returncode != 0 or not text:
        return Check(
            "claude",
            "fail",
            f"{path} --version exited {proc.returncode}",
            "reinstall agentdeck, or point AGENTDECK_CLAUDE_CLI_PATH at a working one",
        )
    return Check("claude", "ok", f"{path}: {text[0]}")


def _credentials(settings: Settings) -> tuple[str, str] | None:
    """The credential agents would use, by the name Claude Code gets it under, and
    its value: read from the settings, their ``AGENTDECK_`` names included."""
    for name, secret in (
        ("ANTHROPIC_API_KEY", settings.anthropic_api_key),
        # No setting: agentdeck passes nothing for it, agents inherit it as it is.
        ("ANTHROPIC_AUTH_TOKEN", os.environ.get("ANTHROPIC_AUTH_TOKEN")),
        ("CLAUDE_CODE_OAUTH_TOKEN", settings.claude_code_oauth_token),
    ):
        value = secret.get_secret_value() if isinstance(secret, SecretStr) else secret
        if value:
            return name, value
    return None


async def _model(settings: Settings) -> Check:
    import httpx

    base = (settings.anthropic_base_url or "https://api.anthropic.com").rstrip("/")
    found = _credentials(settings)
    credential = found[0] if found else None
    headers = {"anthropic-version": "2023-06-01"}
    if found and credential == "ANTHROPIC_API_KEY":
        headers["x-api-key"] = found[1]
    elif found:
        headers["authorization"] = f"Bearer {found[1]}"
    answer: httpx.Response | None = None
    problem = ""
    async with httpx.AsyncClient(timeout=MODEL_TIMEOUT_SECONDS) as http:
        for attempt in range(MODEL_TRIES):
            try:
                answer = await http.get(f"{base}/v1/models", headers=headers)
            except httpx.HTTPError as exc:
                answer, problem = None, f"{type(exc).__name__}: {exc}"
            if answer is not None and answer.status_code != 429 and answer.status_code < 500:
                break
            if attempt + 1 < MODEL_TRIES:
                await asyncio.sleep(0.5 * 2**attempt)
    said = f"{base} ({credential or 'no credentials in the environment'})"
    if answer is None:
        return Check(
            "model",
            "fail",
            f"{said} cannot be reached: {problem}",
            "check the network, or set ANTHROPIC_BASE_URL to a reachable endpoint",
        )
    code = answer.status_code
    if code == 200:
        return Check("model", "ok", f"{said} answers")
    if code in (401, 403):
        return Check(
            "model",
            "fail",
            f"{said} refuses the credentials ({code})",
            "set ANTHROPIC_API_KEY (or CLAUDE_CODE_OAUTH_TOKEN) to a valid one",
        )
    if code == 404:
        return Check("model", "warn", f"{said} is reached but has no /v1/models (a gateway?)")
    return Check(
        "model",
        "fail",
        f"{said} answers {code} after {MODEL_TRIES} tries",
        "try again later; the endpoint is failing or rate-limiting",
    )


def _home(settings: Settings) -> Check:
    from agentdeck.daemon.home import token_path
    from agentdeck.errors import ConfigError

    home = settings.home_dir
    try:
        settings.ensure_home()
    except ConfigError as exc:
        return Check("home", "fail", exc.message, exc.hint)
    loose = [
        str(p)
        for p, allowed in ((home, 0o700), (token_path(settings), 0o600))
        if p.exists() and stat.S_IMODE(p.stat().st_mode) & ~allowed & 0o077
    ]
    if loose:
        return Check(
            "home",
            "warn",
            f"{home} is writable; others may read {', '.join(loose)} (the API token is there)",
            f"chmod 700 {home}; chmod 600 {home}/token",
        )
    return Check("home", "ok", f"{home} is writable and private")


def _database(settings: Settings) -> Check:
    import sqlite3

    from agentdeck.store.head import HEAD

    if settings.database_url:
        return _postgres(settings.database_url)
    path = settings.db_path
    if not path.exists():
        return Check("database", "ok", f"{path} is made at first use")
    try:
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5)
        try:
            verdict = db.execute("PRAGMA quick_check").fetchone()[0]
            row = db.execute("SELECT version_num FROM alembic_version").fetchone()
        finally:
            db.close()
    except sqlite3.Error as exc:
        return Check(
            "database",
            "fail",
            f"{path} cannot be read: {exc}",
            "stop the daemon; move the file aside to start afresh",
        )
    if verdict != "ok":
        return Check(
            "database",
            "fail",
            f"{path} is damaged: {verdict}",
            f"stop the daemon; sqlite3 {path} '.recover' > recovered.sql",
        )
    revision = row[0] if row else None
    if revision == HEAD:
        return Check("database", "ok", f"{path}: intact, schema {revision}")
    if revision is not None and revision > HEAD:
        return Check(
            "database",
            "fail",
            f"{path} has schema {revision}, newer than this agentdeck's {HEAD}",
            "upgrade agentdeck",
        )
    return Check(
        "database",
        "warn",
        f"{path}: intact, schema {revision}; {HEAD} is applied at the next start",
    )


# How far this machine's clock may be from the database server's: runner hosts'
# leases are judged by the database's clock, within seconds.
CLOCK_SKEW_WARN_SECONDS = 2.0


def _postgres(url: str) -> Check:
    """A PostgreSQL store: reachable, at the schema's head, and this machine's clock
    close to the server's. The URL is shown without its password."""
    import time

    import sqlalchemy as sa

    from agentdeck.settings_database import hide_password
    from agentdeck.store.head import HEAD

    shown = hide_password(url)
    try:
        engine = sa.create_engine(url, connect_args={"connect_timeout": 5})
    except ImportError:
        return Check(
            "database",
            "fail",
            f"{shown} needs psycopg",
            "pip install 'agentdeck[postgres]'",
        )
    try:
        with engine.connect() as conn:
            before = time.time()
            server = float(conn.execute(sa.text("SELECT extract(epoch FROM now())")).scalar_one())
            skew = server - (before + time.time()) / 2
            tables = sa.inspect(conn).get_table_names()
            revision = (
                conn.execute(sa.text("SELECT version_num FROM alembic_version")).scalar()
                if "alembic_version" in tables
                else None
            )
    except sa.exc.SQLAlchemyError as exc:
        reason = str(getattr(exc, "orig", exc) or exc).strip().splitlines()[0]
        return Check(
            "database",
            "fail",
            f"{shown} cannot be reached: {reason.replace(url, shown)}",
            "check AGENTDECK_DATABASE_URL, that the server runs and that the role may connect",
        )
    finally:
        engine.dispose()
    if revision is not None and revision > HEAD:
        return Check(
            "database",
            "fail",
            f"{shown} has schema {revision}, newer than this agentdeck's {HEAD}",
            "upgrade agentdeck",
        )
    if abs(skew) > CLOCK_SKEW_WARN_SECONDS:
        return Check(
            "database",
            "warn",
            f"{shown}: this machine's clock is {skew:+.1f} s from the server's",
            "run NTP (chrony, systemd-timesyncd) on every host of the deck",
        )
    if revision == HEAD:
        return Check("database", "ok", f"{shown}: reachable, schema {revision}")
    state = f"schema {revision}" if revision else "empty"
    return Check(
        "database", "warn", f"{shown}: reachable, {state}; {HEAD} is applied at the next start"
    )


async def _daemon(settings: Settings) -> Check:
    from agentdeck.client.http import DaemonHTTP
    from agentdeck.daemon.home import read_info, read_token
    from agentdeck.errors import AgentdeckError
    from agentdeck.runner import procs

    info = read_info(settings)
    if info is None or not procs.is_running(info.pid):
        return Check("daemon", "ok", "not running: commands run embedded; `agentdeck up` starts it")
    http = DaemonHTTP(
        info.url, read_token(settings) or "", client="cli", read_seconds=3.0, connect_seconds=3.0
    )
    try:
        data = await http.call("GET", "/healthz")
    except (AgentdeckError, ValueError) as exc:
        return Check(
            "daemon",
            "fail",
            f"pid {info.pid} holds the home but does not answer at "
            f"{info.url}: {type(exc.__cause__ or exc).__name__}",
            "agentdeck down (or kill it), then agentdeck up",
        )
    finally:
        await http.aclose()
    version = data.get("version")
    health = await _readiness(info.url, read_token(settings) or "")
    if health.get("status") in ("degraded", "unhealthy"):
        return Check(
            "daemon",
            "fail" if health["status"] == "unhealthy" else "warn",
            f"{info.url} (pid {info.pid}) is {health['status']}: "
            + "; ".join(health.get("reasons") or []),
            "`agentdeck status` says more; the daemon's log has the rest",
        )
    if version != __version__:
        return Check(
            "daemon",
            "warn",
            f"{info.url} runs agentdeck {version}, this is {__version__}",
            "agentdeck down && agentdeck up",
        )
    return Check("daemon", "ok", f"{info.url} (pid {info.pid}) answers, version {version}")


async def _readiness(url: str, token: str) -> dict[str, Any]:
    """``/readyz``'s answer (200 or 503 alike); empty when there is none (an older daemon)."""
    import httpx

    async with httpx.AsyncClient(timeout=10.0) as http:
        try:
            r = await http.get(f"{url}/readyz", headers={"Authorization": f"Bearer {token}"})
            body = r.json() if r.status_code in (200, 503) else {}
        except (httpx.HTTPError, ValueError):
            return {}
    return body if isinstance(body, dict) else {}


def _hooks(settings: Settings) -> Check:
    from agentdeck.hooks.install import Scope, scope_status

    found = [scope_status(settings, scope) for scope in (Scope.USER, Scope.PROJECT)]
    broken = [s for s in found if s.installed and (not s.current or s.client_exists is False)]
    if broken:
        return Check(
            "hooks",
            "warn",
            f"installed in {broken[0].path} by another install",
            f"agentdeck hooks install --scope {broken[0].scope}",
        )
    installed = [s for s in found if s.installed]
    if not installed:
        return Check(
            "hooks",
            "warn",
            "not installed: sessions started by hand are not seen",
            "agentdeck hooks install",
        )
    return Check("hooks", "ok", f"installed in {installed[0].path}")


async def _sandbox(settings: Settings) -> Check:
    from agentdeck.core.sandbox import SandboxMode
    from agentdeck.governance.profiles import load_profile
    from agentdeck.sandbox.support import support

    process = await asyncio.to_thread(support, SandboxMode.PROCESS)
    spec = load_profile(settings.profile).sandbox
    if process.ok:
        return Check("sandbox", "ok", process.detail)
    fix = "apt-get install bubblewrap socat (then `agentdeck sandbox check`)"
    if spec.enabled and spec.required:
        return Check(
            "sandbox",
            "fail",
            f"profile {settings.profile} requires a sandbox: {process.detail}",
            fix,
        )
    return Check("sandbox", "warn", f"agents cannot be sandboxed: {process.detail}", fix)


def _disk(settings: Settings) -> Check:
    free = shutil.disk_usage(settings.home_dir).free
    said = f"{free / 1024**3:.1f} GiB free under {settings.home_dir}"
    if free < NO_DISK_BYTES:
        return Check("disk", "fail", said, "free some space: the event log and worktrees need it")
    if free < LOW_DISK_BYTES:
        return Check("disk", "warn", said, "agentdeck worktrees prune; free some space")
    return Check("disk", "ok", said)
