"""agentdeck installs the way Python tools install: the wheel ``uv build`` makes,
put into a fresh virtual environment, runs with nothing of this checkout — its
version, ``doctor`` on a new home, a scripted ``agentdeck run`` on the real Claude
Code CLI (scenarios, profiles, migrations from the wheel), and a daemon serving the
dashboard (templates, static files). One test: it is expensive."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import httpx
import pytest

from agentdeck import __version__
from tests.support.deckcli import deck_env
from tests.support.mockmodel import running_mock_in_thread
from tests.support.waiting import eventually

ROOT = Path(__file__).resolve().parent.parent
INSTALL_SECONDS = 900

# What the wheel must carry beside the code (a package directory each, its data files).
DATA = (
    "agentdeck/web/templates/board.html",
    "agentdeck/web/static/dashboard.css",
    "agentdeck/web/static/htmx.min.js",
    "agentdeck/mockmodel/scenarios/chat.yaml",
    "agentdeck/governance/profiles/default.yaml",
    "agentdeck/orchestration/catalog/engineer.md",
    "agentdeck/store/migrations/script.py.mako",
)


def _run(argv: list[str], *, env: dict[str, str] | None = None, cwd: Path, timeout: float) -> str:
    done = subprocess.run(
        argv, env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout, check=False
    )
    assert done.returncode == 0, f"{argv} exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
    return done.stdout


def _build(out: Path) -> Path:
    """The wheel, by uv (the project's tool: the sdist first, then the wheel built
    from the sdist, so the sdist is proved to carry what the wheel needs), else by a
    fresh environment's pip from the checkout."""
    if shutil.which("uv") is not None:
        _run(["uv", "build", "--out-dir", str(out), str(ROOT)], cwd=out, timeout=300)
        (sdist,) = out.glob("agentdeck-*.tar.gz")
        with tarfile.open(sdist) as tf:
            names = {n.split("/", 1)[1] for n in tf.getnames() if "/" in n}
        assert {"pyproject.toml", "README.md", "uv.lock"} <= names
        assert not [n for n in names if n.startswith((".grimp_cache", ".import_linter_cache"))]
    else:
        builder = out / "builder"
        _run([sys.executable, "-m", "venv", str(builder)], cwd=out, timeout=120)
        pip = str(builder / "bin" / "pip")
        _run([pip, "wheel", "--no-deps", "-w", str(out), str(ROOT)], cwd=out, timeout=300)
    (wheel,) = out.glob("agentdeck-*.whl")
    return wheel


def _install(wheel: Path, venv: Path) -> None:
    """A fresh ``python -m venv`` with the wheel and its dependencies from PyPI."""
    _run([sys.executable, "-m", "venv", str(venv)], cwd=venv.parent, timeout=120)
    python = str(venv / "bin" / "python")
    if shutil.which("uv") is not None:  # the same install as pip's, from uv's cache
        argv = ["uv", "pip", "install", "--python", python, str(wheel)]
    else:
        argv = [python, "-m", "pip", "install", "--quiet", str(wheel)]
    _run(argv, cwd=venv.parent, timeout=INSTALL_SECONDS)


@pytest.mark.slow
@pytest.mark.cli
@pytest.mark.timeout(INSTALL_SECONDS + 300)
def test_the_wheel_installs_into_a_fresh_environment_and_runs(tmp_path: Path) -> None:
    wheel = _build(tmp_path)
    assert wheel.name == f"agentdeck-{__version__}-py3-none-any.whl"
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
    assert [d for d in DATA if d not in names] == [], "data files the wheel lacks"
    migrations = [n for n in names if n.startswith("agentdeck/store/migrations/versions/")]
    assert len(migrations) >= 10

    venv = tmp_path / "venv"
    _install(wheel, venv)
    agentdeck = str(venv / "bin" / "agentdeck")
    elsewhere = tmp_path / "elsewhere"  # no checkout on the path: cwd, PYTHONPATH
    elsewhere.mkdir()
    with running_mock_in_thread("chat") as model:
        env = deck_env(
            tmp_path,
            ANTHROPIC_BASE_URL=model.url_for("chat"),
            ANTHROPIC_API_KEY="sk-test",
            PATH=f"{venv / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}",
        )
        env.pop("PYTHONPATH", None)
        env.pop("VIRTUAL_ENV", None)

        assert _run([agentdeck, "--version"], env=env, cwd=elsewhere, timeout=60) == (
            f"agentdeck {__version__}\n"
        )
        where = _run(
            [str(venv / "bin" / "python"), "-c", "import agentdeck; print(agentdeck.__file__)"],
            env=env,
            cwd=elsewhere,
            timeout=60,
        )
        assert where.startswith(str(venv)), where

        report = json.loads(_run([agentdeck, "doctor", "--json"], env=env, cwd=elsewhere,
                                 timeout=180))  # fmt: skip
        checks = {c["name"]: c for c in report["checks"]}
        assert report["ok"], checks
        assert checks["claude"]["status"] == "ok" and checks["model"]["status"] == "ok"

        said = _run(
            [agentdeck, "run", "--scenario", "chat", "--json", "hello"],
            env=env,
            cwd=elsewhere,
            timeout=300,
        )
        outcome = json.loads(said)
        assert outcome["agent"]["state"] == "done", said
        assert outcome["result"]["result"] == "Hello! I am the scripted model. Ask me anything."

        _serves_the_dashboard(agentdeck, env, elsewhere)


def _serves_the_dashboard(agentdeck: str, env: dict[str, str], cwd: Path) -> None:
    home = Path(env["AGENTDECK_HOME"])
    proc = subprocess.Popen(
        [agentdeck, "up"],
        env=env,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:

        async def up() -> dict[str, object] | None:
            assert proc.poll() is None, proc.communicate()[1]
            try:
                found: dict[str, object] = json.loads((home / "daemon.json").read_text())
            except (OSError, ValueError):  # not written yet, or half written
                return None
            return found

        info = asyncio.run(eventually(up, timeout=60, what="the installed daemon up"))
        token = (home / "token").read_text().strip()
        base = f"http://127.0.0.1:{info['port']}"
        with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {token}"}) as http:
            assert http.get("/healthz").json() == {"status": "ok", "version": __version__}
            assert http.get("/readyz").status_code == 200
            board = http.get("/")
            assert board.status_code == 200 and "agentdeck" in board.text
            css = http.get("/static/dashboard.css")
            assert css.status_code == 200 and css.text.strip()
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
