"""The ``deck`` MCP server: in-process tools for one agent (``mcp__deck__*``).

Every agent agentdeck runs gets ``ask_orchestrator`` and ``remember``; an agent with a parent
also gets ``notify_parent`` and ``message_agent``; an agent whose template says
``orchestrator: true`` gets the orchestrator's tools. Each tool acts as the
agent it was built for, on its own children only. What goes wrong comes back to
the model as an error result that says what to do instead.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Protocol

from agentdeck import __version__
from agentdeck.core.agent import Agent
from agentdeck.core.patch_scrub import scrub_patch
from agentdeck.errors import AgentdeckError, Refused
from agentdeck.orchestration import texts
from agentdeck.orchestration.deck_server import SERVER, spawn_config
from agentdeck.orchestration.host import Orchestration
from agentdeck.orchestration.inbox import Inbox
from agentdeck.orchestration.remember import DESCRIPTION, SCHEMA, remember
from agentdeck.orchestration.waits import Waits
from agentdeck.runner.callbacks import held
from agentdeck.settings import Settings
from agentdeck.worktrees import worktree_of

if TYPE_CHECKING:
    from claude_agent_sdk import SdkMcpTool


class ToolsHost(Orchestration, Protocol):
    """What the tools use: the Orchestrator, its inbox and its waits."""

    inbox: Inbox
    waits: Waits


logger = logging.getLogger(__name__)

ORCHESTRATOR_TOOLS = (
    "spawn_agent",
    "list_agents",
    "read_transcript",
    "send_to_agent",
    "wait_for_agents",
    "interrupt_agent",
    "kill_agent",
    "answer_request",
    "diff_agent",
    "merge_agent",
)
WORKER_TOOLS = ("ask_orchestrator", "notify_parent", "message_agent", "remember")

Handler = Callable[[dict[str, Any]], Awaitable[str]]

_STR = {"type": "string"}
DIFF_CHARS = 20_000  # of a patch told to the model


def _schema(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
    }


def _described(kind: dict[str, Any], text: str, **more: Any) -> dict[str, Any]:
    return {**kind, "description": text, **more}


AGENT_REF = _described(_STR, "A child agent: its name, id or a unique id prefix.")

SCHEMAS: dict[str, tuple[str, dict[str, Any]]] = {
    "spawn_agent": (
        "Start a child agent that works on its own task, in the background. Returns its "
        "name, id and state at once; use wait_for_agents to wait for its result.",
        _schema(
            {
                "prompt": _described(
                    _STR, "The task, complete on its own: goal, files, constraints, done-when."
                ),
                "template": _described(
                    _STR,
                    "The agent template: engineer (changes code), tester, reviewer, "
                    "researcher, orchestrator, or one of the project's own.",
                    default="engineer",
                ),
                "name": _described(
                    {"type": ["string", "null"]},
                    "A short name, unique among your children (default: template-N).",
                ),
                "workspace": _described(
                    _STR,
                    "new: an empty directory of its own; shared: your working directory; "
                    "worktree: a git worktree on its own branch.",
                    enum=["new", "shared", "worktree"],
                    default="new",
                ),
                "budget_usd": _described(
                    {"type": ["number", "null"], "exclusiveMinimum": 0},
                    "Its spending cap in USD, carved from what you have left (default: the "
                    "template's, or all you have left).",
                ),
            },
            ["prompt"],
        ),
    ),
    "list_agents": (
        "Your child agents: state, current tool, turns, cost and the start of each one's "
        "last result.",
        _schema({}, []),
    ),
    "read_transcript": (
        "What a child agent did: its events after an event id, one line each (tool calls "
        "on one line, long outputs cut), and the id to continue from.",
        _schema(
            {
                "agent": AGENT_REF,
                "since": _described(
                    {"type": "integer", "minimum": 0}, "Events after this id.", default=0
                ),
                "limit": _described(
                    {"type": "integer", "minimum": 1, "maximum": 200},
                    "Most events to return.",
                    default=50,
                ),
            },
            ["agent"],
        ),
    ),
    "diff_agent": (
        "What a child agent in a worktree changed on its branch, committed or not: the "
        "files with lines added and removed, then the patch (cut when long).",
        _schema({"agent": AGENT_REF}, ["agent"]),
    ),
    "merge_agent": (
        "Land a child agent's branch on the branch it started from: combined with the "
        "latest of that branch and tested first, by the test the repository's "
        ".agentdeck/merge.yaml names on that branch; refused (with why) on a conflict or a "
        "failing test, and then nothing moves.",
        _schema({"agent": AGENT_REF}, ["agent"]),
    ),
    "send_to_agent": (
        "Send a child agent a follow-up message: queued if it is busy, and a child that "
        "finished is resumed with it.",
        _schema({"agent": AGENT_REF, "text": _described(_STR, "The message.")}, ["agent", "text"]),
    ),
    "wait_for_agents": (
        "Wait until your child agents have finished their turn (all of them, or any one), "
        "and get each one's final message, whether it ended in error, and its cost. Returns "
        "early when a child asks you a question or sends a note, and at the timeout with who "
        "is still running.",
        _schema(
            {
                "agents": _described(
                    {"type": "array", "items": _STR},
                    "The children to wait for (names or ids); empty: all of them.",
                    default=[],
                ),
                "timeout_seconds": _described(
                    {"type": "number", "minimum": 0}, "How long to wait at most.", default=600
                ),
                "mode": _described(
                    _STR, "all: every one; any: the first one.", enum=["all", "any"], default="all"
                ),
            },
            [],
        ),
    ),
    "interrupt_agent": (
        "Stop a child agent's current turn (it stays alive and takes follow-ups).",
        _schema({"agent": AGENT_REF}, ["agent"]),
    ),
    "kill_agent": (
        "Stop a child agent, and every agent it started, for good.",
        _schema({"agent": AGENT_REF}, ["agent"]),
    ),
    "answer_request": (
        "Answer a question a child agent asked you (it waits until you do).",
        _schema(
            {
                "request_id": _described(
                    _STR, "The question's id (ak…), or the name of the child that asked."
                ),
                "answer": _described(_STR, "Your answer."),
            },
            ["request_id", "answer"],
        ),
    ),
    "ask_orchestrator": (
        "Ask the agent that started you (or, if none did, a person) a question, and wait "
        "for the answer. Use it when a wrong guess would waste real work.",
        _schema(
            {
                "question": _described(_STR, "One precise question, with the options you see."),
                "timeout_seconds": _described(
                    {"type": "number", "minimum": 1},
                    "How long to wait for an answer before going on without one.",
                    default=1800,
                ),
                "request_id": _described(
                    {"type": ["string", "null"]},
                    "To keep waiting for an earlier question of yours: its id.",
                ),
            },
            ["question"],
        ),
    ),
    "notify_parent": (
        "Tell the agent that started you something without waiting: it gets it with its "
        "next turn, or at once if it is waiting for you.",
        _schema({"text": _described(_STR, "What to tell it.")}, ["text"]),
    ),
    "message_agent": (
        "Send a message to a sibling (another child of your orchestrator): it reads it with "
        "its next turn.",
        _schema(
            {
                "agent": _described(_STR, "The sibling's name or id."),
                "text": _described(_STR, "The message."),
            },
            ["agent", "text"],
        ),
    ),
    "remember": (DESCRIPTION, SCHEMA),
}


def tool_names(agent: Agent) -> list[str]:
    """The deck tools ``agent`` gets, by its role."""
    names = ["ask_orchestrator", "remember"]
    if agent.parent_id:
        names += ["notify_parent", "message_agent"]
    if agent.spec.orchestrator:
        names += list(ORCHESTRATOR_TOOLS)
    return names


def handlers(
    orch: ToolsHost, agent_id: str, *, wait_cap: float | None = None
) -> dict[str, Handler]:
    """What each tool does, as the agent ``agent_id``; ``wait_cap``: the most
    one blocking call may wait (default: from Claude Code's timeout for it)."""

    async def spawn_agent(a: dict[str, Any]) -> str:
        child = await orch.spawn(
            agent_id,
            str(a["prompt"]),
            template=str(a.get("template") or "engineer"),
            name=a.get("name") or None,
            workspace=a.get("workspace") or None,
            budget_usd=a.get("budget_usd"),
        )
        budget = f", budget ${child.spec.budget_usd:.2f}" if child.spec.budget_usd else ""
        return (
            f"Started {texts.who(child)} in {child.cwd or 'a runner host'}"
            f" ({child.spec.workspace} workspace"
            f"{budget}); state {child.state}. It works in the background: wait_for_agents"
            f"([{child.name!r}]) returns its result."
        )

    async def list_agents(_: dict[str, Any]) -> str:
        return texts.children_text(await orch.children(agent_id))

    async def read_transcript(a: dict[str, Any]) -> str:
        return await orch.transcript(
            agent_id,
            str(a["agent"]),
            since=int(a.get("since") or 0),
            limit=int(a.get("limit") or 50),
        )

    async def send_to_agent(a: dict[str, Any]) -> str:
        child = await orch.send_to(agent_id, str(a["agent"]), str(a["text"]))
        return f"Sent to {texts.who(child)}; it is {child.state}."

    async def wait_for_agents(a: dict[str, Any]) -> str:
        return await orch.waits.wait(
            agent_id,
            [str(r) for r in a.get("agents") or []],
            timeout=float(a.get("timeout_seconds", 600)),
            mode=str(a.get("mode") or "all"),
            cap=wait_cap,
        )

    async def interrupt_agent(a: dict[str, Any]) -> str:
        child = await orch.interrupt(agent_id, str(a["agent"]))
        return f"Interrupted {texts.who(child)}; it is {child.state} and takes follow-ups."

    async def kill_agent(a: dict[str, Any]) -> str:
        child = await orch.kill(agent_id, str(a["agent"]))
        return f"Killed {texts.who(child)} and the agents it started; it is {child.state}."

    async def answer_request(a: dict[str, Any]) -> str:
        caller = await orch.agent(agent_id)
        ask = await orch.inbox.answer(
            str(a["request_id"]), str(a["answer"]), by=f"agent:{agent_id}", caller=caller
        )
        asker = await orch.agent(ask.agent_id)
        return f"Answered {asker.name}'s question {ask.id}; it goes on with your answer."

    async def diff_agent(a: dict[str, Any]) -> str:
        child = await orch.child(agent_id, str(a["agent"]))
        worktree = worktree_of(child)
        changes = await orch.runner.worktrees.diff(worktree)
        files = "\n".join(
            f"  {f.path}  " + ("binary" if f.added is None else f"+{f.added} -{f.removed}")
            for f in changes.files
        )
        patch = scrub_patch(changes.patch)
        if len(patch) > DIFF_CHARS:
            patch = patch[:DIFF_CHARS] + f"\n[cut at {DIFF_CHARS} characters]"
        head = f"{child.name} on {worktree.branch}, {len(changes.files)} file(s) changed"
        return f"{head}:\n{files}\n\n{patch}" if changes.files else f"{head}: none yet."

    async def merge_agent(a: dict[str, Any]) -> str:
        if set(a) - {"agent"}:  # a test command above all: never a model's to choose
            raise Refused(
                f"merge_agent takes only the agent, not {', '.join(sorted(set(a) - {'agent'}))}: "
                "the test a merge must pass is the repository's own (test in "
                ".agentdeck/merge.yaml on the target branch) or a person's "
                "(agentdeck merge ID --test); nothing was merged or run",
                hint="call merge_agent with the agent alone",
            )
        child = await orch.child(agent_id, str(a["agent"]))
        entry = await orch.runner.merge(child, by=f"agent:{agent_id}")
        text = f"{'Landed' if entry.landed else 'Refused'}: {entry.reason}"
        output = str(entry.outcome.get("test_output") or "")
        return text + (f"\n{output[-2000:]}" if output else "")

    async def ask_orchestrator(a: dict[str, Any]) -> str:
        return await orch.inbox.ask(
            agent_id,
            str(a.get("question") or ""),
            timeout=float(a.get("timeout_seconds", 1800)),
            request_id=a.get("request_id") or None,
        )

    async def notify_parent(a: dict[str, Any]) -> str:
        return await orch.inbox.notify_parent(agent_id, str(a["text"]))

    async def message_agent(a: dict[str, Any]) -> str:
        return await orch.inbox.message(agent_id, str(a["agent"]), str(a["text"]))

    return {
        "spawn_agent": spawn_agent,
        "list_agents": list_agents,
        "read_transcript": read_transcript,
        "send_to_agent": send_to_agent,
        "wait_for_agents": wait_for_agents,
        "interrupt_agent": interrupt_agent,
        "kill_agent": kill_agent,
        "answer_request": answer_request,
        "diff_agent": diff_agent,
        "merge_agent": merge_agent,
        "ask_orchestrator": ask_orchestrator,
        "notify_parent": notify_parent,
        "message_agent": message_agent,
        "remember": lambda a: remember(orch, agent_id, a),
    }


async def run(name: str, handler: Handler, args: dict[str, Any]) -> tuple[str, bool]:
    """The tool's text and whether it is an error; never raises but cancellation."""
    try:
        return await handler(args), False
    except AgentdeckError as exc:
        return (f"{exc.message} ({exc.hint})" if exc.hint else exc.message), True
    except Exception:
        logger.exception("deck tool %s failed", name)
        return f"{name} failed inside agentdeck; the deck's log has the details", True


async def call_tool(
    orch: ToolsHost,
    agent_id: str,
    name: str,
    args: dict[str, Any],
    *,
    wait_cap: float | None = None,
) -> tuple[str, bool]:
    """One tool call from outside the agent's own Claude Code (the API): the
    arguments are checked against the tool's schema first."""
    import jsonschema

    try:
        jsonschema.validate(instance=args, schema=SCHEMAS[name][1])
    except jsonschema.ValidationError as exc:
        return f"invalid arguments for {name}: {exc.message}", True
    return await run(name, handlers(orch, agent_id, wait_cap=wait_cap)[name], args)


def _guarded(name: str, handler: Handler) -> Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]:
    async def call(args: dict[str, Any]) -> dict[str, Any]:
        text, is_error = await run(name, handler, args)
        result: dict[str, Any] = {"content": [{"type": "text", "text": text}]}
        if is_error:
            result["is_error"] = True
        return result

    return call


