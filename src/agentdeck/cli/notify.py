"""``agentdeck notify``: the notification targets, a test message, the dead letters.

Notifications are sent by the daemon, so every command here needs it: through the
deck (``cli.decks.opened_deck``), whose own in this process, without a daemon,
refuses them saying so (``DaemonUnavailable``: start it with ``agentdeck up``).
"""

from __future__ import annotations

import time
from typing import Annotated

import typer

from agentdeck.cli.context import console
from agentdeck.cli.out import print_json
from agentdeck.cli.team import on_deck

JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON.")]

notify_app = typer.Typer(
    help="Notifications: webhooks, ntfy and the desktop told what waits for a person.",
    no_args_is_help=True,
)


def register(app: typer.Typer) -> None:
    app.add_typer(notify_app, name="notify")


def _say(text: str) -> None:
    console.print(text, markup=False, highlight=False)


@notify_app.command("list")
def list_targets(as_json: JsonOpt = False) -> None:
    """The configured targets and how their deliveries went."""
    targets = [t.to_dict() for t in on_deck(lambda deck: deck.notify_targets())]
    if as_json:
        print_json(targets)
        return
    if not targets:
        _say("no notification targets (see the README's Team section)")
    for t in targets:
        where = t["url"] or ("notify-send" if t.get("available", True) else "notify-send missing")
        counts = f"delivered {t.get('delivered', 0)}, dead {t.get('dead', 0)}"
        _say(f"{t['name']}  {t['kind']}  {where}  [{', '.join(t['events'])}]  {counts}")
        if t.get("last_error"):
            _say(f"    last error: {t['last_error']}")


@notify_app.command("test")
def test_target(
    target: Annotated[str, typer.Argument(help="The target's name.")],
    as_json: JsonOpt = False,
) -> None:
    """Send a test notification to TARGET now (once); exit 1 if it fails."""
    sent = on_deck(lambda deck: deck.test_notify_target(target))
    if as_json:
        print_json(sent.to_dict())
    else:
        _say(f"{target}: delivered")


@notify_app.command("dead")
def dead(
    all_: Annotated[bool, typer.Option("--all", help="Also those replayed since.")] = False,
    target: Annotated[str | None, typer.Option(help="Only this target's.")] = None,
    limit: Annotated[int, typer.Option(min=1, max=1000, help="Letters read.")] = 100,
    as_json: JsonOpt = False,
) -> None:
    """Dead letters: notifications that failed every attempt, or met a full queue."""
    letters = [
        d.to_dict()
        for d in on_deck(
            lambda deck: deck.dead_letters(include_replayed=all_, target=target, limit=limit)
        )
    ]
    if as_json:
        print_json(letters)
        return
    if not letters:
        _say("no dead letters")
    for d in letters:
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(d["created_at"]))
        _say(
            f"{d['id']}  {when}  {d['target']}  {d['kind']}  {d['state']}  "
            f"({d['attempts']} attempts): {d['reason']}"
        )


@notify_app.command("replay")
def replay(
    ref: Annotated[str, typer.Argument(help="The dead letter's id (or a unique prefix).")],
    as_json: JsonOpt = False,
) -> None:
    """Deliver a dead letter again, now (once); exit 1 if it fails again."""
    letter = on_deck(lambda deck: deck.replay_dead_letter(ref))
    if as_json:
        print_json(letter.to_dict())
    else:
        _say(f"{letter.id}: delivered to {letter.target}")
