"""``agentdeck approvals / approve / deny``: the approval inbox from a terminal."""

from __future__ import annotations

import json
import time
from typing import Annotated, Any

import typer
from rich.table import Table

from agentdeck.cli.client import connect
from agentdeck.cli.context import console, opened_store, run_async
from agentdeck.core.approvals import Approval, GrantScope
from agentdeck.core.summary import short
from agentdeck.settings import Settings

JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON.")]
IdArg = Annotated[str, typer.Argument(help="Approval request id (or a unique prefix).")]
AlwaysOpt = Annotated[bool, typer.Option("--always", help="Remember the answer as a grant.")]
ScopeOpt = Annotated[
    GrantScope, typer.Option(help="With --always: this agent's session, or from now on.")
]


def register(app: typer.Typer) -> None:
    app.command("approvals")(approvals)
    app.command("approve")(approve)
    app.command("deny")(deny)


def approvals(
    all_: Annotated[bool, typer.Option("--all", help="Answered ones too.")] = False,
    as_json: JsonOpt = False,
) -> None:
    """List approval requests waiting for an answer."""

    async def go(settings: Settings) -> None:
        client = await connect(settings)
        if client is not None:
            try:
                params = (
                    {}
                    if not all_
                    else {"state": ["pending", "allowed", "denied", "expired", "cancelled"]}
                )
                data = await client.call("GET", "/api/approvals", params=params)
                items = [_from_json(a) for a in data["approvals"]]
            finally:
                await client.aclose()
        else:
            async with opened_store(settings) as store:
                from agentdeck.store.approvals import ApprovalStore

                items = await ApprovalStore(store).list_approvals(
                    states=None if all_ else _pending()
                )
        if as_json:
            console.print_json(json.dumps([a.to_dict() for a in items]))
        elif not items:
            console.print("no approval requests waiting")
        else:
            console.print(_table(items))

    run_async(go)


def approve(
    ref: IdArg,
    always: AlwaysOpt = False,
    scope: ScopeOpt = GrantScope.PERSISTENT,
    message: Annotated[str | None, typer.Option(help="A note for the agent.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Allow the tool call. With --always, calls matching the same rule are allowed
    from now on (or for this agent's session, with --scope session)."""
    _answer(ref, "allow", message, GrantScope(scope) if always else None, as_json)


def deny(
    ref: IdArg,
    reason: Annotated[str | None, typer.Option(help="Told to the agent.")] = None,
    always: AlwaysOpt = False,
    scope: ScopeOpt = GrantScope.PERSISTENT,
    as_json: JsonOpt = False,
) -> None:
    """Deny the tool call; the reason is passed to the agent."""
    _answer(ref, "deny", reason, GrantScope(scope) if always else None, as_json)


def _answer(
    ref: str, decision: str, message: str | None, remember: GrantScope | None, as_json: bool
) -> None:
    async def go(settings: Settings) -> None:
        client = await connect(settings)
        if client is not None:
            try:
                body = {
                    "decision": decision,
                    "always": remember is not None,
                    "scope": str(remember or GrantScope.PERSISTENT),
                    "message": message,
                }
                answered = _from_json(await client.call("POST", f"/api/approvals/{ref}", json=body))
            finally:
                await client.aclose()
        else:
            # No daemon: answer in the store; the waiting `agentdeck run` sees it.
            async with opened_store(settings) as store:
                from agentdeck.governance.governor import Governor

                answered = await Governor(store, settings).answer(
                    ref, decision, by="user:cli", message=message, remember=remember
                )
        if as_json:
            console.print_json(json.dumps(answered.to_dict()))
        else:
            remembered = f" and remembered ({answered.remember})" if answered.remember else ""
            console.print(
                f"{answered.state} {answered.id}: {answered.tool} for agent "
                f"{answered.agent_id}{remembered}"
            )

    run_async(go)


def _pending() -> list[Any]:
    from agentdeck.core.approvals import ApprovalState

    return [ApprovalState.PENDING]


def _from_json(data: dict[str, Any]) -> Approval:
    from agentdeck.core.approvals import ApprovalState

    fields = dict(data)
    fields["state"] = ApprovalState(fields["state"])
    return Approval(**fields)


def _table(items: list[Approval]) -> Table:
    table = Table(box=None, pad_edge=False)
    for col in ("ID", "AGENT", "TOOL", "STATE", "WHY", "EXPIRES"):
        table.add_column(col)
    now = time.time()
    for a in items:
        what = a.input.get("command") or a.input.get("file_path") or a.input
        left = f"{int(a.expires_at - now)}s" if a.state.is_open else "-"
        table.add_row(
            a.id,
            a.agent_id,
            f"{a.tool}({short(what, 60)})",
            str(a.state),
            short(a.reason, 60),
            left,
        )
    return table
