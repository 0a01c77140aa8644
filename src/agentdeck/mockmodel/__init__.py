"""The scripted Anthropic Messages API server that stands in for the model.

It plays scenario files (see ``scenario``) to the real Claude Code CLI::

    mm = MockModel([load_scenario(builtin_scenario_path("demo"))])
    await mm.start()
    env["ANTHROPIC_BASE_URL"] = mm.url_for("demo")
"""

from agentdeck.mockmodel.loader import (
    builtin_scenario_names,
    builtin_scenario_path,
    load_scenario,
    write_workspace,
)
from agentdeck.mockmodel.recording import RecordedRequest
from agentdeck.mockmodel.scenario import (
    Condition,
    Conversation,
    Fault,
    Scenario,
    TextBlock,
    ThinkingBlock,
    ToolUseBlock,
    Turn,
    parse_scenario,
)
from agentdeck.mockmodel.server import MockModel, serve

__all__ = [
    "Condition",
    "Conversation",
    "Fault",
    "MockModel",
    "RecordedRequest",
    "Scenario",
    "TextBlock",
    "ThinkingBlock",
    "ToolUseBlock",
    "Turn",
    "builtin_scenario_names",
    "builtin_scenario_path",
    "load_scenario",
    "parse_scenario",
    "serve",
    "write_workspace",
]
