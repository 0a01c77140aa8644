"""Put agentdeck's hooks into a Claude Code ``settings.json``, and take them out again.

Install merges one entry per hook event into the file, keeping every other key
and hook; it is idempotent and writes a timestamped backup before it changes
anything. Our entries are recognised by a trailing shell comment (``MARKER``)
or by the client's path, so a later install replaces them even when the
interpreter moved. Uninstall restores the file byte for byte when nobody
edited it since (a manifest in AGENTDECK_HOME remembers the original bytes and
what we wrote); otherwise it removes our entries and keeps the user's edits.
The manifest and the backups hold the file's bytes, often with API keys in its
``env`` block: they are created readable by their owner only (0600).
"""

from __future__ import annotations

import base64
import contextlib
import datetime as dt
import difflib
import hashlib
import json
import logging
import os
import re
import shlex
import shutil
import socket
import sys
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

from agentdeck.errors import ConfigError
from agentdeck.files import atomic_write
from agentdeck.hooks.config import HOOK_EVENTS, write_client_config
from agentdeck.hooks.merge import MARKER, installed_events, installed_timeouts, merged, stripped
from agentdeck.settings import Settings

logger = logging.getLogger(__name__)

TOOL_EVENTS = frozenset({"PreToolUse", "PostToolUse", "PostToolUseFailure"})
# Claude Code's own timeout, fixed at install: past it, Claude Code kills the
# client and lets the tool run. The client's deadline (at most 50 s, however
# `agentdeck up` rewrites hooks.json later) and its stdin guard (30 s) end first.
CLAUDE_TIMEOUT_SECONDS = 60
SOCKET_PROBE_SECONDS = 0.5
MANIFEST_NAME = "hooks-installed.json"


class Scope(StrEnum):
    PROJECT = "project"
    LOCAL = "local"
    USER = "user"


class Outcome(StrEnum):
    INSTALLED = "installed"
    UNCHANGED = "unchanged"
    RESTORED = "restored"  # the original bytes are back
    DELETED = "deleted"  # the file did not exist before install
    REMOVED = "removed"  # our entries taken out, everything else kept
    NOT_INSTALLED = "not-installed"


@dataclass
class Change:
    path: Path
    outcome: Outcome
    dry_run: bool = False
    diff: str = ""
    backup: Path | None = None
    hooks_config: Path | None = None
    kept_edits: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {k: str(v) if isinstance(v, Path) else v for k, v in asdict(self).items()}


# --- what we install ---------------------------------------------------------------


def client_path() -> Path:
    return Path(__file__).absolute().with_name("client.py")


def hook_command(settings: Settings) -> str:
    """The interpreter running agentdeck now, as an absolute path (never via PATH)."""
    if not sys.executable:
        raise ConfigError("cannot tell which Python runs agentdeck (sys.executable is empty)")
    argv = [str(Path(sys.executable).absolute()), "-S", str(client_path()), str(settings.home_dir)]
    return f"{shlex.join(argv)} {MARKER}"


def hooks_settings(settings: Settings) -> dict[str, Any]:
    """The ``{"hooks": {...}}`` fragment: one entry per event agentdeck listens to."""
    hook = {
        "type": "command",
        "command": hook_command(settings),
        "timeout": CLAUDE_TIMEOUT_SECONDS,
    }
    out: dict[str, Any] = {}
    for event in HOOK_EVENTS:
        group: dict[str, Any] = {"matcher": "*"} if event in TOOL_EVENTS else {}
        group["hooks"] = [dict(hook)]
        out[event] = [group]
    return {"hooks": out}


def settings_path(scope: Scope, settings: Settings, project: Path | None = None) -> Path:
    if scope is Scope.USER:
        base = settings.claude_config_dir
        return (base.expanduser() if base else Path.home() / ".claude").absolute() / (
            "settings.json"
        )
    root = (project or Path.cwd()).expanduser().absolute()
    name = "settings.json" if scope is Scope.PROJECT else "settings.local.json"
    return root / ".claude" / name


