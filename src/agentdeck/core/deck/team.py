"""The Deck interface, who shares the deck: users, tokens, notification targets."""

from __future__ import annotations

from typing import Protocol


class TeamOps(Protocol):
    """Who shares the deck: users, tokens, notification targets."""
