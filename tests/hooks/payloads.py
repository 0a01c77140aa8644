"""Claude Code hook payloads: the verbatim samples and hypothesis strategies.

``SAMPLES`` are the stdin objects recorded in ``shared/claude-code-protocol.md``
§4.2, one per event that fired, plus Notification (installed, never seen
headless). ``hook_payloads()`` generates well-formed payloads for any event with
random field values; ``stdin_bytes()`` mixes those with everything a broken or
hostile stdin could hold. Reusable by any test of a hook consumer.
"""

from __future__ import annotations

import json
import random
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

# Strings that have broken JSON handling somewhere: escapes, separators, astral
# and private-use code points, line separators JavaScript treats as newlines.
TRICKY = [
    "", "x", "é", "中文", "😀", "\n", "\r\n", '"', "\\", "\u2028\u2029", "\x00", "\x1f",
    "\ufeff", "\U0010ffff", "\ue000", "</script>", '{"a":1}', "\\u0000", "NaN", "a" * 200,
]  # fmt: skip
texts = st.one_of(st.sampled_from(TRICKY), st.text(max_size=12))  # no surrogates: stdin is UTF-8
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    texts,
)
json_values = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(texts, inner, max_size=3)),
    max_leaves=6,
)
huge_texts = st.tuples(
    st.sampled_from('x\u00e9\u4e2d\U0001f600\n"\\'), st.integers(0, 1_000_000)
).map(lambda t: t[0] * t[1])


def _field(value: Any) -> st.SearchStrategy[Any]:
    """A random value of the recorded value's kind, sometimes any JSON at all."""
    if isinstance(value, bool):
        kind: st.SearchStrategy[Any] = st.booleans()
    elif isinstance(value, int):
        kind = st.integers(min_value=0, max_value=2**40)
    elif isinstance(value, str):
        kind = texts
    elif isinstance(value, dict):
        kind = st.dictionaries(texts, json_values, max_size=3)
    else:
        kind = st.lists(json_values, max_size=3)
    return st.one_of(kind, kind, kind, json_values)


@st.composite
def hook_payloads(draw: st.DrawFn, names: tuple[str, ...] = EVENT_NAMES) -> dict[str, Any]:
    """A well-formed payload: a known (or, rarely, future) event name, the
    common fields and the event's own, each with a random value. Shrinks well;
    ``random_payloads`` is the fast one for volume."""
    name = draw(st.one_of(st.sampled_from(names), st.sampled_from(["FutureEvent", "Setup"])))
    base = SAMPLES.get(name, {**COMMON, "hook_event_name": name})
    payload: dict[str, Any] = {}
    for key, value in base.items():
        if key != "hook_event_name" and draw(st.integers(0, 9)) > 0:  # sometimes missing
            payload[key] = draw(_field(value))
    payload.update(draw(st.dictionaries(texts, json_values, max_size=2)))
    if draw(st.integers(0, 19)) == 0:  # now and then a tool output of up to a few MB
        payload[draw(st.sampled_from(sorted(payload) or ["tool_response"]))] = draw(huge_texts)
    payload["hook_event_name"] = name
    return payload


# -- fast, seeded generation ------------------------------------------------------
# Hypothesis draws cost about a millisecond each here, and a structured payload
# takes dozens. For 10,000 examples, most are built from one drawn seed with
# ``random.Random``: reproducible, not shrinkable.


def _code_point(rnd: random.Random) -> str:
    r = rnd.random()
    if r < 0.6:
        return chr(rnd.randint(0x20, 0x7E))
    if r < 0.7:
        return chr(rnd.randint(0, 0x1F))
    cp = rnd.randint(0x80, 0x10FFFF)
    return chr(0xFFFD if 0xD800 <= cp <= 0xDFFF else cp)


def _text(rnd: random.Random) -> str:
    if rnd.random() < 0.3:
        return rnd.choice(TRICKY)
    return "".join(_code_point(rnd) for _ in range(rnd.randint(0, 24)))


def _value(rnd: random.Random, depth: int = 0) -> Any:
    r = rnd.random()
    if depth < 4 and r < 0.15:
        return [_value(rnd, depth + 1) for _ in range(rnd.randint(0, 3))]
    if depth < 4 and r < 0.3:
        return {_text(rnd): _value(rnd, depth + 1) for _ in range(rnd.randint(0, 3))}
    return rnd.choice(
        [
            None,
            rnd.random() < 0.5,
            rnd.randint(-(2**70), 2**70),
            rnd.uniform(-1e300, 1e300),
            rnd.randint(-5, 5),
            _text(rnd),
            _text(rnd),
        ]
    )


def _like(rnd: random.Random, value: Any) -> Any:
    if rnd.random() < 0.15:
        return _value(rnd)
    if isinstance(value, bool):
        return rnd.random() < 0.5
    if isinstance(value, int):
        return rnd.randint(0, 2**40)
    if isinstance(value, str):
        return _text(rnd)
    if isinstance(value, dict):
        return {k: _like(rnd, v) for k, v in value.items()} | {
            _text(rnd): _value(rnd) for _ in range(rnd.randint(0, 2))
        }
    if isinstance(value, list):
        return [_like(rnd, value[0]) if value else _value(rnd) for _ in range(rnd.randint(0, 3))]
    return _value(rnd)