def deck_server(orch: ToolsHost, agent: Agent) -> dict[str, Any]:
    """The ``deck`` server for ``agent``: the SDK config, plus Claude Code's
    timeout for one call of its tools (so a shorter MCP_TOOL_TIMEOUT in the
    environment does not cut a long wait)."""
    # Here, not at module level: the SDK (and all of mcp with it) is imported when a
    # session is given its tools, not with the deck (tests/runner/test_lazy_sdk.py).
    from claude_agent_sdk import SdkMcpTool

    table = handlers(orch, agent.id)

    def stopping() -> bool:
        session = orch.session(agent.id)
        return session is not None and session.unanswerable

    tools = [
        SdkMcpTool(
            name=name,
            description=SCHEMAS[name][0],
            input_schema=SCHEMAS[name][1],
            handler=held(stopping, _guarded(name, table[name])),
        )
        for name in tool_names(agent)
    ]
    return deck_config(orch.settings, tools)


def deck_config(settings: Settings, tools: list[SdkMcpTool[Any]]) -> dict[str, Any]:
    """The ``deck`` server's SDK config with these tools: ``spawn_config``'s, and
    the server's instance (which Claude Code's command line leaves out)."""
    from claude_agent_sdk import create_sdk_mcp_server

    server = create_sdk_mcp_server(SERVER, version=__version__, tools=tools)
    return {**spawn_config(settings), **server}