# --- files ---------------------------------------------------------------------------


def _read(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror or exc}") from None


def _parse(raw: bytes | None, path: Path) -> dict[str, Any]:
    if raw is None or not raw.strip():
        return {}
    untouched = "fix or move the file, then try again; it was left untouched"
    try:
        data = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise ConfigError(f"{path} is not UTF-8 text", hint=untouched) from None
    except json.JSONDecodeError as exc:
        raise ConfigError(
            f"{path} is not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})",
            hint=untouched,
        ) from None
    if not isinstance(data, dict):
        raise ConfigError(
            f"{path} holds a JSON {type(data).__name__}, not an object", hint=untouched
        )
    return data


def _dump(data: dict[str, Any], like: bytes | None) -> bytes:
    """JSON with the indentation of the file it replaces (two spaces by default)."""
    indent: str | int = 2
    m = re.search(rb"^([ \t]+)\S", like or b"", re.MULTILINE)
    if m:
        ws = m.group(1).decode()
        indent = ws if "\t" in ws else len(ws)
    return (json.dumps(data, indent=indent, ensure_ascii=False) + "\n").encode("utf-8")


def _diff(old: bytes | None, new: bytes | None, path: Path) -> str:
    def lines(b: bytes | None) -> list[str]:
        return b.decode("utf-8", "replace").splitlines(keepends=True) if b else []

    out = difflib.unified_diff(
        lines(old),
        lines(new),
        str(path) if old is not None else "/dev/null",
        str(path) if new is not None else "/dev/null",
    )
    return "".join(
        line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in out
    )


def _target(path: Path) -> Path:
    """Write through a symlink (dotfile managers), never replace the link itself."""
    return path.resolve() if path.is_symlink() else path


