"""Claude Code hook payloads: the verbatim samples and hypothesis strategies.

``SAMPLES`` are the stdin objects recorded in ``shared/claude-code-protocol.md``
§4.2, one per event that fired, plus Notification (installed, never seen
headless). ``hook_payloads()`` generates well-formed payloads for any event with
random field values; ``stdin_bytes()`` mixes those with everything a broken or
hostile stdin could hold. Reusable by any test of a hook consumer.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import strategies as st

SESSION = "dd55a02e-0c47-4d0e-9a1e-6a4c4d4b1f0e"
TRANSCRIPT = f"/root/.claude/projects/-work-demo/{SESSION}.jsonl"
CWD = "/work/demo"
COMMON: dict[str, Any] = {
    "session_id": SESSION,
    "transcript_path": TRANSCRIPT,
    "cwd": CWD,
    "prompt_id": "d8e3f59a-55aa-4b43-a3c1-06b3bb0e9d10",
    "permission_mode": "default",
}
TOOL_CALL = {"tool_name": "Bash", "tool_input": {"command": "echo hooked", "description": "echo"}}

# Per event, the extra fields of the recorded payloads (values verbatim where
# the document gives them).
_EXTRA: dict[str, dict[str, Any]] = {
    "SessionStart": {"source": "startup"},
    "UserPromptSubmit": {"prompt": "go hooks"},
    "PreToolUse": {**TOOL_CALL, "tool_use_id": "toolu_fake_438", "effort": {"level": "medium"}},
    "PermissionRequest": {
        **TOOL_CALL,
        "permission_suggestions": [
            {"type": "addRules", "rules": [{"toolName": "Bash"}], "behavior": "allow"}
        ],
    },
    "PostToolUse": {
        **TOOL_CALL,
        "tool_use_id": "toolu_fake_438",
        "tool_response": {"stdout": "hooked", "stderr": "", "interrupted": False},
        "duration_ms": 29,
    },
    "PostToolUseFailure": {
        "tool_name": "Bash",
        "tool_input": {"command": "false"},
        "tool_use_id": "toolu_fake_439",
        "error": "Exit code 1",
        "is_interrupt": False,
        "duration_ms": 10,
    },
    "PostToolBatch": {
        "tool_calls": [{**TOOL_CALL, "tool_use_id": "toolu_fake_438", "tool_response": "hooked"}]
    },
    "MessageDisplay": {
        "turn_id": "turn_1",
        "message_id": "msg_1",
        "index": 0,
        "final": True,
        "delta": "run",
    },
    "SubagentStart": {"agent_id": "a963e2b6bd6433730", "agent_type": "general-purpose"},
    "SubagentStop": {
        "agent_id": "a963e2b6bd6433730",
        "agent_type": "general-purpose",
        "stop_hook_active": False,
        "agent_transcript_path": f"/root/.claude/projects/-work-demo/{SESSION}/subagents/"
        "agent-a963e2b6bd6433730.jsonl",
        "last_assistant_message": "SUBAGENT-FINAL report",
        "background_tasks": [],
        "session_crons": [],
    },
    "Stop": {
        "stop_hook_active": False,
        "last_assistant_message": "all done",
        "background_tasks": [],
        "session_crons": [],
    },
    "PreCompact": {"trigger": "manual", "custom_instructions": None},
    "PostCompact": {
        "trigger": "manual",
        "compact_summary": "<summary>COMPACT-SUMMARY-TEXT</summary>",
    },
    "SessionEnd": {"reason": "other"},
    "Notification": {"message": "Claude needs your permission to use Bash"},
}

EVENT_NAMES = tuple(_EXTRA)
SAMPLES: dict[str, dict[str, Any]] = {
    name: {**COMMON, "hook_event_name": name, **extra} for name, extra in _EXTRA.items()
}


def sample(name: str, **changes: Any) -> dict[str, Any]:
    """A copy of the recorded payload of ``name`` with ``changes`` applied."""
    return {**json.loads(json.dumps(SAMPLES[name])), **changes}


# -- values ---------------------------------------------------------------------

texts = st.text(max_size=40)  # any code point but surrogates: real payloads are UTF-8
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    texts,
)
json_values = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(texts, inner, max_size=4)),
    max_leaves=20,
)
huge_texts = st.tuples(
    st.sampled_from('x\u00e9\u4e2d\U0001f600\n"\\'), st.integers(0, 300_000)
).map(lambda t: t[0] * t[1])


def _tool_inputs() -> st.SearchStrategy[dict[str, Any]]:
    return st.one_of(
        st.fixed_dictionaries({"command": texts}, optional={"description": texts}),
        st.fixed_dictionaries({"file_path": texts}, optional={"content": texts}),
        st.dictionaries(texts, json_values, max_size=4),
    )


def _field(value: Any) -> st.SearchStrategy[Any]:
    """A random value of the recorded value's kind, sometimes any JSON at all."""
    if isinstance(value, bool):
        kind: st.SearchStrategy[Any] = st.booleans()
    elif isinstance(value, int):
        kind = st.integers(min_value=0, max_value=2**40)
    elif isinstance(value, str):
        kind = st.one_of(texts, huge_texts)
    elif isinstance(value, dict):
        kind = st.dictionaries(texts, json_values, max_size=4)
    else:
        kind = st.lists(json_values, max_size=4)
    return st.one_of(kind, kind, kind, json_values)


