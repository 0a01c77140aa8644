"""The transcript pane's entries: events grouped into what a reader sees. Pure.

An assistant's text is one Markdown entry; a tool call is one entry holding its
result (paired by ``tool_use_id``), drawn on one line until it is expanded; every
other event the reader wants is one line, the same runs ``agentdeck logs`` prints
(``core.log_lines``): a line of the pane and a line of the log never differ.
An expanded call shows its input and its output a page of ``OUTPUT_PAGE_LINES``
lines at a time.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from rich.console import Group, RenderableType
from rich.markdown import Markdown
from rich.markup import escape
from rich.text import Text

from agentdeck.core.events import StoredEvent
from agentdeck.core.log_lines import log_line
from agentdeck.core.partial import PartialText

OUTPUT_PAGE_LINES = 40
INPUT_LINES = 20


@dataclass(eq=False)
class Entry:
    """One thing in the pane. ``kind`` is ``markdown``, ``tool`` or ``line`` (a line
    with a ``result`` is a tool's result whose call is not on screen)."""

    first_id: int
    kind: str
    body: str = ""  # the Markdown text
    spans: list[tuple[str, str]] = field(default_factory=list)  # a line's runs
    tool: str = ""
    input: dict[str, Any] = field(default_factory=dict)
    tool_use_id: str | None = None
    result: dict[str, Any] | None = None
    expanded: bool = False
    page: int = 0  # of the output, when expanded

    @property
    def output_lines(self) -> list[str]:
        return str((self.result or {}).get("output", "")).splitlines()

    @property
    def pages(self) -> int:
        return max(1, -(-len(self.output_lines) // OUTPUT_PAGE_LINES))

    def turn_page(self, step: int) -> bool:
        """Show the next (1) or previous (-1) page of output; False when there is none."""
        page = self.page + step
        if not self.expanded or not 0 <= page < self.pages:
            return False
        self.page = page
        return True


def entries_from(events: list[StoredEvent], open_calls: dict[str, Entry]) -> list[Entry]:
    """The new entries ``events`` make. A result whose call is in ``open_calls`` (the
    calls on screen, by ``tool_use_id``) goes into that entry and makes none."""
    out: list[Entry] = []
    for event in events:
        kind, data, event_id = event.type, event.data, event.id
        if kind == "assistant_text":
            out.append(Entry(event_id, "markdown", body=str(data.get("text", ""))))
        elif kind == "tool_called":
            entry = Entry(
                event_id, "tool", tool=str(data.get("tool")), input=data.get("input") or {},
                tool_use_id=data.get("tool_use_id"),
            )  # fmt: skip
            out.append(entry)
            if entry.tool_use_id:
                open_calls[entry.tool_use_id] = entry
        elif kind == "tool_returned" and data.get("tool_use_id") in open_calls:
            open_calls.pop(str(data["tool_use_id"])).result = data
        elif kind == "tool_returned" and (spans := log_line(event.to_dict())) is not None:
            # Its call is not on screen (an older page): adopted if that page comes.
            out.append(Entry(event_id, "line", spans=spans, result=data))
        elif (spans := log_line(event.to_dict())) is not None:
            out.append(Entry(event_id, "line", spans=spans))
    return out


def adopt(calls: dict[str, Entry], shown: list[Entry]) -> list[Entry]:
    """``shown`` without the results that ``calls`` (from an older page, unanswered
    there) were waiting for: each goes into its call."""
    kept = []
    for entry in shown:
        call = calls.get(str((entry.result or {}).get("tool_use_id")))
        if entry.kind == "line" and call is not None and call.result is None:
            call.result = entry.result
        else:
            kept.append(entry)
    return kept


def _result_note(result: dict[str, Any] | None) -> str:
    if result is None:
        return "[dim]running…[/]"
    size = int(result.get("size") or len(str(result.get("output", ""))))
    if result.get("is_error"):
        return f"[red]error, {size:,} bytes[/]"
    return f"[dim]{size:,} bytes[/]"


# Colours that read on the theme's background: ANSI yellow and cyan are pale on a
# light one (``transcript`` draws Markdown's inline code with ``MARKDOWN_STYLES``).
_MARKUP = frozenset("*_`#[]<>|~-+=!\n\\")  # text without these reads the same unparsed
TOOL_COLOUR = {True: "yellow", False: "#875f00"}
_LIGHT = {"yellow": "#875f00", "cyan": "#005f87"}


def themed(spans: list[tuple[str, str]], *, dark: bool) -> Text:
    """A line's runs as Rich text (never read as markup), its pale colours darker
    on a light theme."""
    if dark:
        return Text.assemble(*spans)
    return Text.assemble(
        *(
            (text, " ".join(_LIGHT.get(word, word) for word in style.split()))
            for text, style in spans
        )
    )


MARKDOWN_STYLES = {
    True: {"markdown.code": "bold cyan", "markdown.code_block": "cyan"},
    False: {"markdown.code": "bold #005f87", "markdown.code_block": "#005f87"},
}


def renderable(entry: Entry, *, dark: bool = True) -> RenderableType:
    """What the pane draws for ``entry`` (its width is the pane's), for a dark or a
    light theme."""
    if entry.kind == "markdown":
        if not _MARKUP.intersection(entry.body):  # plain prose: no parser needed
            return Text(entry.body)
        code_theme = "ansi_dark" if dark else "ansi_light"
        return Markdown(entry.body, code_theme=code_theme, hyperlinks=False)
    if entry.kind == "line":
        return themed(entry.spans, dark=dark)
    colour = TOOL_COLOUR[dark]
    if not entry.expanded:
        call = log_line({"type": "tool_called", "data": {"tool": entry.tool, "input": entry.input}})
        head = themed([("▸ ", colour), *(call or [])], dark=dark)
        head.append_text(Text.from_markup(f"  {_result_note(entry.result)}"))
        head.no_wrap, head.overflow = True, "ellipsis"
        return head
    parts: list[RenderableType] = [
        Text.from_markup(f"[b {colour}]▾ ⚙ {escape(entry.tool)}[/]  {_result_note(entry.result)}")
    ]
    shown = json.dumps(entry.input, indent=2, ensure_ascii=False).splitlines()
    if len(shown) > INPUT_LINES:
        shown = [*shown[:INPUT_LINES], f"… {len(shown) - INPUT_LINES:,} more lines of input"]
    parts.append(Text("\n".join(f"    {line}" for line in shown), style="dim"))
    if entry.result is not None:
        lines = entry.output_lines
        start = entry.page * OUTPUT_PAGE_LINES
        page = lines[start : start + OUTPUT_PAGE_LINES]
        parts.append(Text("\n".join(f"  │ {line}" for line in page) or "  │ (no output)"))
        if entry.pages > 1:
            parts.append(
                Text.from_markup(
                    f"  [b]lines {start + 1:,}-{start + len(page):,} of {len(lines):,}[/]"
                    "  [b]][/] next page  [b]\\[[/] previous"
                )
            )
        if entry.result.get("truncated"):
            where = escape(str(entry.result.get("payload_path")))
            parts.append(Text.from_markup(f"  [dim]cut short; the whole output is at {where}[/]"))
    return Group(*parts)


class Writing:
    """The agent's text being written (``core.partial`` edits), as a line entry while
    it grows; the text's own event replaces it. A subagent's, or a block joined
    midway or with an edit missed, is left to its event."""

    def __init__(self) -> None:
        self.block: str | None = None
        self.text = ""
        self.entry: Entry | None = None

    def take(self, edit: PartialText) -> bool:
        """Apply ``edit``; whether the entry changed."""
        if edit.parent_tool_use_id is not None:
            return False
        if edit.block != self.block:
            if edit.offset != 0:
                return False
            self.block, self.text = edit.block, ""
        if edit.offset > len(self.text):
            return False
        self.text = edit.applied(self.text)
        self.entry = Entry(first_id=0, kind="line", spans=[("● ", "bold"), (self.text, "")])
        return True
