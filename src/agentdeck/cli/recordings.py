"""``agentdeck recordings``: the cassettes of recorded agents on this machine's disk.

A cassette is written by the runner that ran the agent, under its home's
``recordings/`` (``runner.recording``); these commands read that directory, as
``worktrees`` reads the worktrees on this machine.
"""

from __future__ import annotations

import contextlib
import json
import time
from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    from pathlib import Path

    from agentdeck.runner.recording.store import Recordings
    from agentdeck.settings import Settings


app = typer.Typer(
    help="Recorded model traffic (`agentdeck run --record`, AGENTDECK_RECORD): `recordings ls`, "
    "`recordings show ID` (its exchanges: method, path, status, bytes, outcome), "
    "`recordings rm ID`. Each takes --json.",
    no_args_is_help=True,
)


def register(root: typer.Typer) -> None:
    root.add_typer(app, name="recordings")
    root.add_typer(scenario_app, name="scenario")


def _not_while_recording(agent_id: str, doing: str, *, writing: bool = False) -> None:
    from agentdeck.cli.context import opened_store, run_async
    from agentdeck.runner.recording.store import refuse_live

    async def go(settings: Settings) -> None:
        async with opened_store(settings) as store:
            await refuse_live(store, agent_id, doing, writing=writing)

    run_async(go)


def _recordings() -> Recordings:
    from agentdeck.cli.context import load_settings
    from agentdeck.runner.recording.store import Recordings

    return Recordings.of(load_settings())


@app.command("ls")
def ls(
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """The cassettes, oldest first: agent, when, exchanges, size, how its run ended."""
    infos = _recordings().listed()
    if as_json:
        typer.echo(json.dumps([i.to_dict() for i in infos], indent=2))
        return
    if not infos:
        typer.echo("no recordings (record with `agentdeck run --record` or AGENTDECK_RECORD)")
        return
    typer.echo(f"{'AGENT':<18} {'STARTED':<19} {'EXCH':>5} {'SIZE':>9} {'MODE':<6} STATE")
    for i in infos:
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(i.started_at or 0))
        if i.problem is not None:
            typer.echo(f"{i.agent_id:<18} {'?':<19} {'?':>5} {i.size:>9} {'?':<6} {i.problem}")
            continue
        state = (i.state or "open") + (" (capped)" if i.capped else "")
        typer.echo(f"{i.agent_id:<18} {when:<19} {i.exchanges:>5} {i.size:>9} {i.mode:<6} {state}")


@app.command("show")
def show(
    agent_id: Annotated[str, typer.Argument(help="The recorded agent's id.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """One cassette: its upstream, start state and exchanges."""
    from agentdeck.runner.recording.cassette import response_bytes

    store = _recordings()
    info = store.info(agent_id)
    records = store.records(agent_id)
    start = next((r for r in records if r.get("kind") == "start"), {})
    exchanges = []
    for request in (r for r in records if r.get("kind") == "request"):
        n = request.get("n")
        response = next((r for r in records if r.get("kind") == "response" and r.get("n") == n), {})
        end = next((r for r in records if r.get("kind") == "end" and r.get("n") == n), {})
        exchanges.append(
            {
                "n": n,
                "method": request.get("method"),
                "path": request.get("path"),
                "status": response.get("status"),
                "bytes": len(response_bytes(records, n)) if isinstance(n, int) else 0,
                "outcome": end.get("outcome"),
                "seconds": end.get("seconds"),
            }
        )
    if as_json:
        shown = {**info.to_dict(), "start": start, "exchanges": exchanges}
        typer.echo(json.dumps(shown, indent=2))
        return
    typer.echo(f"agent     {info.agent_id}")
    typer.echo(f"upstream  {info.upstream}")
    typer.echo(f"mode      {info.mode}; state {info.state or 'open'}; {info.size} bytes")
    if info.capped:
        typer.echo("capped    past AGENTDECK_RECORDING_MAX_BYTES: later bodies not kept")
    checkpoint = start.get("checkpoint") or {}
    typer.echo(
        f"start     {start.get('cwd', '?')} (git HEAD {start.get('git_head') or 'none'}, "
        f"checkpoint {checkpoint.get('n', 'none')})"
    )
    for e in exchanges:
        typer.echo(
            f"  #{e['n']:<3} {e['method']} {e['path']} -> {e['status'] or '-'} "
            f"{e['bytes']} bytes, {e['outcome'] or 'open'}"
        )


@app.command("rm")
def rm(
    agent_id: Annotated[str, typer.Argument(help="The recorded agent's id.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Remove one cassette (not while its agent lives: it may still write to it)."""
    store = _recordings()
    store.existing(agent_id)
    _not_while_recording(agent_id, "remove its recording", writing=True)
    store.remove(agent_id)
    if as_json:
        typer.echo(json.dumps({"removed": agent_id}))
    else:
        typer.echo(f"removed the recording of {agent_id}")


scenario_app = typer.Typer(
    help="Scenarios from recordings: `scenario export ID [-o FILE]` writes a recorded run "
    "as a scenario file the scripted model plays offline (`agentdeck run --scenario FILE`).",
    no_args_is_help=True,
)


@scenario_app.command("export")
def export(
    agent_id: Annotated[str, typer.Argument(help="The recorded agent's id.")],
    output: Annotated[
        str | None, typer.Option("--output", "-o", help="Write it here (default: stdout).")
    ] = None,
    name: Annotated[str | None, typer.Option(help="The scenario's name (default: ID).")] = None,
) -> None:
    """Write a recorded run as a scenario: each model answer a turn, in order."""
    from pathlib import Path

    import yaml

    from agentdeck.mockmodel import parse_scenario
    from agentdeck.runner.recording.export import scenario_of

    store = _recordings()
    store.existing(agent_id)
    _not_while_recording(agent_id, "export its recording")
    data = scenario_of(store.records(agent_id), name or agent_id)
    parse_scenario(data, output or "<export>")  # what is written plays
    text = yaml.safe_dump(data, sort_keys=False, allow_unicode=True)
    if output is None:
        typer.echo(text, nl=False)
        return
    _write_whole(Path(output).expanduser(), text)
    typer.echo(f"wrote {output} ({len(data['turns'])} turns)")


def _write_whole(path: Path, text: str) -> None:
    """``text`` into ``path`` whole or not at all: written beside it, then renamed
    over it (a full disk or a kill leaves no half scenario)."""
    import os
    import tempfile
    from pathlib import Path

    from agentdeck.errors import UsageError

    if path.is_dir():
        raise UsageError(f"-o {path}: is a directory", hint="give a file name, e.g. -o run.yaml")
    try:
        fd, name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as exc:
        raise UsageError(
            f"-o {path}: cannot write there: {exc.strerror or exc}",
            hint="give a file in a directory that exists and that you can write to",
        ) from None
    temp = Path(name)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        mask = os.umask(0)
        os.umask(mask)
        temp.chmod(0o666 & ~mask)  # as an ordinary file of the user's
        temp.replace(path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            temp.unlink()
        raise UsageError(f"-o {path}: not written: {exc.strerror or exc}") from None
