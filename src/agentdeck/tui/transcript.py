"""The transcript pane: a virtualised, capped list of ``entries.Entry``.

Only the lines in view are drawn (Textual's line API), and the pane holds at most
``MAX_ENTRIES`` entries, so memory stays bounded however long the log is. It opens
on the newest page; scrolling to the top asks (``NeedOlder``) for the page before
it, which the app reads with the deck's ``events_before``. Reading far back drops the
newest entries (the pane is then *detached*: live events are not added); ``End``,
or scrolling to the bottom, asks (``NeedTail``) for the newest page again.

Keys when focused: up/down move the cursor over entries, Enter (or a click) opens
or closes a tool call, ``]`` and ``[`` page through a long output.
"""

from __future__ import annotations

from typing import ClassVar

from rich.segment import Segment
from rich.style import Style
from rich.theme import Theme
from textual import events
from textual.binding import Binding, BindingType
from textual.geometry import Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip

from agentdeck.core.events import StoredEvent
from agentdeck.core.partial import PartialText
from agentdeck.tui.entries import (
    MARKDOWN_STYLES,
    Entry,
    Writing,
    adopt,
    entries_from,
    renderable,
)

MAX_ENTRIES = 1000
_ENDS_WRITING = frozenset({"assistant_text", "turn_completed", "state_changed"})


