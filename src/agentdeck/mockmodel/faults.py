"""Which scripted fault, if any, hits a request: per-scenario request counting."""

from __future__ import annotations

import threading
from collections import Counter

from agentdeck.mockmodel.scenario import Fault, Scenario


class FaultPlan:
    """Counts ``/v1/messages`` POSTs per scenario (1-based) and picks the fault.

    The count is the only state the server keeps; it belongs to the server run,
    so a fresh server starts counting again.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: Counter[str | None] = Counter()

    def next_request(self, scenario: Scenario | None) -> tuple[int, Fault | None]:
        """Count one request for ``scenario``; its number and the first fault that applies."""
        key = scenario.name if scenario is not None else None
        with self._lock:
            self._counts[key] += 1
            number = self._counts[key]
        if scenario is None:
            return number, None
        fault = next((f for f in scenario.faults if f.applies_to(number)), None)
        return number, fault

    def count(self, scenario_name: str | None) -> int:
        with self._lock:
            return self._counts[scenario_name]
