"""The real Claude Code CLI against the scripted model: tools, faults, follow-ups."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agentdeck.mockmodel import load_scenario, parse_scenario, write_workspace
from tests.support.mockmodel import CliRun, cli_env, run_claude, running_mock

pytestmark = [pytest.mark.cli, pytest.mark.anyio, pytest.mark.usefixtures("claude_cli")]

ACCEPT_EDITS = ["--permission-mode", "acceptEdits"]
ECHO = {"tool_use": {"name": "Bash", "input": {"command": "echo hi"}}}
TWO_STEP = [{"reply": [{"text": "Checking."}, ECHO]}, {"reply": [{"text": "All done."}]}]


@pytest.fixture
def dirs(tmp_path: Path) -> tuple[Path, Path]:
    home, work = tmp_path / "home", tmp_path / "work"
    work.mkdir()
    return home, work


def with_faults(*faults: dict[str, Any]) -> Any:
    return parse_scenario({"name": "faulty", "turns": TWO_STEP, "faults": list(faults)}, "f.yaml")


async def run_faulty(
    dirs: tuple[Path, Path], *faults: dict[str, Any], timeout: float = 60, **env: str
) -> tuple[CliRun, list[Any]]:
    home, work = dirs
    async with running_mock(with_faults(*faults)) as mm:
        run = await run_claude(
            ["-p", "go", *ACCEPT_EDITS],
            cwd=work,
            env=cli_env(home, mm.url_for("faulty"), **env),
            timeout=timeout,
        )
        return run, mm.requests


def assert_completed(run: CliRun, text: str) -> None:
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.result["is_error"] is False
    assert run.result["terminal_reason"] == "completed"
    assert run.result["result"] == text


async def test_demo_uses_write_read_edit_and_bash(dirs: tuple[Path, Path]) -> None:
    home, work = dirs
    async with running_mock("demo") as mm:
        run = await run_claude(
            ["-p", "tidy up my notes", *ACCEPT_EDITS],
            cwd=work,
            env=cli_env(home, mm.url_for("demo")),
        )
        requests = mm.requests
    assert_completed(run, load_scenario("demo").turns[-1].reply[-1].text)  # type: ignore[union-attr]
    assert run.result["total_cost_usd"] > 0
    tools = run.tool_uses()
    assert [t["name"] for t in tools] == ["Write", "Read", "Edit", "Bash"]
    # Relative paths in the scenario reach the CLI as absolute paths inside the cwd.
    assert tools[0]["input"]["file_path"] == str(work / "notes.md")
    assert (work / "notes.md").read_text() == "# Notes\n\n- Buy milk\n- Call Bob\n- Fix the bike\n"
    results = [
        block
        for line in run.of_type("user")
        for block in line["message"]["content"]
        if block.get("type") == "tool_result"
    ]
    assert "5 notes.md" in results[-1]["content"]
    assert not any(r.get("is_error") for r in results)
    assert [r.turn for r in requests] == [0, 1, 2, 3, 4]
    assert all(r.query == "beta=true" and r.stream for r in requests)


async def test_fix_test_runs_the_real_test(dirs: tuple[Path, Path]) -> None:
    home, work = dirs
    scenario = load_scenario("fix-test")
    write_workspace(scenario, work)
    async with running_mock(scenario) as mm:
        run = await run_claude(
            ["-p", "fix the failing test", *ACCEPT_EDITS, "--allowedTools", "Bash(python3:*)"],
            cwd=work,
            env=cli_env(home, mm.url),  # routed by `match`, not by URL
        )
        requests = mm.requests
    assert_completed(run, "Fixed: add() subtracted instead of adding. The test passes now.")
    assert [r.turn for r in requests] == [0, 1, 2, 3, 4]
    assert "return a + b" in (work / "calc.py").read_text()


async def test_429_is_retried(dirs: tuple[Path, Path]) -> None:
    run, requests = await run_faulty(dirs, {"on_request": 1, "http_status": 429, "retry_after": 0})
    assert_completed(run, "All done.")
    (retry,) = run.of_type("system", "api_retry")
    assert (retry["error_status"], retry["error"]) == (429, "rate_limit")
    assert [(r.turn, r.fault) for r in requests] == [(0, "http_status=429"), (0, None), (1, None)]


async def test_persistent_500_ends_in_api_error(dirs: tuple[Path, Path]) -> None:
    run, requests = await run_faulty(dirs, {"on_request": 1, "always": True, "http_status": 500})
    assert run.returncode == 1
    assert run.result["is_error"] is True
    assert run.result["subtype"] == "success"  # sic: judge by is_error/terminal_reason
    assert run.result["terminal_reason"] == "api_error"
    assert run.result["api_error_status"] == 500
    assert run.result["result"].startswith("API Error: 500 mock error 500")
    assert len(requests) == 3  # CLAUDE_CODE_MAX_RETRIES=2
    assert len(run.of_type("system", "api_retry")) == 2


async def test_malformed_sse_is_re_requested_without_streaming(dirs: tuple[Path, Path]) -> None:
    run, requests = await run_faulty(dirs, {"on_request": 1, "malformed_sse": True})
    assert_completed(run, "All done.")
    assert "Could not parse message into JSON" in run.stderr
    assert [(r.turn, r.stream) for r in requests] == [(0, True), (0, False), (1, True)]


async def test_disconnect_mid_stream_is_retried(dirs: tuple[Path, Path]) -> None:
    run, requests = await run_faulty(dirs, {"on_request": 1, "disconnect": True})
    assert_completed(run, "All done.")
    (retry,) = run.of_type("system", "api_retry")
    assert (retry["error_status"], retry["error"]) == (None, "unknown")
    assert [r.fault for r in requests] == ["disconnect", None, None]


async def test_sse_error_event_is_retried_silently(dirs: tuple[Path, Path]) -> None:
    run, requests = await run_faulty(dirs, {"on_request": 1, "sse_error": "overloaded_error"})
    assert_completed(run, "All done.")
    assert [r.fault for r in requests] == ["sse_error=overloaded_error", None, None]


async def test_hang_times_out_into_an_api_error(dirs: tuple[Path, Path]) -> None:
    run, requests = await run_faulty(
        dirs, {"on_request": 1, "always": True, "hang": True}, timeout=45, API_TIMEOUT_MS="2000"
    )
    # Each attempt times out after API_TIMEOUT_MS; retries are bounded by MAX_RETRIES=2.
    assert run.returncode == 1
    assert run.result["is_error"] is True
    assert run.result["terminal_reason"] == "api_error"
    assert run.result["api_error_status"] is None
    assert run.result["result"].startswith("Request timed out.")
    assert len(requests) == 3
    assert run.elapsed < 30


async def test_follow_up_carries_the_earlier_conversation(dirs: tuple[Path, Path]) -> None:
    home, work = dirs
    lines = [
        {"type": "user", "message": {"role": "user", "content": text}}
        for text in ("hello", "say that again")
    ]
    stdin = "".join(json.dumps(line) + "\n" for line in lines).encode()
    async with running_mock("chat") as mm:
        run = await run_claude(
            ["-p", "--input-format", "stream-json"],
            cwd=work,
            env=cli_env(home, mm.url_for("chat")),
            stdin=stdin,
        )
        requests = mm.requests
    assert run.returncode == 0, run.stderr[-2000:]
    assert [r["result"] for r in run.results] == [
        "Hello! I am the scripted model. Ask me anything.",
        "Hello again! This is my answer to your follow-up.",
    ]
    assert [r.turn for r in requests] == [0, 1]
    roles = [m["role"] for m in requests[1].body["messages"] if m["role"] != "system"]
    assert roles == ["user", "assistant", "user"]
    assert "Ask me anything" in json.dumps(requests[1].body["messages"])


async def test_resume_on_a_fresh_server_continues_the_script(dirs: tuple[Path, Path]) -> None:
    home, work = dirs
    async with running_mock("chat") as first:
        run = await run_claude(["-p", "hello"], cwd=work, env=cli_env(home, first.url_for("chat")))
    session = run.result["session_id"]
    async with running_mock("chat") as second:  # no memory of the first run
        resumed = await run_claude(
            ["-p", "again please", "--resume", session],
            cwd=work,
            env=cli_env(home, second.url_for("chat")),
        )
        (request,) = second.requests
    assert resumed.result["result"] == "Hello again! This is my answer to your follow-up."
    assert request.turn == 1


@pytest.mark.parametrize(
    ("name", "allow", "requests"),
    [("three-turns", [], 3), ("big-output", ["Bash(python3:*)"], 2), ("slow-stream", [], 1)],
)
async def test_builtin_scenarios_complete(
    dirs: tuple[Path, Path], name: str, allow: list[str], requests: int
) -> None:
    home, work = dirs
    scenario = load_scenario(name)
    async with running_mock(scenario) as mm:
        args = ["-p", "go", *ACCEPT_EDITS, *(["--allowedTools", *allow] if allow else [])]
        run = await run_claude(args, cwd=work, env=cli_env(home, mm.url_for(name)))
        seen = mm.requests
    last = scenario.turns[-1].reply[-1]
    assert_completed(run, last.text)  # type: ignore[union-attr]
    assert [r.turn for r in seen] == list(range(requests))
    assert not [p for p in run.of_type("result") if p["permission_denials"]]


async def test_subagent_plays_its_own_conversation(dirs: tuple[Path, Path]) -> None:
    home, work = dirs
    delegate = {
        "name": "Agent",
        "input": {
            "description": "review",
            "prompt": "SUBTASK: review it",
            "subagent_type": "reviewer",
            "run_in_background": False,
        },
    }
    scenario = parse_scenario(
        {
            "name": "crew",
            "turns": [
                {"reply": [{"thinking": "I should delegate."}, {"tool_use": delegate}]},
                {"reply": [{"text": "parent done"}]},
            ],
            "conversations": [
                {
                    "when": {"system_prompt_contains": "REVIEWER-SYSPROMPT"},
                    "turns": [{"reply": [ECHO]}, {"reply": [{"text": "SUBAGENT-FINAL report"}]}],
                }
            ],
        },
        "crew.yaml",
    )
    agents = {"reviewer": {"description": "Reviews", "prompt": "You are REVIEWER-SYSPROMPT."}}
    async with running_mock(scenario) as mm:
        run = await run_claude(
            ["-p", "go", *ACCEPT_EDITS, "--agents", json.dumps(agents)],
            cwd=work,
            env=cli_env(home, mm.url_for("crew")),
        )
        requests = mm.requests
    assert_completed(run, "parent done")
    assert [(r.conversation, r.turn) for r in requests] == [(None, 0), (0, 0), (0, 1), (None, 1)]
    assert "SUBAGENT-FINAL report" in json.dumps(requests[-1].body["messages"])
    assert run.of_type("assistant")[0]["message"]["content"][0]["type"] == "thinking"
