"""The deck's commands in Textual's command palette (ctrl+p): start an agent from a
template, the diff of the selected agent's worktree, rewind it to a checkpoint,
search memory. Each reads the daemon when the palette opens (``startup``), so it
offers only what exists: the templates there are, the selected agent's checkpoints.

That reading is a task of its own, which each search waits on *shielded*: every key
typed cancels the search before it, and Textual's own wait on ``startup`` would pass
that cancel on to the reading itself (Textual then never searches again, so a palette
opened on a busy machine, keys typed before the daemon answered, stayed empty).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from functools import partial
from typing import Any, ClassVar

from rich.console import Group
from rich.markup import escape
from rich.syntax import Syntax
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.command import DiscoveryHit, Hit, Hits, Provider
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Label, Static

from agentdeck.core.agent import AgentSpec
from agentdeck.core.memory import MemoryHit
from agentdeck.core.worktree import WorktreeDiff
from agentdeck.errors import AgentdeckError
from agentdeck.tui.screens import Confirm, Prompt
from agentdeck.tui.steering import SteeringActions

logger = logging.getLogger(__name__)

Command = tuple[str, Callable[[], None], str]  # what the palette shows, what it does, help
MEMORY_HITS = 20


class Reading(ModalScreen[None]):
    """Something to read (a diff, search hits), scrollable; Escape or q closes it."""

    DEFAULT_CSS = """
    Reading { align: center middle; }
    Reading > VerticalScroll {
        width: 90%; height: 85%; border: thick $accent; background: $surface; padding: 0 1;
    }
    """
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape,q", "close", "Close")]

    def __init__(self, title: str, body: Any) -> None:
        super().__init__()
        self.title_text, self.body = title, body

    def compose(self) -> ComposeResult:
        with VerticalScroll() as box:
            box.border_title = self.title_text
            yield Static(self.body, id="reading-body")
        yield Label("[b]Esc[/] close")

    def action_close(self) -> None:
        self.dismiss(None)


def diff_body(diff: WorktreeDiff) -> Any:
    """The files an agent changed (lines added and removed) and its patch."""
    lines = []
    for f in diff.files:
        counts = "binary" if f.added is None else f"+{f.added} -{f.removed}"
        lines.append(f"{escape(f.path)}  [dim]{counts}[/]")
    head = Text.from_markup("\n".join(lines) or "no changes")
    if not diff.patch:
        return head
    return Group(head, Text(""), Syntax(diff.patch, "diff", theme="ansi_dark", word_wrap=True))


def hits_body(query: str, hits: list[MemoryHit]) -> Text:
    if not hits:
        return Text(f"nothing in memory matches {query!r}")
    out = Text()
    for hit in hits:
        out.append(f"{hit.title}\n", style="bold")
        out.append(f"  {hit.kind} · {hit.project} · {hit.id}\n", style="dim")
        out.append(f"  {hit.snippet}\n\n")
    return out


class DeckCommands(Provider):
    """The deck's commands, read from the daemon as the palette opens."""

    _loading: asyncio.Task[list[Command]] | None = None

    @property
    def deck(self) -> SteeringActions:
        """The app, by the base that has what the commands use (``app.DeckApp``
        imports this module: naming it here would close a circle)."""
        assert isinstance(self.app, SteeringActions)
        return self.app

    async def startup(self) -> None:
        self._loading = asyncio.create_task(self._read())

    async def shutdown(self) -> None:
        if self._loading is not None:
            self._loading.cancel()

    async def _commands(self) -> list[Command]:
        """The commands once read; a search cancelled meanwhile leaves the reading be."""
        assert self._loading is not None, "startup reads the commands first"
        return await asyncio.shield(self._loading)

    async def _read(self) -> list[Command]:
        app = self.deck
        commands: list[Command] = [
            ("search memory…", partial(ask_memory, app), "full-text search of what agents noted")
        ]
        try:
            for template in (await (await app.link.deck()).templates()).templates:
                name = template.name
                commands.append(
                    (f"start an agent: {name}", partial(ask_start, app, name),
                     template.description or "a new agent from this template")
                )  # fmt: skip
        except AgentdeckError as exc:
            logger.info("no templates for the palette: %s", exc)
        row = app.board.rows.get(app.selected or "")
        if row is not None:
            commands.append(
                (f"diff of {row.name}", partial(show_diff, app, row.id, row.name),
                 "what it changed in its worktree")
            )  # fmt: skip
            try:
                checkpoints = await (await app.link.deck()).checkpoints(row.id)
            except AgentdeckError as exc:
                logger.info("no checkpoints for the palette: %s", exc)
                checkpoints = []
            for point in reversed(checkpoints):  # the newest first
                n, what = point.n, point.summary or str(point.tool)
                commands.append(
                    (f"rewind {row.name} to checkpoint {n}: before {what}",
                     partial(ask_rewind, app, row.id, row.name, n),
                     "put its files back as they were (a checkpoint is taken first)")
                )  # fmt: skip
        return commands

    async def discover(self) -> Hits:
        for name, run, help_text in await self._commands():
            yield DiscoveryHit(name, run, help=help_text)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for name, run, help_text in await self._commands():
            if (score := matcher.match(name)) > 0:
                yield Hit(score, matcher.highlight(name), run, help=help_text)


def ask_start(app: SteeringActions, template: str) -> None:
    def started(prompt: str | None) -> None:
        if prompt:
            spec = AgentSpec(prompt=prompt)
            app._do(
                f"started an agent from {template}",
                lambda deck: deck.create_agent(spec, template=template),
            )

    app.push_screen(Prompt(f"Start an agent from {template}: its task"), started)


def show_diff(app: SteeringActions, agent_id: str, name: str) -> None:
    async def read() -> None:
        try:
            diff = await (await app.link.deck()).diff(agent_id)
        except AgentdeckError as exc:
            app.notify(f"diff of {name}: {exc.message}", severity="error")
            return
        app.push_screen(Reading(f"diff of {name} {diff.branch}".strip(), diff_body(diff)))

    app._spawn(read, group="palette")


def ask_rewind(app: SteeringActions, agent_id: str, name: str, n: int) -> None:
    def confirmed(yes: bool | None) -> None:
        if yes:
            app._do(f"rewound {name} to checkpoint {n}", lambda deck: deck.rewind(agent_id, to=n))

    app.push_screen(Confirm(f"Put {name}'s files back as they were at checkpoint {n}?"), confirmed)


def ask_memory(app: SteeringActions) -> None:
    def asked(answer: str | None) -> None:
        if not answer:
            return
        query = answer

        async def read() -> None:
            try:
                hits = await (await app.link.deck()).memory_search(query, limit=MEMORY_HITS)
            except AgentdeckError as exc:
                app.notify(f"memory search: {exc.message}", severity="error")
                return
            app.push_screen(Reading(f"memory: {query}", hits_body(query, hits)))

        app._spawn(read, group="palette")

    app.push_screen(Prompt("Search memory for:"), asked)
