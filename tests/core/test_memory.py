"""Memory's pure logic: observations, token-free summaries, their text, the context builder."""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentdeck.core.memory import (
    CONTEXT_HEADING,
    EXCERPT_CHARS,
    MAX_COMMANDS,
    MAX_ERRORS,
    MAX_FILES,
    NOTABLE_HEADING,
    Observation,
    SessionSummary,
    build_context,
    estimate_tokens,
    files_of,
    make_observation,
    output_text,
    relative_path,
    render_summary,
    summarize_session,
    summary_title,
)

PROJECT = "/work/repo"
NOW = 1_700_000_000.0
HOUR = 3600.0
KEY = "sk-ant-api03-" + "A1b2C3d4" * 10


def observe(tool: str = "Bash", tool_input: Any = None, output: Any = "", **kw: Any) -> Observation:
    args: dict[str, Any] = {
        "tool": tool,
        "tool_input": {"command": "true"} if tool_input is None else tool_input,
        "output": output,
        "is_error": False,
        "project": PROJECT,
        "session_id": "s1",
        "agent_id": None,
        "ts": NOW,
    }
    return make_observation(**(args | kw))


def obs(tool: str = "Bash", *, ts: float = NOW, session: str = "s1", **kw: Any) -> Observation:
    fields: dict[str, Any] = {
        "id": f"ob{ts}",
        "project": PROJECT,
        "session_id": session,
        "agent_id": None,
        "ts": ts,
        "tool": tool,
        "input_summary": f"{tool}(x)",
        "output_excerpt": "",
    }
    return Observation(**(fields | kw))


def summary(session: str = "s1", *, ts: float = NOW - HOUR, **kw: Any) -> SessionSummary:
    fields: dict[str, Any] = {
        "id": f"su{session}",
        "project": PROJECT,
        "session_id": session,
        "agent_id": None,
        "ts": ts,
    }
    return SessionSummary(**(fields | kw))


def summarize(observations: list[Observation], **kw: Any) -> SessionSummary:
    args: dict[str, Any] = {
        "final_message": "",
        "request": "",
        "project": PROJECT,
        "session_id": "s1",
        "agent_id": "a1",
        "ts": NOW,
    }
    return summarize_session(observations, **(args | kw))


# -- observations -------------------------------------------------------------------------------


def test_a_bash_call_becomes_a_scrubbed_observation() -> None:
    ob = observe(
        tool_input={"command": f"ANTHROPIC_API_KEY={KEY} pytest -x", "description": "test"},
        output={"stdout": f"1 failed <private>my diary</private>\nkey {KEY}", "stderr": "warn"},
        is_error=True,
        agent_id="a1",
    )
    assert ob.id.startswith("ob") and ob.tool == "Bash" and ob.is_error and ob.agent_id == "a1"
    assert ob.input_summary == "Bash(ANTHROPIC_API_KEY=[REDACTED:anthropic-key] pytest -x)"
    assert ob.output_excerpt == "1 failed \nkey [REDACTED:anthropic-key]\nwarn"
    assert ob.files == ()
    assert observe(memory_id="ob123").id == "ob123"


def test_file_tools_name_their_files_relative_to_the_project() -> None:
    read = observe(
        "Read",
        {"file_path": f"{PROJECT}/src/app.py"},
        {"type": "text", "file": {"filePath": f"{PROJECT}/src/app.py", "content": "print(1)"}},
    )
    assert read.files == ("src/app.py",) and read.output_excerpt == "print(1)"
    assert read.input_summary == f"Read({PROJECT}/src/app.py)"
    grep = observe("Grep", {"pattern": "TODO", "path": f"{PROJECT}/src/../tests"})
    assert grep.files == ("tests",)
    notebook = observe("NotebookEdit", {"notebook_path": "/elsewhere/n.ipynb"})
    assert notebook.files == ("/elsewhere/n.ipynb",)


@pytest.mark.parametrize(
    ("path", "project", "expected"),
    [
        ("/work/repo/a.py", "/work/repo", "a.py"),
        ("/work/repo/a.py", "/work/repo/", "a.py"),
        ("/work/repo", "/work/repo", "."),
        ("/work/repository/a.py", "/work/repo", "/work/repository/a.py"),
        ("/work/repo/src/../a.py", "/work/repo", "a.py"),
        ("./src/a.py", "/work/repo", "src/a.py"),
        ("/etc/passwd", "", "/etc/passwd"),
    ],
)
def test_relative_path(path: str, project: str, expected: str) -> None:
    assert relative_path(path, project) == expected


