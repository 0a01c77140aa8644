"""A webhook trigger's prompt (issue 33, item 2), rendered in Jinja2's
``ImmutableSandboxedEnvironment`` with the payload as data only (``payload``,
``event``, ``delivery``; no globals): no attribute that starts with ``_``, nothing
mutated, ``*`` and ``**`` bounded; the output capped (``core.triggers``' limits).
"""

from __future__ import annotations

from typing import Any

from jinja2 import StrictUndefined, TemplateError
from jinja2.sandbox import ImmutableSandboxedEnvironment

from agentdeck.core.triggers import MAX_PROMPT_CHARS, MAX_TEMPLATE_CHARS
from agentdeck.errors import UsageError


class _Sandbox(ImmutableSandboxedEnvironment):
    """Jinja2's sandbox (the immutable one: no ``payload.update(...)``), with ``*``
    and ``**`` bounded too (``'a' * 10**9`` would take a gigabyte)."""

    intercepted_binops = frozenset({"*", "**"})

    def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
        if operator == "**":
            if isinstance(right, int | float) and abs(right) > 64:
                raise UsageError("the prompt template raised to a power over 64")
            return left**right
        for a, b in ((left, right), (right, left)):
            repeated = isinstance(a, str | list | tuple) and isinstance(b, int)
            if repeated and len(a) * max(b, 0) > MAX_PROMPT_CHARS:
                raise UsageError("the prompt template repeated text past its cap")
        return left * right


_ENV = _Sandbox(autoescape=False, undefined=StrictUndefined)
_ENV.globals.clear()  # data only: no range, lipsum, cycler, joiner, namespace, dict


def check_prompt_template(text: str) -> str:
    """The template parses, and fits; ``UsageError`` otherwise."""
    if not isinstance(text, str) or not text.strip():
        raise UsageError("a trigger needs a prompt template")
    if len(text) > MAX_TEMPLATE_CHARS:
        raise UsageError(f"a prompt template holds at most {MAX_TEMPLATE_CHARS} characters")
    try:
        _ENV.parse(text)
    except TemplateError as exc:
        raise UsageError(f"bad prompt template: {exc}") from None
    return text


def render_prompt(text: str, payload: Any, *, event: str, delivery: str) -> str:
    """The prompt for one delivery: the template rendered in the sandbox with the
    payload as data only. ``UsageError`` for what the sandbox refuses (an unsafe
    attribute, a missing key) or an empty result; the output capped."""
    try:
        out = _ENV.from_string(text).render(payload=payload, event=event, delivery=delivery)
    except TemplateError as exc:  # SecurityError is one
        raise UsageError(f"the prompt template failed: {type(exc).__name__}: {exc}") from None
    except (TypeError, ValueError, ArithmeticError, RecursionError) as exc:
        raise UsageError(f"the prompt template failed: {type(exc).__name__}") from None
    out = out.strip()
    if not out:
        raise UsageError("the prompt template rendered nothing")
    return out[:MAX_PROMPT_CHARS]
