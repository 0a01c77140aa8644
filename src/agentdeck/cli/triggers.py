"""``agentdeck trigger add / ls / show / rm``: webhook triggers.

A trigger named NAME starts an agent of its template when a delivery signed with
its secret reaches ``POST /hooks/NAME`` on the daemon (``web.hooks_api``). The
secret stays in its 0600 file; the deck keeps the file's path and a fingerprint.
Reads and writes the store directly, beside a daemon (which reads the rows on each
delivery, so a change holds at once).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated, Any

import typer

from agentdeck.cli.context import opened_store, run_async
from agentdeck.cli.out import print_json, say
from agentdeck.core.summary import age
from agentdeck.core.triggers import (
    Delivery,
    Trigger,
    check_name,
    fingerprint,
    parse_rate,
)
from agentdeck.core.usage import DEFAULT_OWNER
from agentdeck.settings import Settings

JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON.")]
NameArg = Annotated[str, typer.Argument(help="The trigger's name (its URL is /hooks/NAME).")]

trigger_app = typer.Typer(
    help="Webhook triggers: `trigger add NAME --agent TEMPLATE --prompt-template T "
    "--secret-file F [--rate N/min]`; a delivery to POST /hooks/NAME signed with the "
    "secret (GitHub's X-Hub-Signature-256) starts an agent of TEMPLATE with T rendered "
    "over the payload. `trigger ls`, `trigger show NAME` (its recent deliveries), "
    "`trigger rm NAME`.",
    no_args_is_help=True,
)


def register(app: typer.Typer) -> None:
    app.add_typer(trigger_app, name="trigger")


@trigger_app.command("add")
def add(
    name: NameArg,
    agent: Annotated[str, typer.Option("--agent", help="The agent template it starts.")],
    prompt_template: Annotated[
        str,
        typer.Option(
            "--prompt-template",
            help="The agent's prompt, a Jinja2 template over `payload`, `event` and "
            "`delivery` (sandboxed), e.g. 'Review {{ payload.pull_request.html_url }}'.",
        ),
    ],
    secret_file: Annotated[
        Path,
        typer.Option(
            "--secret-file",
            help="The file holding the shared secret (mode 0600, 16 bytes or more); "
            "only its path and a fingerprint are stored.",
        ),
    ],
    rate: Annotated[
        str, typer.Option("--rate", help="Deliveries a minute it takes (N/min).")
    ] = "10/min",
    project: Annotated[
        Path | None,
        typer.Option("--project", help="Where the template is found (default: here)."),
    ] = None,
    scenario: Annotated[
        str | None,
        typer.Option("--scenario", help="Run its agents on a scripted-model scenario."),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Add a trigger: POST /hooks/NAME, signed with the secret, starts an agent."""
    from agentdeck.orchestration.templates import resolve
    from agentdeck.store.triggers import TriggerStore, read_secret

    check_name(name)
    from agentdeck.orchestration.trigger_prompts import check_prompt_template  # jinja2: here

    check_prompt_template(prompt_template)
    per_min = parse_rate(rate)
    where = (project or Path.cwd()).resolve()
    secret_path = secret_file.expanduser().absolute()
    secret = read_secret(secret_path)

    async def go(settings: Settings) -> Trigger:
        resolve(settings, agent, where)  # the template exists and its profile allows it
        trigger = Trigger(
            name=name,
            template=agent,
            project=str(where),
            prompt_template=prompt_template,
            secret_file=str(secret_path),
            secret_fingerprint=fingerprint(secret),
            rate_per_min=per_min,
            created_at=time.time(),
            created_by=DEFAULT_OWNER,
            scenario=scenario,
        )
        async with opened_store(settings) as store:
            return await TriggerStore(store).add(trigger)

    made = run_async(go)
    if as_json:
        print_json(made.to_dict())
    else:
        say(f"trigger {made.name} added: POST /hooks/{made.name} starts a {made.template} agent")


@trigger_app.command("ls")
def ls(as_json: JsonOpt = False) -> None:
    """The triggers: name, template, rate, project."""

    async def go(settings: Settings) -> list[Trigger]:
        from agentdeck.store.triggers import TriggerStore

        async with opened_store(settings) as store:
            return await TriggerStore(store).all()

    found = run_async(go)
    if as_json:
        print_json([t.to_dict() for t in found])
    elif not found:
        say("no triggers (`agentdeck trigger add` makes one)")
    else:
        for t in found:
            say(f"{t.name}  {t.template}  {t.rate_per_min}/min  {t.project}")


@trigger_app.command("show")
def show(name: NameArg, as_json: JsonOpt = False) -> None:
    """A trigger and its deliveries of the last day, newest first."""

    async def go(settings: Settings) -> tuple[Trigger, list[Delivery]]:
        from agentdeck.store.triggers import TriggerStore

        async with opened_store(settings) as store:
            ts = TriggerStore(store)
            return await ts.get(name), await ts.deliveries(name)

    trigger, deliveries = run_async(go)
    if as_json:
        data: dict[str, Any] = trigger.to_dict()
        data["deliveries"] = [d.to_dict() for d in deliveries]
        print_json(data)
        return
    say(f"trigger {trigger.name}: POST /hooks/{trigger.name}")
    say(f"  agent template: {trigger.template} (project {trigger.project})")
    say(f"  prompt template: {trigger.prompt_template}")
    say(f"  secret file: {trigger.secret_file} (fingerprint {trigger.secret_fingerprint})")
    say(f"  rate: {trigger.rate_per_min}/min")
    now = time.time()
    for d in deliveries:
        started = f" agent {d.agent_id}" if d.agent_id else ""
        say(
            f"  {age(now - d.received_at)} ago  {d.status}  {d.event}  {d.delivery_id}"
            f"  {d.outcome}{started}"
        )


@trigger_app.command("rm")
def rm(name: NameArg) -> None:
    """Remove a trigger and its deliveries' history (its agents stay)."""

    async def go(settings: Settings) -> None:
        from agentdeck.store.triggers import TriggerStore

        async with opened_store(settings) as store:
            await TriggerStore(store).remove(name)

    run_async(go)
    say(f"trigger {name} removed")