def test_files_are_named_once_and_blank_ones_ignored() -> None:
    same = {"file_path": "/work/repo/a.py", "path": "/work/repo/./a.py", "notebook_path": " "}
    assert files_of(same, PROJECT) == ("a.py",)


@pytest.mark.parametrize(
    ("output", "expected"),
    [
        (None, ""),
        ("plain", "plain"),
        ({"stdout": "out", "stderr": "", "interrupted": False}, "out"),
        ({"stdout": "", "stderr": "boom", "interrupted": True}, "boom\n[interrupted]"),
        ({"type": "create", "filePath": "/a", "content": "new file"}, "new file"),
        (
            {
                "filePath": "/a.py",
                "oldString": "x",
                "newString": "y",
                "originalFile": "THE WHOLE FILE",
                "structuredPatch": [{"oldStart": 1, "lines": ["-x = 1", "+x = 2"]}],
            },
            "-x = 1\n+x = 2",
        ),
        ({"filenames": ["a.py", "b.py"], "numFiles": 2, "truncated": False}, "a.py\nb.py"),
        ({"mode": "content", "content": "a.py:1:TODO", "numLines": 1}, "a.py:1:TODO"),
        ({"url": "https://x", "code": 200, "result": "page text"}, "page text"),
        (
            [{"type": "text", "text": "one"}, {"type": "image", "source": {}}, "two"],
            "one\n[image]\ntwo",
        ),
        ([{"type": "tool_result", "content": [{"type": "text", "text": "inner"}]}], "inner"),
        ({"content": [{"type": "text", "text": "agent report"}], "totalTokens": 5}, "agent report"),
        ({"oldTodos": [], "newTodos": []}, '{"oldTodos": [], "newTodos": []}'),
        (42, "42"),
    ],
)
def test_tool_outputs_read_as_text(output: Any, expected: str) -> None:
    assert output_text(output) == expected


def test_a_long_output_keeps_its_head_and_tail() -> None:
    text = "\n".join(f"line {i}" for i in range(1000))
    ob = observe(output=text)
    assert len(ob.output_excerpt) <= EXCERPT_CHARS
    assert ob.output_excerpt.startswith("line 0\nline 1")
    assert ob.output_excerpt.endswith("line 999")
    assert "\n…\n" in ob.output_excerpt


def test_a_huge_output_is_scrubbed_at_both_ends() -> None:
    text = f"token={KEY}\n" + "filler " * 500_000 + f"\nlast {KEY}"
    ob = observe(output=text)
    assert KEY not in ob.output_excerpt and len(ob.output_excerpt) <= EXCERPT_CHARS
    assert ob.output_excerpt.startswith("token=[REDACTED:anthropic-key]")
    assert ob.output_excerpt.endswith("last [REDACTED:anthropic-key]")


@pytest.mark.parametrize("opened_at", [1_000, 160_000, 240_000, 299_000])
def test_a_private_block_of_a_huge_output_never_survives_the_window(opened_at: int) -> None:
    # The middle of a huge output is left out; a <private> opened there still hides
    # everything up to its </private> in the kept tail (and one in the head to its end).
    size = 300_000
    text = ("x " * size)[:size]
    text = text[:opened_at] + " <private> " + text[opened_at:-2_000] + " TOPSECRET </private> end"
    ob = observe(output=text)
    assert "TOPSECRET" not in ob.output_excerpt and "private>" not in ob.output_excerpt
    assert ob.output_excerpt.endswith("end")


def test_an_unclosed_private_block_in_a_huge_output_hides_the_rest() -> None:
    text = "head " * 50_000 + "<private> " + "diary TOPSECRET " * 20_000
    ob = observe(output=text)
    assert "TOPSECRET" not in ob.output_excerpt and "diary" not in ob.output_excerpt
    assert ob.output_excerpt.startswith("head head")


@pytest.mark.parametrize(
    "command",
    [
        "PGPASSWORD=hunter2 psql -h db -c 'select 1'",
        "export MYSQL_PWD=hunter2 && mysql app",
        'curl -H "X-API-Key: hunter2" https://api.example.com/v1',
        "mysql -uroot -phunter2 app",
        "docker login -u ci -p hunter2 registry.example.com",
        "sshpass -p hunter2 ssh deploy@host",
        "printf 'machine h login u password hunter2' > ~/.netrc",
    ],
)
def test_a_command_line_secret_stays_out_of_the_input_summary(command: str) -> None:
    ob = observe(tool_input={"command": command}, output=f"ran: {command}")
    assert "hunter2" not in ob.input_summary and "hunter2" not in ob.output_excerpt
    assert "[REDACTED:" in ob.input_summary and ob.input_summary.startswith("Bash(")


