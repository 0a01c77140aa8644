"""Checkpoints of an agent's workspace, taken before each tool call that can change
files (which those are: ``core.file_changes``), and what rewinding to one does.
Pure: ``agentdeck.worktrees.checkpoints`` runs git; this half says what a checkpoint
is, how its commit message carries it, and how git's ``-z`` output reads."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Literal

Status = Literal["A", "M", "D"]  # added, modified (content, mode or type), deleted
LISTED = 100  # paths a checkpoint keeps by name; beyond that only counts
_MARK = "agentdeck-checkpoint"  # the key that tells our JSON from any other text
_GITLINK = "160000"


@dataclass(frozen=True)
class ChangedFile:
    status: Status
    path: str


@dataclass(frozen=True)
class Checkpoint:
    """The workspace as it was just before one tool call (number ``n``, from 1)."""

    n: int
    commit: str  # in the agent's shadow repository
    ts: float  # seconds since the epoch
    tool: str | None
    tool_use_id: str | None
    summary: str  # the tool call on one line: "Edit src/app.py"
    # What changed since the checkpoint before (the previous tool call's doing): the
    # first LISTED paths, and the counts of all. The first checkpoint is the baseline:
    # nothing listed.
    files: list[ChangedFile] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)
    # Files not snapshotted (over the size cap, or unreadable): left alone by rewinds.
    skipped: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "n": self.n,
            "commit": self.commit,
            "ts": self.ts,
            "tool": self.tool,
            "tool_use_id": self.tool_use_id,
            "summary": self.summary,
            "files": [{"status": f.status, "path": f.path} for f in self.files],
            "counts": dict(self.counts),
            "skipped": list(self.skipped),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Checkpoint:
        return cls(
            n=int(data["n"]),
            commit=data["commit"],
            ts=float(data["ts"]),
            tool=data["tool"],
            tool_use_id=data["tool_use_id"],
            summary=data["summary"],
            files=[ChangedFile(_status(f["status"]), f["path"]) for f in data["files"]],
            counts={str(k): int(v) for k, v in data["counts"].items()},
            skipped=list(data["skipped"]),
        )


@dataclass(frozen=True)
class Rewind:
    """What rewinding to checkpoint ``to`` did (or, in a dry run, would do)."""

    to: int
    dry_run: bool
    restored: list[str]  # changed or deleted since: put back as they were
    removed: list[str]  # created since: deleted
    kept: list[str]  # differ from the checkpoint but are ignored or over the cap now
    patch: str  # current -> checkpoint (dry runs; "" otherwise)
    undo: int | None  # the checkpoint taken just before: rewind to it to undo this

    def to_dict(self) -> dict[str, Any]:
        return {
            "to": self.to,
            "dry_run": self.dry_run,
            "restored": list(self.restored),
            "removed": list(self.removed),
            "kept": list(self.kept),
            "patch": self.patch,
            "undo": self.undo,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Rewind:
        return cls(
            to=int(data["to"]),
            dry_run=bool(data["dry_run"]),
            restored=list(data["restored"]),
            removed=list(data["removed"]),
            kept=list(data["kept"]),
            patch=data["patch"],
            undo=None if data["undo"] is None else int(data["undo"]),
        )


def one_line(text: str, limit: int = 200) -> str:
    """``text`` on one line, cut to ``limit`` characters: a commit's subject."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def tally(files: list[ChangedFile]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for f in files:
        counts[f.status] = counts.get(f.status, 0) + 1
    return counts


def format_message(
    n: int,
    ts: float,
    *,
    tool: str | None,
    tool_use_id: str | None,
    summary: str,
    files: list[ChangedFile],
    skipped: list[str],
) -> str:
    """The shadow commit's message: a subject a person can read in ``git log``, then
    the checkpoint as one line of JSON, so listing needs no database."""
    summary = one_line(summary)
    data = {
        _MARK: 1,
        "n": n,
        "ts": ts,
        "tool": tool,
        "tool_use_id": tool_use_id,
        "summary": summary,
        "files": [[f.status, f.path] for f in files[:LISTED]],
        "counts": tally(files),
        # All of them: a rewind must know every file the checkpoint did not take.
        "skipped": skipped,
    }
    subject = f"checkpoint {n}: {summary}" if summary else f"checkpoint {n}"
    return f"{subject}\n\n{json.dumps(data, ensure_ascii=False)}\n"


def parse_message(commit: str, message: str) -> Checkpoint | None:
    """The checkpoint a shadow commit's message carries; None for any other commit."""
    for line in reversed(message.strip().splitlines()):
        if not line.startswith("{"):
            continue
        try:
            data = json.loads(line)
        except ValueError:
            return None
        if not isinstance(data, dict) or data.get(_MARK) != 1:
            return None
        try:
            return Checkpoint(
                n=int(data["n"]),
                commit=commit,
                ts=float(data["ts"]),
                tool=_str_or_none(data.get("tool")),
                tool_use_id=_str_or_none(data.get("tool_use_id")),
                summary=str(data.get("summary", "")),
                files=[ChangedFile(_status(s), str(p)) for s, p in data.get("files", [])],
                counts={str(k): int(v) for k, v in dict(data.get("counts", {})).items()},
                skipped=[str(p) for p in data.get("skipped", [])],
            )
        except (KeyError, TypeError, ValueError):
            return None
    return None


def _str_or_none(value: object) -> str | None:
    return None if value is None else str(value)


def _status(letter: object) -> Status:
    """git's letter folded into ours: a type change (T) is a modification."""
    if letter == "A":
        return "A"
    if letter == "D":
        return "D"
    return "M"


