"""The runner: starts agents, keeps one supervised session per live agent.

It also answers steering commands that other processes left in the store for
agents it owns (``agentdeck interrupt ID`` from another terminal), and owns the
scripted model servers that ``--scenario`` runs talk to.

The runner is built in parts, one responsibility each: its state and the
steering it serves (``runner_base``), processes started ahead
(``warm_starts``), new agents (``creation``), agents started again
(``restarts``), agents that wait for a runner host (``queueing``), and its
stop (``shutdown``).
"""

from __future__ import annotations

from agentdeck.runner.creation import default_name
from agentdeck.runner.queueing import AgentQueueing
from agentdeck.runner.restarts import RESUME_PROMPT, TRANSIENT_EXTRA
from agentdeck.runner.shutdown import WAITING_IN_A_TOOL, RunnerShutdown

__all__ = ["RESUME_PROMPT", "TRANSIENT_EXTRA", "WAITING_IN_A_TOOL", "Runner", "default_name"]


class Runner(AgentQueueing, RunnerShutdown):
    """Starts agents and keeps one supervised session per live agent (see the module)."""