def test_an_input_that_is_not_a_dict_is_kept_not_lost() -> None:
    ob = observe("Odd", ["a", f"--token={KEY}"])
    assert ob.input_summary == 'Odd({"input": ["a", "--token=[REDACTED:anthropic-key]"]})'
    assert ob.files == ()


def test_secret_keys_of_the_input_are_redacted_whole() -> None:
    ob = observe("mcp__db__query", {"sql": "select 1", "password": "hunter2"})
    assert "hunter2" not in ob.input_summary and "[REDACTED:assignment]" in ob.input_summary


# -- summaries ----------------------------------------------------------------------------------


def test_a_summary_lists_changes_commands_and_errors_in_order() -> None:
    observations = [
        obs("Edit", ts=NOW + 3, files=("b.py",)),
        obs("Read", ts=NOW + 1, files=("r.py",)),
        obs("Write", ts=NOW + 2, files=("a.py",)),
        obs("Edit", ts=NOW + 4, files=("a.py",)),
        obs("Edit", ts=NOW + 5, files=("failed.py",), is_error=True, output_excerpt="no match"),
        obs("Bash", ts=NOW + 6, input_summary="Bash(pytest -x)"),
        obs(
            "Bash",
            ts=NOW + 7,
            input_summary="Bash(pytest -x)",
            is_error=True,
            output_excerpt="\n  FAILED test_a.py::t - assert 1 == 2\nmore",
        ),
        obs("Bash", ts=NOW + 8, input_summary="Bash(git diff)"),
    ]
    s = summarize(observations, final_message="Fixed it.", request="Fix test_a")
    assert s.id.startswith("su") and s.agent_id == "a1" and s.session_id == "s1"
    assert s.files_changed == ("a.py", "b.py")  # first seen; reads and failed edits left out
    assert s.commands == ("pytest -x", "git diff")
    assert s.errors == (
        "Edit(x): no match",
        "Bash(pytest -x): FAILED test_a.py::t - assert 1 == 2",
    )
    assert s.final_message == "Fixed it." and s.request == "Fix test_a"


def test_a_summary_is_capped() -> None:
    observations = [obs("Write", ts=NOW + i, files=(f"f{i}.py",)) for i in range(50)]
    observations += [obs("Bash", ts=NOW + i, input_summary=f"Bash(cmd {i})") for i in range(50)]
    observations += [
        obs("Bash", ts=NOW + i, is_error=True, output_excerpt=f"error {i}") for i in range(50)
    ]
    long = "word " * 2000
    s = summarize(observations, final_message=long, request=long)
    assert len(s.files_changed) == MAX_FILES and s.files_changed[0] == "f0.py"
    assert len(s.commands) == MAX_COMMANDS
    assert len(s.errors) == MAX_ERRORS
    assert len(s.final_message) <= 1500 and len(s.request) <= 300


def test_a_summary_is_scrubbed() -> None:
    s = summarize(
        [],
        final_message=f"Done. The key was {KEY}.<private>notes</private>",
        request="Use DB_PASSWORD=hunter2 <private>why</private>",
    )
    assert KEY not in s.final_message and "notes" not in s.final_message
    assert s.request == "Use DB_PASSWORD=[REDACTED:assignment]"
    assert summarize([], request="   ").request == ""


def test_a_summary_reads_with_its_title_first() -> None:
    s = summary(
        request="Fix the flaky test\nin test_retry.py",
        final_message="The backoff used a 0.1s timeout.",
        files_changed=("src/retry.py",),
        commands=("pytest -x",),
        errors=("Bash(pytest -x): FAILED",),
    )
    text = render_summary(s)
    assert text.splitlines()[0] == "Fix the flaky test"
    assert "Outcome: The backoff" in text and "Files changed:\n- src/retry.py" in text
    assert "Commands run:\n- pytest -x" in text and "Errors met:\n- Bash(pytest -x): FAILED" in text
    assert summary_title(summary(final_message="\n\nAll done.\nDetails")) == "All done."
    assert summary_title(summary()) == "a session"


# -- the context --------------------------------------------------------------------------------