class TranscriptView(ScrollView, can_focus=True):
    COMPONENT_CLASSES: ClassVar[set[str]] = {"transcript--cursor"}
    DEFAULT_CSS = """
    TranscriptView > .transcript--cursor { background: $boost; }
    TranscriptView:focus > .transcript--cursor { background: $accent 30%; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up", "cursor(-1)", "previous", show=False),
        Binding("down", "cursor(1)", "next", show=False),
        Binding("enter", "open_close", "open/close", show=False),
        Binding("right_square_bracket", "page(1)", "next page", show=False),
        Binding("left_square_bracket", "page(-1)", "previous page", show=False),
        Binding("end", "tail", "newest", show=False),
    ]

    class NeedOlder(Message):
        """Scrolled to the top with older events left: read the page before ``before``."""

        def __init__(self, before: int) -> None:
            super().__init__()
            self.before = before

    class NeedTail(Message):
        """Detached and back at the bottom: read the newest page again."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.entries: list[Entry] = []
        self.older: int | None = None  # ``before`` for the page before ours; None: none
        self.detached = False  # the newest entries were dropped to make room
        self.fetching = False  # a page is being read (no second request meanwhile)
        self.cursor: int | None = None
        self.following = True  # at the bottom: new lines scroll into view
        self._open_calls: dict[str, Entry] = {}
        self._writing = Writing()  # the text being written, drawn after the entries
        self._writing_lines = 0  # its lines at the end of ``_lines``
        self._strips: dict[int, tuple[int, list[Strip]]] = {}  # id(entry): (width, lines)
        self._lines: list[Strip] = []
        self._owner: list[int] = []  # line -> index of its entry
        self._width = 0

    # -- content --------------------------------------------------------------------

    def reset(self) -> None:
        self._writing = Writing()
        self.entries, self._open_calls, self._strips = [], {}, {}
        self.older, self.detached, self.fetching, self.cursor = None, False, False, None
        self.following = True
        self._relayout()

    def write_partial(self, edit: PartialText) -> None:
        """The text being written, as a last entry that grows (``core.partial``): the
        text's own entry replaces it when its event comes."""
        if self.detached or not self._writing.take(edit):
            return
        following = self.following
        self._drop_writing_lines()
        self._add_writing_lines()
        if following:
            self.scroll_end(animate=False)

    def append(self, events: list[StoredEvent]) -> None:
        """Live or newest events, after what is shown (ignored while detached)."""
        if self.detached:
            return
        following = self.following
        self._drop_writing_lines()
        if any(e.type in _ENDS_WRITING for e in events):
            self._writing = Writing()  # the text whole, or the turn over without it
        known = {id(e) for e in self._open_calls.values()}
        new = entries_from(events, self._open_calls)
        changed = known - {id(e) for e in self._open_calls.values()}  # calls now answered
        for key in changed:
            self._strips.pop(key, None)
        self.entries += new
        dropped = len(self.entries) - MAX_ENTRIES
        if dropped > 0:
            self.older = self.entries[dropped].first_id
            self._forget(self.entries[:dropped])
            self.entries = self.entries[dropped:]
            self.cursor = None if self.cursor is None else max(0, self.cursor - dropped)
        if changed or dropped > 0:
            self._relayout()
        else:
            self._add_lines(new, len(self.entries) - len(new))
            self._add_writing_lines()
        if following:
            self.scroll_end(animate=False)  # after the refresh: the new size is known

    def prepend(self, events: list[StoredEvent], older: int | None) -> None:
        """An older page, before what is shown; the view stays where it was."""
        calls: dict[str, Entry] = {}
        new = entries_from(events, calls)
        if not new and not events:
            self.older = older
            return
        shown = adopt(calls, self.entries) if calls else self.entries
        if len(shown) != len(self.entries):
            kept = {id(e) for e in shown}
            self._forget([e for e in self.entries if id(e) not in kept])  # adopted results
            self.cursor = None
        self.entries = new + shown
        self.cursor = None if self.cursor is None else self.cursor + len(new)
        self.older = older
        extra = len(self.entries) - MAX_ENTRIES
        if extra > 0:  # reading back: the newest go (and live events wait)
            self._forget(self.entries[-extra:])
            self.entries = self.entries[:-extra]
            self.detached = True
            if self.cursor is not None and self.cursor >= len(self.entries):
                self.cursor = len(self.entries) - 1
        y = self.scroll_offset.y
        self._relayout()
        self.scroll_to(y=y + self._lines_of(len(new)), animate=False, immediate=True)

    def _forget(self, gone: list[Entry]) -> None:
        for entry in gone:
            self._strips.pop(id(entry), None)
            if entry.tool_use_id:
                self._open_calls.pop(entry.tool_use_id, None)

    @property
    def text(self) -> str:
        """Everything in the pane as plain text (what a reader would see, unscrolled)."""
        return "\n".join(strip.text.rstrip() for strip in self._lines)

    # -- layout ---------------------------------------------------------------------

    def _entry_strips(self, entry: Entry, width: int) -> list[Strip]:
        cached = self._strips.get(id(entry))
        if cached is not None and cached[0] == width:
            return cached[1]
        console = self.app.console
        options = console.options.update_width(width)
        dark = self.app.current_theme.dark
        with console.use_theme(Theme(MARKDOWN_STYLES[dark])):
            segments = list(console.render(renderable(entry, dark=dark), options))
        lines = list(
            Segment.split_and_crop_lines(segments, width, pad=False, include_new_lines=False)
        )
        strips = Strip.from_lines(lines)
        for strip in strips:
            strip.adjust_cell_length(width)
        self._strips[id(entry)] = (width, strips)
        return strips

    def _content_width(self) -> int:
        return max(20, self.scrollable_content_region.width or self.size.width)

    def _add_lines(self, new: list[Entry], first_index: int) -> None:
        width = self._width or self._content_width()
        for index, entry in enumerate(new, start=first_index):
            strips = self._entry_strips(entry, width)
            self._lines += strips
            self._owner += [index] * len(strips)
        self.virtual_size = Size(width, len(self._lines))
        self.refresh()

    def _relayout(self) -> None:
        self._width = self._content_width()
        self._lines, self._owner = [], []
        self._writing_lines = 0
        self._add_lines(self.entries, 0)
        self._add_writing_lines()

    def _add_writing_lines(self) -> None:
        entry = self._writing.entry
        if entry is None:
            return
        width = self._width or self._content_width()
        strips = self._entry_strips(entry, width)
        # Not kept: it is drawn anew as it grows, and a later entry may get its id().
        self._strips.pop(id(entry), None)
        self._lines += strips
        self._owner += [len(self.entries)] * len(strips)  # no entry: never the cursor's
        self._writing_lines = len(strips)
        self.virtual_size = Size(width, len(self._lines))
        self.refresh()

    def _drop_writing_lines(self) -> None:
        if self._writing_lines:
            del self._lines[-self._writing_lines :]
            del self._owner[-self._writing_lines :]
            self._writing_lines = 0

    def _lines_of(self, count: int) -> int:
        """How many lines the first ``count`` entries take."""
        return next((i for i, owner in enumerate(self._owner) if owner >= count), len(self._owner))

    def on_mount(self) -> None:
        super().on_mount()  # type: ignore[no-untyped-call]  # Textual leaves it untyped
        self.app.theme_changed_signal.subscribe(self, lambda _theme: self._restyle())

    def _restyle(self) -> None:
        """Another theme: every entry is drawn again in its colours."""
        self._strips.clear()
        self._relayout()

    def on_resize(self, event: events.Resize) -> None:
        if self._content_width() != self._width:
            self._relayout()

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        index = scroll_y + y
        width = self.scrollable_content_region.width
        if index >= len(self._lines):
            return Strip.blank(width, self.rich_style)
        strip = self._lines[index].apply_style(self.rich_style)
        if self.cursor is not None and self._owner[index] == self.cursor:
            cursor: Style = self.get_component_rich_style("transcript--cursor")
            strip = strip.apply_style(cursor)
        return strip.crop_extend(scroll_x, scroll_x + width, self.rich_style)

    # -- paging and moving ----------------------------------------------------------

    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        super().watch_scroll_y(old_value, new_value)
        if new_value != old_value:
            self.following = new_value >= self.max_scroll_y
        if self.fetching:
            return
        if round(new_value) <= 0 and self.older is not None and old_value > new_value:
            self.fetching = True
            self.post_message(self.NeedOlder(self.older))
        elif self.detached and new_value >= self.max_scroll_y and new_value > old_value:
            self.action_tail()

    def action_tail(self) -> None:
        if self.detached:
            self.fetching = True
            self.post_message(self.NeedTail())
        else:
            self.scroll_end(animate=False)

    def action_cursor(self, step: int) -> None:
        if not self.entries:
            return
        if self.cursor is None:
            self.cursor = len(self.entries) - 1 if step < 0 else self._first_in_view()
        else:
            self.cursor = min(len(self.entries) - 1, max(0, self.cursor + step))
        self._show_cursor()

    def _first_in_view(self) -> int:
        y = self.scroll_offset.y
        return self._owner[y] if y < len(self._owner) else 0

    def _show_cursor(self) -> None:
        if self.cursor is None:
            return
        top = self._lines_of(self.cursor)
        bottom = self._lines_of(self.cursor + 1)
        height = self.scrollable_content_region.height
        if top < self.scroll_offset.y:
            self.scroll_to(y=top, animate=False)
        elif bottom > self.scroll_offset.y + height:
            self.scroll_to(y=max(top, bottom - height), animate=False)
        elif top == 0 and self.older is not None and not self.fetching:
            self.fetching = True
            self.post_message(self.NeedOlder(self.older))
        self.refresh()

    def action_open_close(self) -> None:
        entry = self._at_cursor()
        if entry is not None and entry.kind == "tool":
            entry.expanded, entry.page = not entry.expanded, 0
            self._redraw(entry)

    def action_page(self, step: int) -> None:
        entry = self._at_cursor()
        if entry is not None and entry.turn_page(step):
            self._redraw(entry)

    def _at_cursor(self) -> Entry | None:
        if self.cursor is None or not 0 <= self.cursor < len(self.entries):
            return None
        return self.entries[self.cursor]

    def _redraw(self, entry: Entry) -> None:
        self._strips.pop(id(entry), None)
        self._relayout()
        self._show_cursor()

    def on_click(self, event: events.Click) -> None:
        offset = event.get_content_offset(self)
        if offset is None:
            return
        line = offset.y + self.scroll_offset.y
        if 0 <= line < len(self._owner):
            self.cursor = self._owner[line]
            self.action_open_close()
            self.refresh()
