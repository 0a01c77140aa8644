"""Under the default profile an agent is asked before it writes anything a later
session, tool or merge obeys without asking: the same paths the merge queue keeps
for a person (``GUARDED_PATHS``). Before, `.agentdeck/*.yaml` was written unasked,
and a project template could name that file as its profile (found in review)."""

from __future__ import annotations

import pytest

from agentdeck.core.merge_queue import GUARDED_PATHS
from agentdeck.core.policy import Decision, decide
from agentdeck.governance.profiles import load_profile

WS = "/work/ws"
HOME = "/home/u"


def target(guarded: str) -> str:
    return f"{WS}/{guarded}loose.yaml" if guarded.endswith("/") else f"{WS}/{guarded}"


@pytest.mark.parametrize("guarded", GUARDED_PATHS)
@pytest.mark.parametrize("tool", ["Edit", "Write", "MultiEdit"])
def test_default_asks_before_a_write_to_what_later_sessions_obey(guarded: str, tool: str) -> None:
    verdict = decide(
        load_profile("default"),
        tool,
        {"file_path": target(guarded), "content": "x", "old_string": "a", "new_string": "b"},
        workspace=WS,
        home=HOME,
    )
    assert verdict.decision is Decision.ASK, (guarded, tool, verdict)


def test_an_ordinary_file_is_still_written_unasked() -> None:
    for path in ("src/app.py", ".agentdeckrc.md", "docs/.mcp.json.md", ".vscode-notes"):
        verdict = decide(
            load_profile("default"), "Edit", {"file_path": f"{WS}/{path}"}, workspace=WS, home=HOME
        )
        assert verdict.decision is Decision.ALLOW, (path, verdict)