def random_payload(rnd: random.Random, names: tuple[str, ...] = EVENT_NAMES) -> dict[str, Any]:
    """Like ``hook_payloads``, from a ``random.Random``."""
    name = rnd.choice([*names, "FutureEvent"])
    base = SAMPLES.get(name, {**COMMON, "hook_event_name": name})
    payload = {k: _like(rnd, v) for k, v in base.items() if rnd.random() < 0.9}
    payload.update({_text(rnd): _value(rnd) for _ in range(rnd.randint(0, 2))})
    if rnd.random() < 0.01:
        payload[rnd.choice(sorted(payload) or ["x"])] = rnd.choice("x€\n😀") * rnd.randint(
            1000, 500_000
        )
    payload["hook_event_name"] = name
    return payload


def _mutate(rnd: random.Random, data: bytes) -> bytes:
    """Flip, drop or insert a few bytes."""
    buf = bytearray(data)
    for _ in range(rnd.randint(1, 4)):
        at = rnd.randint(0, len(buf))
        op = rnd.random()
        if op < 0.4 and at < len(buf):
            buf[at] = rnd.randint(0x20, 0x7E) if rnd.random() < 0.8 else rnd.randint(0, 255)
        elif op < 0.7:
            del buf[at : at + rnd.randint(1, 3)]
        else:
            buf[at:at] = bytes(
                rnd.choice(b'{}[]",:\\ \n\x00\xff') for _ in range(rnd.randint(1, 3))
            )
    return bytes(buf)


def random_stdin(rnd: random.Random) -> bytes:
    """What might arrive on the hook's stdin: mostly payloads, often broken."""
    payload = random_payload(rnd)
    good = encode(payload, indent=rnd.choice([None, None, 2]), ascii_only=rnd.random() < 0.5)
    r = rnd.random()
    if r < 0.55:
        return rnd.choice([b"", b" ", b"\n", b"\r\n\t"]) + good + rnd.choice([b"", b"\n", b" \r\n"])
    if r < 0.65:
        return good[: rnd.randint(0, max(len(good) - 1, 0))]  # truncated
    if r < 0.8:
        return _mutate(rnd, good)
    if r < 0.85:
        return encode(rnd.choice([[payload], payload["hook_event_name"], None, 1.5, []]))
    if r < 0.9:
        payload["hook_event_name"] = rnd.choice([None, "", 3, ["PreToolUse"]])
        return encode(payload)
    if r < 0.95:
        return _nested(rnd.randint(1, 3000))
    return rnd.randbytes(rnd.randint(0, 200))


# -- stdin ----------------------------------------------------------------------


def encode(payload: Any, *, indent: int | None = None, ascii_only: bool = True) -> bytes:
    return json.dumps(payload, indent=indent, ensure_ascii=ascii_only).encode("utf-8")


def _nested(depth: int) -> bytes:
    """A payload whose tool input nests ``depth`` lists: parses or not, deep either way."""
    inner = b"[" * depth + b"]" * depth
    return b'{"hook_event_name":"PreToolUse","tool_input":' + inner + b"}"


well_formed_stdin = st.builds(
    encode,
    hook_payloads(),
    indent=st.sampled_from([None, None, 2]),
    ascii_only=st.booleans(),
)

malformed_stdin = st.one_of(
    st.binary(max_size=200),
    st.sampled_from([b"", b" ", b"\n", b"\r\n\t ", b"null", b"{", b"}", b"\xef\xbb\xbf{}"]),
    well_formed_stdin.flatmap(  # truncated JSON
        lambda b: st.integers(0, max(len(b) - 1, 0)).map(lambda n: b[:n])
    ),
    st.builds(encode, st.one_of(scalars, st.lists(json_values, max_size=3))),  # not an object
    hook_payloads().map(lambda p: encode({**p, "hook_event_name": None})),  # no event name
    st.integers(1, 100_000).map(lambda n: b"[" * n),  # unbalanced nesting
    well_formed_stdin.map(lambda b: b.replace(b'"', b"\xff", 1)),  # invalid UTF-8
)

random_stdins = st.integers(0, 2**64 - 1).map(lambda seed: random_stdin(random.Random(seed)))

# Every kind of stdin above, cheaply: for volume.
stdin_bytes = random_stdins


def nesting(value: Any) -> int:
    """How deep lists and objects nest in ``value`` (without recursing)."""
    deepest, todo = 0, [(value, 1)]
    while todo:
        item, level = todo.pop()
        if isinstance(item, dict | list):
            deepest = max(deepest, level)
            todo.extend((v, level + 1) for v in (item.values() if isinstance(item, dict) else item))
    return deepest