def _backup(path: Path) -> Path:
    """A copy of ``path`` beside it, readable by its owner only."""
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ")
    backup = path.with_name(f"{path.name}.agentdeck-backup-{stamp}")
    n = 1
    while backup.exists():
        backup = path.with_name(f"{path.name}.agentdeck-backup-{stamp}-{n}")
        n += 1
    try:
        fd = os.open(backup, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as out, path.open("rb") as src:
            shutil.copyfileobj(src, out)
        shutil.copystat(path, backup)  # times; then the mode back to 0600
        backup.chmod(0o600)
    except OSError as exc:
        with contextlib.suppress(OSError):
            backup.unlink(missing_ok=True)
        raise ConfigError(
            f"cannot back up {path} to {backup.name}: {exc.strerror or exc}",
            hint="make the directory writable; nothing was changed",
        ) from None
    return backup


def _write(path: Path, data: bytes, *, private: bool = False) -> None:
    """Replace ``path`` atomically, keeping its mode (0600 if ``private``). The
    temporary file is 0600 until then: the bytes may hold keys."""
    try:
        atomic_write(path, data, mode=0o600 if private else None)
    except OSError as exc:
        raise ConfigError(
            f"cannot write {path}: {exc.strerror or exc}",
            hint="make the directory writable; the old file is unchanged",
        ) from None


def _sha(data: bytes | None) -> str | None:
    return hashlib.sha256(data).hexdigest() if data is not None else None


@dataclass
class _Manifest:
    path: Path
    files: dict[str, dict[str, Any]] = field(default_factory=dict)

    @classmethod
    def load(cls, settings: Settings) -> _Manifest:
        path = settings.home_dir / MANIFEST_NAME
        try:
            files = json.loads(path.read_text(encoding="utf-8")).get("files", {})
        except (OSError, ValueError, AttributeError):
            files = {}  # no manifest: uninstall works structurally
        return cls(path, files if isinstance(files, dict) else {})

    def save(self) -> None:
        text = json.dumps({"version": 1, "files": self.files}, indent=2) + "\n"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        _write(self.path, text.encode(), private=True)  # the original bytes: maybe keys


# --- install / uninstall -------------------------------------------------------------


def install(
    settings: Settings, scope: Scope, project: Path | None = None, *, dry_run: bool = False
) -> Change:
    """Merge our entries into the scope's settings file and write ``hooks.json``."""
    from agentdeck.governance.profiles import load_profile

    path = settings_path(scope, settings, project)
    target = _target(path)
    old = _read(target)
    data = _parse(old, path)
    new_data = merged(data, hooks_settings(settings), path)
    profile_default = load_profile(settings.profile).default
    unchanged = old is not None and new_data == data
    new = old if unchanged else _dump(new_data, old)
    if dry_run:
        outcome = Outcome.UNCHANGED if unchanged else Outcome.INSTALLED
        return Change(path, outcome, dry_run=True, diff=_diff(old, new, path))
    settings.ensure_home()  # hooks.json first: a failure there leaves settings untouched
    hooks_config = write_client_config(settings, profile_default)
    if unchanged:
        return Change(path, Outcome.UNCHANGED, hooks_config=hooks_config)
    assert new is not None
    created_dir = not target.parent.exists()
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(f"cannot create {target.parent}: {exc.strerror or exc}") from None
    backup = _backup(target) if old is not None else None
    _write(target, new)
    _remember(settings, path, old, new, data, created_dir, backup)
    logger.info("installed agentdeck hooks in %s (backup %s)", path, backup)
    return Change(
        path,
        Outcome.INSTALLED,
        diff=_diff(old, new, path),
        backup=backup,
        hooks_config=hooks_config,
    )


def _remember(
    settings: Settings,
    path: Path,
    old: bytes | None,
    new: bytes,
    data: dict[str, Any],
    created_dir: bool,
    backup: Path | None,
) -> None:
    """Keep the bytes from before the first install while nobody else edits the file."""
    manifest = _Manifest.load(settings)
    entry = manifest.files.get(str(path))
    if entry is None:
        entry = {
            "existed": old is not None,
            "original": base64.b64encode(old).decode() if old is not None else None,
            # a file that already had our entries (manifest lost) cannot be restored
            "restorable": not installed_events(data),
            "created_dir": created_dir,
        }
    elif entry.get("written_sha256") != _sha(old):
        entry["restorable"] = False  # edited since: restoring would lose the edits
    entry.setdefault("backups", []).extend([str(backup)] if backup else [])
    entry["written_sha256"] = _sha(new)
    entry["installed_at"] = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    manifest.files[str(path)] = entry
    manifest.save()


def uninstall(
    settings: Settings, scope: Scope, project: Path | None = None, *, dry_run: bool = False
) -> Change:
    """Restore the file as it was, or take our entries out and keep everything else."""
    path = settings_path(scope, settings, project)
    target = _target(path)
    old = _read(target)
    manifest = _Manifest.load(settings)
    entry = manifest.files.get(str(path))
    if old is None:
        change = Change(path, Outcome.NOT_INSTALLED, dry_run=dry_run)
    elif entry and entry.get("restorable") and entry.get("written_sha256") == _sha(old):
        original = base64.b64decode(entry["original"]) if entry.get("existed") else None
        outcome = Outcome.RESTORED if original is not None else Outcome.DELETED
        change = Change(path, outcome, dry_run=dry_run, diff=_diff(old, original, path))
        if not dry_run:
            _restore(target, original, created_dir=bool(entry.get("created_dir")))
            _drop_backups(entry.get("backups", []), original)
    else:
        data = _parse(old, path)
        new_data = stripped(data, path)
        if new_data == data:
            change = Change(path, Outcome.NOT_INSTALLED, dry_run=dry_run)
        else:
            new = _dump(new_data, old)
            kept = entry is not None and entry.get("written_sha256") != _sha(old)
            change = Change(
                path, Outcome.REMOVED, dry_run=dry_run, diff=_diff(old, new, path), kept_edits=kept
            )
            if not dry_run:
                change.backup = _backup(target)
                _write(target, new)
    if entry is not None and not dry_run:
        del manifest.files[str(path)]
        manifest.save()
    return change


def _restore(target: Path, original: bytes | None, *, created_dir: bool) -> None:
    if original is not None:
        _write(target, original)
        return
    try:
        target.unlink()
    except OSError as exc:
        raise ConfigError(f"cannot remove {target}: {exc.strerror or exc}") from None
    if created_dir:
        with contextlib.suppress(OSError):  # not empty: someone else's files live there now
            target.parent.rmdir()


def _drop_backups(backups: list[str], original: bytes | None) -> None:
    """With the original back in place, its copies are clutter (and could be committed)."""
    for name in backups:
        backup = Path(name)
        with contextlib.suppress(OSError):
            if original is not None and backup.read_bytes() == original:
                backup.unlink()


# --- status --------------------------------------------------------------------------


@dataclass
class ScopeStatus:
    scope: Scope
    path: Path
    exists: bool
    events: list[str] = field(default_factory=list)
    commands: list[str] = field(default_factory=list)
    current: bool = False  # the command is the one install would write now
    timeouts: list[Any] = field(default_factory=list)  # Claude Code's, as installed
    # Every installed timeout is the one install writes now; False means an older
    # install whose timeout may kill the client before its deadline (failing open).
    timeout_current: bool | None = None
    interpreter_exists: bool | None = None
    client_exists: bool | None = None
    error: str | None = None

    @property
    def installed(self) -> bool:
        return bool(self.events)

    def to_dict(self) -> dict[str, Any]:
        out = {k: str(v) if isinstance(v, Path) else v for k, v in asdict(self).items()}
        return out | {"installed": self.installed}


def scope_status(settings: Settings, scope: Scope, project: Path | None = None) -> ScopeStatus:
    path = settings_path(scope, settings, project)
    try:
        raw = _read(_target(path))
        data = _parse(raw, path)
        found = installed_events(data)
    except ConfigError as exc:
        return ScopeStatus(scope, path, exists=path.exists(), error=str(exc))
    st = ScopeStatus(scope, path, exists=raw is not None, events=list(found))
    st.commands = sorted({c for cmds in found.values() for c in cmds})
    if st.commands:
        st.current = st.commands == [hook_command(settings)]
        st.timeouts = installed_timeouts(data)
        st.timeout_current = st.timeouts == [CLAUDE_TIMEOUT_SECONDS]
        paths = [_command_paths(c) for c in st.commands]
        st.interpreter_exists = all(i is not None and Path(i).exists() for i, _ in paths)
        st.client_exists = all(c is not None and Path(c).exists() for _, c in paths)
    return st


def timeout_problem(st: ScopeStatus, deadline: float) -> str | None:
    """What is wrong with the installed Claude Code timeouts, in words; None if nothing.
    A missing one is Claude Code's default, 600 s: long enough."""

    def too_short(t: object) -> bool:
        if t is None:
            return False
        return not isinstance(t, int | float) or isinstance(t, bool) or t <= deadline

    if st.timeout_current is not False:
        return None
    shown = ", ".join("unset" if t is None else f"{t!r} s" for t in st.timeouts)
    if any(too_short(t) for t in st.timeouts):
        return (
            f"Claude Code's timeout for it is {shown}, not above the client's {deadline:g} s "
            "deadline: Claude Code would kill the client first and let the tool run "
            "(run install again)"
        )
    return (
        f"Claude Code's timeout for it is {shown}, not the {CLAUDE_TIMEOUT_SECONDS} s "
        "install writes now (run install again)"
    )


def _command_paths(command: str) -> tuple[str | None, str | None]:
    try:
        argv = shlex.split(command, comments=True)
    except ValueError:
        return None, None
    client = next((a for a in argv if a.endswith("client.py")), None)
    return (argv[0] if argv else None), client


def daemon_listening(path: Path) -> bool:
    """Whether something accepts connections on the daemon's hook socket."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(SOCKET_PROBE_SECONDS)
        try:
            s.connect(str(path))
        except OSError:
            return False
    return True
