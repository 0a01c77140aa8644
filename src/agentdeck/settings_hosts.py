"""Runner hosts' settings (a deck on PostgreSQL with several hosts): a part of the
one ``Settings`` object (``settings.py``), kept here so that each module stays small."""

from __future__ import annotations

from typing import Self

from pydantic import Field, model_validator
from pydantic_settings import BaseSettings


class HostSettings(BaseSettings):
    runner_heartbeat_seconds: float = Field(
        default=5.0, gt=0, le=60, allow_inf_nan=False,
        description="How often a runner host heartbeats (renewing its agents' leases).",
    )  # fmt: skip
    runner_lease_seconds: float = Field(
        default=15.0, gt=0, le=600, allow_inf_nan=False,
        description="How long a runner host's lease on an agent lasts without a heartbeat: "
        "past it the host is lost and fenced. At least twice the heartbeat.",
    )  # fmt: skip
    runner_name: str | None = Field(
        default=None,
        description="This runner host's name in the deck (`agentdeck hosts`); default: the "
        "machine's hostname. One process per name: a second one fences the first.",
    )
    runner_capacity: int | None = Field(
        default=None, ge=0, le=10_000,
        description="Agents this runner host runs at once; default: AGENTDECK_MAX_LIVE_AGENTS. "
        "0 claims nothing (a draining host).",
    )  # fmt: skip
    runner_labels: list[str] = Field(
        default_factory=list,
        description="This runner host's labels (JSON list); an agent asking for labels "
        "(`run --label`) runs only on a host carrying all of them.",
    )
    runner_project_roots: list[str] = Field(
        default_factory=list,
        description="Directories (JSON list of absolute paths) this runner host reaches: it "
        "claims agents whose working directory or repository is under one of them. Empty: "
        "only agents in a workspace of their own; `agentdeck up` takes `/` then.",
    )
    runner_poll_seconds: float = Field(
        default=1.0, gt=0, le=60, allow_inf_nan=False,
        description="How often a runner host looks for queued agents and steering commands "
        "when no PostgreSQL NOTIFY woke it sooner.",
    )  # fmt: skip
    transcript_max_bytes: int = Field(
        default=32 * 1024 * 1024, ge=1,
        description="Largest Claude Code transcript a runner host keeps in the database "
        "(for a resume on another host); a larger one is refused and not kept.",
    )  # fmt: skip

    @model_validator(mode="after")
    def _lease_outlasts_heartbeats(self) -> Self:
        if self.runner_lease_seconds < 2 * self.runner_heartbeat_seconds:
            raise ValueError(
                "AGENTDECK_RUNNER_LEASE_SECONDS must be at least twice "
                "AGENTDECK_RUNNER_HEARTBEAT_SECONDS"
            )
        return self
