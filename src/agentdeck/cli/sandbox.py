"""``agentdeck sandbox check / run``: what this machine can confine, and any
command run as an agent would be, to try a profile's settings."""

from __future__ import annotations

import asyncio
import json
from dataclasses import replace
from pathlib import Path
from typing import Annotated

import typer
from rich.text import Text

from agentdeck.cli.context import console, console_err, run_async
from agentdeck.errors import UsageError
from agentdeck.settings import Settings

sandbox_app = typer.Typer(
    help="The sandbox: what this machine can confine (check), and a command run in a "
    "profile's sandbox (run).",
    no_args_is_help=True,
)
ProfileOpt = Annotated[
    str | None,
    typer.Option(
        help="A profile: default, strict, permissive, or a file (default: the settings')."
    ),
]


def register(app: typer.Typer) -> None:
    app.add_typer(sandbox_app, name="sandbox")


def _profile_arg(profile: str | None) -> str | None:
    return str(Path(profile).resolve()) if profile and Path(profile).is_file() else profile


@sandbox_app.command("check")
def check(
    profile: ProfileOpt = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Which sandbox modes work here, and what a profile's agents would get; exit 1
    when the profile requires a sandbox this machine cannot give."""
    from agentdeck.core.sandbox import SandboxMode
    from agentdeck.governance.profiles import load_profile
    from agentdeck.sandbox.support import isolation, support

    async def go(settings: Settings) -> int:
        spec = load_profile(_profile_arg(profile) or settings.profile).sandbox
        found = {
            m: await asyncio.to_thread(support, m) for m in (SandboxMode.PROCESS, SandboxMode.BASH)
        }
        mine = found.get(spec.mode)
        verdict = (
            "no sandbox (the profile has none)"
            if not spec.enabled
            else "sandboxed"
            if mine is not None and mine.ok
            else "refused: the profile requires a sandbox"
            if spec.required
            else "unsandboxed, with a notice (the profile does not require it)"
        )
        inside = await asyncio.to_thread(isolation)
        if as_json:
            data = {
                "modes": {str(m): {"ok": s.ok, "detail": s.detail} for m, s in found.items()},
                "isolation": inside.to_dict() if inside is not None else None,
                "profile": {"sandbox": spec.to_dict(), "agents": verdict},
            }
            console.print_json(json.dumps(data))
        else:
            for mode, result in found.items():
                mark = Text("ok ", style="green") if result.ok else Text("no ", style="red")
                console.print(Text.assemble(mark, (f"{mode:8}", "bold"), result.detail))
            if inside is not None:
                console.print(
                    f"inside a sandbox: uid {inside.uid}, capabilities "
                    f"{inside.capabilities:016x} (all dropped: "
                    f"{'yes' if inside.capabilities == 0 else 'NO'}), seccomp "
                    f"{'filter' if inside.seccomp == 2 else 'NONE'}, no_new_privs "
                    f"{'on' if inside.no_new_privs else 'OFF'}; mount, namespaces, ptrace, "
                    "keyrings, bpf, io_uring and Unix sockets refused",
                    highlight=False,
                )
            console.print(f"profile sandbox: {spec.summary()} → agents run {verdict}")
        return 1 if spec.required and (mine is None or not mine.ok) else 0

    raise typer.Exit(run_async(go))


@sandbox_app.command(
    "run", context_settings={"allow_extra_args": True, "ignore_unknown_options": True}
)
def run(
    ctx: typer.Context,
    profile: ProfileOpt = None,
    cwd: Annotated[
        Path | None, typer.Option(help="The workspace (default: this directory).")
    ] = None,
) -> None:
    """Run a command in a profile's sandbox, as an agent's would run:
    `agentdeck sandbox run --profile strict -- python3 setup.py`. Blocked
    connections are said on stderr; the exit code is the command's."""
    command = list(ctx.args)
    if not command:
        raise UsageError("give the command after --, e.g. agentdeck sandbox run -- ls ~/.ssh")
    workspace = (cwd or Path.cwd()).expanduser().resolve()
    if not workspace.is_dir():
        raise UsageError(f"working directory {workspace} does not exist")

    async def go(settings: Settings) -> int:
        from agentdeck.core.sandbox import SandboxMode
        from agentdeck.errors import SandboxUnavailable
        from agentdeck.governance.profiles import load_profile
        from agentdeck.sandbox.confine import Confinement
        from agentdeck.sandbox.support import support

        spec = load_profile(_profile_arg(profile) or settings.profile).sandbox
        if not spec.enabled:
            raise UsageError(
                "the profile has no sandbox (sandbox.mode is off); choose one that has, "
                "e.g. --profile strict"
            )
        # A bash-mode profile is tried in process mode: Claude Code is not here to do it.
        spec = replace(spec, mode=SandboxMode.PROCESS)
        found = await asyncio.to_thread(support, SandboxMode.PROCESS)
        if not found.ok:
            raise SandboxUnavailable(found.detail)

        def blocked(host: str, port: int) -> None:
            console_err.print(f"sandbox: blocked a connection to {host}:{port}", highlight=False)

        confinement = await Confinement.open(
            spec,
            workspace=workspace,
            settings=settings,
            endpoint=settings.anthropic_base_url,
            on_blocked=blocked,
        )
        try:
            from agentdeck.runner.options import agent_env

            env = {**_environ(), **agent_env(settings), **confinement.env()}
            proc = await asyncio.create_subprocess_exec(
                *confinement.command(command), env=env, cwd=str(workspace)
            )
            return await proc.wait()
        finally:
            await confinement.close()

    raise typer.Exit(run_async(go))


def _environ() -> dict[str, str]:
    """The environment the command inherits, as an agent's process does."""
    import os

    return dict(os.environ)