@dataclass(frozen=True)
class WorkspaceChanges:
    """What ``git status --porcelain -z --untracked-files=all`` says the shadow's
    index lacks, sorted by what to do with each path."""

    present: list[str] = field(default_factory=list)  # new or changed: to add
    gone: list[str] = field(default_factory=list)  # deleted: to drop from the index
    tracked: frozenset[str] = frozenset()  # which of ``present`` the index holds
    nested: list[str] = field(default_factory=list)  # repositories inside: never taken
    staged: bool = False  # the index differs from the last checkpoint for a path named

    def files(self, taken: list[str], dropped: list[str]) -> list[ChangedFile]:
        """What changed since the last checkpoint, when the index was that checkpoint
        (nothing ``staged``, no ``nested``): ``taken`` of the present paths are added
        or modified, and the ``gone`` and ``dropped`` ones that the index held are
        deleted. What ``git diff-tree`` of the two trees says, without asking it."""
        files = [ChangedFile("M" if p in self.tracked else "A", p) for p in taken]
        files += [ChangedFile("D", p) for p in {*self.gone, *self.tracked.intersection(dropped)}]
        return sorted(files, key=lambda f: f.path.encode())


def parse_status(text: str) -> WorkspaceChanges:
    """``XY path\\0`` entries (``--no-renames``, so one path each). X (index against
    the last checkpoint) needs nothing: the index is what is committed."""
    present: list[str] = []
    gone: list[str] = []
    tracked: set[str] = set()
    nested: list[str] = []
    staged = False
    for entry in text.split("\0"):
        if len(entry) < 4:
            continue
        x, y, path = entry[0], entry[1], entry[3:]
        staged = staged or x not in " ?"
        if x == "?":
            # A directory shown whole under --untracked-files=all is a repository of
            # its own (a submodule, a clone): its files are not ours to take or delete.
            (nested if path.endswith("/") else present).append(path)
        elif y == "D":
            gone.append(path)
        elif y in ("M", "T"):
            present.append(path)
            tracked.add(path)
    return WorkspaceChanges(present, gone, frozenset(tracked), nested, staged)


def parse_name_status(text: str) -> list[ChangedFile]:
    """``git diff-tree -r -z --name-status --no-renames``: ``X\\0path\\0`` pairs."""
    parts = text.split("\0")
    return [
        ChangedFile(_status(parts[i]), parts[i + 1])
        for i in range(0, len(parts) - 1, 2)
        if parts[i]
    ]


@dataclass(frozen=True)
class TreeChange:
    """One entry of ``git diff-tree -r -z --raw --no-renames A B``."""

    status: Status
    path: str
    old_mode: str
    new_mode: str
    new_object: str  # the blob in B ("0"*40 when deleted)

    @property
    def gitlink(self) -> bool:
        """A repository inside (a submodule): never ours to restore or delete."""
        return _GITLINK in (self.old_mode, self.new_mode)


def parse_raw(text: str) -> list[TreeChange]:
    """``:oldmode newmode oldsha newsha X\\0path\\0`` entries."""
    changes: list[TreeChange] = []
    parts = text.split("\0")
    for i in range(0, len(parts) - 1, 2):
        head, path = parts[i], parts[i + 1]
        fields = head.lstrip(":").split()
        if len(fields) < 5:
            continue
        old_mode, new_mode, _old, new, letter = fields[:5]
        changes.append(TreeChange(_status(letter[:1]), path, old_mode, new_mode, new))
    return changes


@dataclass(frozen=True)
class RewindPlan:
    """What a rewind does to each path that differs between now and the checkpoint."""

    restore: list[TreeChange]  # write the checkpoint's version
    remove: list[str]  # delete: created since the checkpoint
    kept: list[str]  # left alone: ignored or over the cap now


def plan_rewind(changes: list[TreeChange], untouchable: frozenset[str]) -> RewindPlan:
    """``changes`` run from now to the checkpoint; ``untouchable`` are the paths the
    snapshot of now did not take (over the cap, unreadable): left as they are."""
    restore: list[TreeChange] = []
    remove: list[str] = []
    kept: list[str] = []
    for change in changes:
        if change.gitlink or change.path in untouchable:
            kept.append(change.path)
        elif change.status == "D":
            remove.append(change.path)
        else:
            restore.append(change)
    return RewindPlan(restore, remove, kept)


_ESCAPES = {"a": 7, "b": 8, "t": 9, "n": 10, "v": 11, "f": 12, "r": 13, '"': 34, "\\": 92}


def unquote(line: str) -> str:
    """A path as git prints it outside ``-z`` output: as is, or in double quotes with
    C escapes (octal for each byte of a non-ASCII character)."""
    if not (len(line) >= 2 and line[0] == line[-1] == '"'):
        return line
    body, out, i = line[1:-1], bytearray(), 0
    while i < len(body):
        c = body[i]
        if c != "\\" or i + 1 == len(body):
            out += c.encode()
            i += 1
        elif body[i + 1] in _ESCAPES:
            out.append(_ESCAPES[body[i + 1]])
            i += 2
        else:
            out.append(int(body[i + 1 : i + 4], 8) & 0xFF)
            i += 4
    return out.decode("utf-8", "replace")


def exclude_pattern(relative: str) -> str:
    """A gitignore line matching exactly the directory ``relative`` (POSIX, from the
    top): its glob characters escaped."""
    escaped = "".join("\\" + c if c in "\\*?[!# " else c for c in relative.strip("/"))
    return f"/{escaped}/"
