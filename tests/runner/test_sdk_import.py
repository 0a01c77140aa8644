"""``sdk_private``: a package's submodules before its ``__init__``, and the
``__init__`` run once, when asked for or when a name of the package is."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentdeck.runner import sdk_private


@pytest.fixture
def packages(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Two packages on the path: ``lazypkg`` (its ``__init__`` counts its runs in a
    file) and ``brokenpkg`` (its ``__init__`` raises); forgotten afterwards."""
    good = tmp_path / "lazypkg"
    good.mkdir()
    (good / "__init__.py").write_text(
        "from pathlib import Path\n"
        "ran = Path(__file__).with_name('ran')\n"
        "ran.write_text(ran.read_text() + 'x' if ran.exists() else 'x')\n"
        "from .sub import VALUE\n"
        "NAME = 'lazy'\n"
    )
    (good / "sub.py").write_text("VALUE = 41 + 1\n")
    broken = tmp_path / "brokenpkg"
    broken.mkdir()
    (broken / "__init__.py").write_text("raise RuntimeError('broken on purpose')\n")
    (broken / "sub.py").write_text("VALUE = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield good
    for name in list(sys.modules):
        if name.split(".")[0] in ("lazypkg", "brokenpkg"):
            del sys.modules[name]


def runs(package: Path) -> int:
    ran = package / "ran"
    return len(ran.read_text()) if ran.exists() else 0


def test_submodules_load_without_the_init_until_a_name_is_asked(packages: Path) -> None:
    sdk_private.defer("lazypkg")
    from lazypkg.sub import VALUE  # type: ignore[import-not-found]

    assert VALUE == 42 and runs(packages) == 0
    from lazypkg import NAME  # type: ignore[import-not-found]

    assert NAME == "lazy" and runs(packages) == 1
    import lazypkg  # type: ignore[import-not-found]

    assert lazypkg.VALUE == 42 and lazypkg.sub.VALUE == 42
    sdk_private.finish("lazypkg")  # run already: not again
    assert runs(packages) == 1
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        _ = lazypkg.nope


def test_finish_runs_the_init_once(packages: Path) -> None:
    sdk_private.defer("lazypkg")
    sdk_private.finish("lazypkg")
    sdk_private.finish("lazypkg")
    import lazypkg

    assert runs(packages) == 1 and lazypkg.NAME == "lazy"


def test_a_package_imported_already_is_left_as_it_is(packages: Path) -> None:
    import lazypkg

    sdk_private.defer("lazypkg")
    sdk_private.finish("lazypkg")
    assert sys.modules["lazypkg"] is lazypkg and runs(packages) == 1


def test_an_init_that_fails_says_so_and_leaves_no_half_made_package(packages: Path) -> None:
    sdk_private.defer("brokenpkg")
    from brokenpkg.sub import VALUE  # type: ignore[import-not-found]

    assert VALUE == 1
    with pytest.raises(RuntimeError, match="broken on purpose"):
        from brokenpkg import anything  # type: ignore[import-not-found]  # noqa: F401
    assert "brokenpkg" not in sys.modules
    with pytest.raises(RuntimeError, match="broken on purpose"):  # as a plain import says
        import brokenpkg  # noqa: F401


def test_a_package_not_installed_is_the_import_s_to_report() -> None:
    sdk_private.defer("agentdeck_no_such_package")
    assert "agentdeck_no_such_package" not in sys.modules
    with pytest.raises(ModuleNotFoundError):
        sdk_private.finish("agentdeck_no_such_package")


def test_the_early_spawn_loads_neither_mcp_nor_the_sdk_client() -> None:
    # What cli.early needs to spawn Claude Code, with the SDK deferred: its options
    # and transport, not mcp (~0.6 s); then the whole SDK, the same as ever.
    code = """
import sys
from agentdeck.runner import sdk_private
sdk_private.defer()
import agentdeck.cli.early, agentdeck.cli.context
unwanted = ("mcp.", "claude_agent_sdk.client")
early = sorted(m for m in sys.modules if m == "mcp" or m.startswith(unwanted))
assert early == [], early
sdk_private.finish()
import claude_agent_sdk
from claude_agent_sdk.client import ClaudeSDKClient
from claude_agent_sdk.types import ClaudeAgentOptions
assert claude_agent_sdk.ClaudeSDKClient is ClaudeSDKClient
assert claude_agent_sdk.ClaudeAgentOptions is ClaudeAgentOptions
assert "mcp.types" in sys.modules and claude_agent_sdk.__version__
print("ok")
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert (done.returncode, done.stdout.strip()) == (0, "ok"), done.stderr
