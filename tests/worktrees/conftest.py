"""Real git repositories in a temporary directory."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

GIT_ENV = {
    "GIT_AUTHOR_NAME": "Dev",
    "GIT_AUTHOR_EMAIL": "dev@example.com",
    "GIT_COMMITTER_NAME": "Dev",
    "GIT_COMMITTER_EMAIL": "dev@example.com",
    "GIT_CONFIG_GLOBAL": "/dev/null",
    "GIT_CONFIG_NOSYSTEM": "1",
}


def git(repo: Path, *args: str) -> str:
    import os

    done = subprocess.run(
        ["git", *args], cwd=repo, env={**os.environ, **GIT_ENV},
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    return done.stdout


def make_repo(path: Path, files: dict[str, str] | None = None) -> Path:
    """A repository on branch ``main`` with ``files`` in one commit."""
    path.mkdir(parents=True)
    git(path, "init", "--quiet", "--initial-branch=main")
    for rel, content in (files or {"README.md": "# project\n"}).items():
        target = path / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content)
    git(path, "add", "--all")
    git(path, "commit", "--quiet", "-m", "initial")
    return path


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(
        tmp_path / "repo",
        {
            "calc.py": "def add(a, b):\n    return a - b\n",
            "README.md": "# calc\n",
            ".gitignore": "*.log\n",
        },
    )
