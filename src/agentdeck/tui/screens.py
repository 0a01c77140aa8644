"""Modal screens: a yes/no confirmation and a one-line text prompt."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Label


class Confirm(ModalScreen[bool]):
    """``y`` confirms, ``n`` or Escape cancels."""

    DEFAULT_CSS = """
    Confirm { align: center middle; }
    Confirm > Vertical {
        width: 60; height: auto; padding: 1 2; border: thick $error; background: $surface;
    }
    """
    BINDINGS = [
        Binding("y", "answer(True)", "Yes"),
        Binding("n,escape", "answer(False)", "No"),
    ]

    def __init__(self, question: str) -> None:
        super().__init__()
        self.question = question

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(self.question)
            yield Label("[b]y[/] yes   [b]n[/] no")

    def action_answer(self, yes: bool) -> None:
        self.dismiss(yes)


class Prompt(ModalScreen[str | None]):
    """One line of text; Enter gives it (empty allowed if ``allow_empty``), Escape
    cancels with None."""

    DEFAULT_CSS = """
    Prompt { align: center middle; }
    Prompt > Vertical {
        width: 70; height: auto; padding: 1 2; border: thick $accent; background: $surface;
    }
    """
    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, question: str, *, placeholder: str = "", allow_empty: bool = False) -> None:
        super().__init__()
        self.question = question
        self.placeholder = placeholder
        self.allow_empty = allow_empty

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(self.question)
            yield Input(placeholder=self.placeholder, id="prompt-input")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        if event.value.strip() or self.allow_empty:
            self.dismiss(event.value.strip())

    def action_cancel(self) -> None:
        self.dismiss(None)
