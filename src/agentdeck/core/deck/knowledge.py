"""The Deck interface, what the deck knows: agent templates, the policy (check,
explain), memory, usage and budgets."""

from __future__ import annotations

from typing import Protocol


class KnowledgeOps(Protocol):
    """Agent templates, the policy (check, explain), memory, usage and budgets."""