def test_tokens_are_estimated_conservatively() -> None:
    assert estimate_tokens("") == 0
    assert estimate_tokens("abc") == 1
    assert estimate_tokens("a" * 35) == 10 and estimate_tokens("a" * 36) == 11


def test_nothing_to_tell_is_the_empty_string() -> None:
    assert build_context([], [], budget_tokens=1500, project=PROJECT, now=NOW) == ""
    only_reads = [obs("Read", files=("a.py",))]
    assert build_context([], only_reads, budget_tokens=1500, project=PROJECT, now=NOW) == ""
    some = [summary(final_message="done")]
    assert build_context(some, [], budget_tokens=0, project=PROJECT, now=NOW) == ""


def test_the_context_tells_the_newest_sessions_first_then_what_no_summary_covers() -> None:
    summaries = [
        summary("old", ts=NOW - 3 * 24 * HOUR, request="Add the parser"),
        summary("new", ts=NOW - 2 * HOUR, request="Fix the flaky test", commands=("pytest -x",)),
    ]
    observations = [
        obs("Bash", session="new", is_error=True, output_excerpt="covered error"),
        obs("Bash", ts=NOW - 60, session="live", is_error=True, output_excerpt="E boom\nx"),
        obs("Bash", ts=NOW - 90, session="live", is_error=True, output_excerpt="E boom\nx"),
        obs("Edit", ts=NOW - 120, session="live", files=("src/a.py",)),
        obs("Read", ts=NOW - 30, session="live", files=("src/b.py",)),
    ]
    out = build_context(summaries, observations, budget_tokens=1500, project=PROJECT, now=NOW)
    assert out.splitlines() == [
        CONTEXT_HEADING,
        "- Session 2h ago: Fix the flaky test",
        "  Commands: pytest -x",
        "- Session 3d ago: Add the parser",
        NOTABLE_HEADING,
        "- 1m ago: Bash(x) failed: E boom",
        "- 2m ago: changed src/a.py",
    ]
    assert "covered error" not in out and "src/b.py" not in out
    assert estimate_tokens(out) <= 1500


def test_other_projects_are_not_told() -> None:
    here = summary("a", request="here", project=PROJECT + "/")
    there = summary("b", request="there", project="/work/other")
    out = build_context([here, there], [], budget_tokens=1500, project=PROJECT, now=NOW)
    assert "here" in out and "there" not in out


def test_a_summary_too_big_for_the_budget_is_told_by_its_first_line() -> None:
    big = summary(request="Refactor", final_message="x " * 2000, files_changed=("a.py",) * 30)
    full = build_context([big], [], budget_tokens=10_000, project=PROJECT, now=NOW)
    assert "Outcome:" in full
    budget = estimate_tokens(CONTEXT_HEADING + "\n- Session 1h ago: Refactor")
    small = build_context([big], [], budget_tokens=budget, project=PROJECT, now=NOW)
    assert small == CONTEXT_HEADING + "\n- Session 1h ago: Refactor"


def test_a_negative_budget_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="budget_tokens must be >= 0"):
        build_context([], [], budget_tokens=-1, project=PROJECT, now=NOW)


texts = st.text(max_size=300)
summaries_st = st.builds(
    summary,
    st.sampled_from(["s1", "s2", "s3", "s4"]),
    ts=st.floats(NOW - 1e7, NOW + 100),
    request=texts,
    final_message=texts,
    files_changed=st.lists(texts, max_size=5).map(tuple),
    commands=st.lists(texts, max_size=5).map(tuple),
    errors=st.lists(texts, max_size=5).map(tuple),
    model_summary=st.none() | texts,
)
observations_st = st.builds(
    obs,
    st.sampled_from(["Bash", "Edit", "Write", "Read"]),
    ts=st.floats(NOW - 1e7, NOW + 100),
    session=st.sampled_from(["s1", "s5", "s6"]),
    is_error=st.booleans(),
    output_excerpt=texts,
    files=st.lists(texts, max_size=3).map(tuple),
    input_summary=texts,
)


@given(
    st.lists(summaries_st, max_size=8),
    st.lists(observations_st, max_size=20),
    st.integers(0, 3000),
)
def test_the_budget_always_holds(
    summaries: list[SessionSummary], observations: list[Observation], budget: int
) -> None:
    out = build_context(summaries, observations, budget_tokens=budget, project=PROJECT, now=NOW)
    assert estimate_tokens(out) <= budget
    assert out == "" or out.startswith(CONTEXT_HEADING + "\n")
    assert math.ceil(len(out) / 3.5) == estimate_tokens(out)