@st.composite
def hook_payloads(draw: st.DrawFn, names: tuple[str, ...] = EVENT_NAMES) -> dict[str, Any]:
    """A well-formed payload: a known (or, rarely, future) event name, the
    common fields and the event's own, each with a random value."""
    name = draw(st.one_of(st.sampled_from(names), st.sampled_from(["FutureEvent", "Setup"])))
    base = SAMPLES.get(name, {**COMMON, "hook_event_name": name})
    payload: dict[str, Any] = {}
    for key, value in base.items():
        if key == "hook_event_name":
            payload[key] = name
        elif key == "tool_input":
            payload[key] = draw(_tool_inputs())
        elif draw(st.integers(0, 9)) > 0:  # sometimes a field is missing
            payload[key] = draw(_field(value))
    payload.update(draw(st.dictionaries(texts, json_values, max_size=2)))
    payload["hook_event_name"] = name
    return payload


# -- stdin ----------------------------------------------------------------------


def encode(payload: Any, *, indent: int | None = None, ascii_only: bool = True) -> bytes:
    return json.dumps(payload, indent=indent, ensure_ascii=ascii_only).encode("utf-8")


well_formed_stdin = st.builds(
    encode,
    hook_payloads(),
    indent=st.sampled_from([None, None, 2]),
    ascii_only=st.booleans(),
)


def _nested(depth: int) -> bytes:
    inner = b"[" * depth + b"]" * depth
    return b'{"hook_event_name":"PreToolUse","tool_input":' + inner + b"}"


malformed_stdin = st.one_of(
    st.binary(max_size=200),
    st.just(b""),
    st.sampled_from([b" ", b"\n", b"\r\n\t ", b"null", b"{", b"}", b"\xef\xbb\xbf{}"]),
    well_formed_stdin.flatmap(  # truncated JSON
        lambda b: st.integers(0, max(len(b) - 1, 0)).map(lambda n: b[:n])
    ),
    json_values.map(lambda v: encode([v])),  # valid JSON, not an object
    st.builds(encode, st.one_of(scalars, st.lists(json_values, max_size=3))),
    hook_payloads().map(  # an object, but no usable event name
        lambda p: encode({**p, "hook_event_name": None})
    ),
    st.dictionaries(texts, json_values, max_size=4).map(
        lambda d: encode({k: v for k, v in d.items() if k != "hook_event_name"})
    ),
    st.integers(1, 100_000).map(lambda n: b"[" * n),  # unbalanced nesting
    well_formed_stdin.map(lambda b: b.replace(b'"', b"\xff", 1)),  # invalid UTF-8
)

nested_stdin = st.integers(1, 3000).map(_nested)  # parses or not: deep nesting either way

stdin_bytes = st.one_of(well_formed_stdin, well_formed_stdin, malformed_stdin, nested_stdin)
