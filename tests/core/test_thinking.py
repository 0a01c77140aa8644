"""core.thinking: a template's thinking key as the SDK's thinking config."""

from __future__ import annotations

from typing import Any

import pytest

from agentdeck.core.thinking import parse_thinking


@pytest.mark.parametrize(
    ("value", "config"),
    [
        (None, None),
        ("adaptive", {"type": "adaptive"}),
        ("disabled", {"type": "disabled"}),
        (False, {"type": "disabled"}),
        (8000, {"type": "enabled", "budget_tokens": 8000}),
    ],
)
def test_thinking_values(value: Any, config: dict[str, Any] | None) -> None:
    assert parse_thinking(value, lambda key, why: pytest.fail(why)) == config


@pytest.mark.parametrize("value", [True, "max", 12, 10**9, 2.5, {"type": "enabled"}])
def test_a_bad_thinking_is_one_problem(value: Any) -> None:
    problems: list[tuple[str | None, str]] = []
    assert parse_thinking(value, lambda key, why: problems.append((key, why))) is None
    assert problems == [
        ("thinking", "must be adaptive, disabled or a number of tokens (1,024 to 128,000)")
    ]
