"""Path specifiers of ``Read(…)`` / ``Edit(…)`` rules: gitignore-style globs. Pure.

Anchors, as in Claude Code (protocol notes §3.2):

* ``//abs/path`` — an absolute path;
* ``~/path`` — relative to the user's home (``~`` alone: the home directory);
* ``/path`` and ``./path`` — relative to the workspace root (not the file system
  root: ``Edit(/src/**)`` allows writing ``<workspace>/src/c.txt``);
* ``path/with/slash`` — relative to the workspace root too (gitignore: a slash at
  the start or in the middle anchors the pattern);
* ``name`` without a slash — matches at any depth below the workspace
  (``Edit(*.txt)`` covers ``<workspace>/a/b.txt``), never outside it.

Globs: ``*`` and ``?`` stay within one path segment, ``[abc]``/``[!a-z]`` classes,
``**`` as a whole segment spans any number of directories, ``\\x`` escapes ``x``.
A trailing ``/`` and, as in gitignore, a pattern naming a directory cover
everything beneath it (``Read(~/.ssh)`` covers ``~/.ssh/id_rsa``).
``.`` and ``..`` segments are refused in patterns.

Paths from tool inputs are made absolute (relative ones against the workspace,
``~`` against the home) and lexically normalized, so ``src/../../etc/passwd``
is judged as ``/etc/passwd``. Symlinks are not resolved (that would be I/O).
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass
from typing import Literal

Anchor = Literal["workspace", "home", "root"]
_GLOB_CHARS = frozenset("*?[")


def normalize_path(path: str, *, workspace: str, home: str) -> str:
    """``path`` made absolute and lexically normalized (no ``..``, one leading ``/``)."""
    if path == "~" or path.startswith("~/"):
        path = home + path[1:]
    elif not path.startswith("/"):
        path = f"{workspace}/{path}"
    path = posixpath.normpath(path)
    return "/" + path.lstrip("/")


def escape_glob(text: str) -> str:
    """``text`` as a glob that matches only itself."""
    return re.sub(r"([*?\[\]\\])", r"\\\1", text)


@dataclass(frozen=True)
class PathPattern:
    anchor: Anchor
    anywhere: bool  # no slash in the pattern: any depth below the workspace
    base: str  # the literal leading directories, relative to the anchor
    regex: re.Pattern[str]

    @classmethod
    def parse(cls, spec: str) -> PathPattern:
        """Raises ``ValueError`` with the problem for a malformed pattern."""
        anchor: Anchor = "workspace"
        if spec.startswith("//"):
            anchor, rest = "root", spec.lstrip("/")
        elif spec == "~" or spec.startswith("~/"):
            anchor, rest = "home", spec[2:]
        elif spec.startswith("~"):
            raise ValueError("`~user` paths are not supported: write `~/…` or `//abs/path`")
        elif spec.startswith("./"):
            rest = spec[2:]
        elif spec.startswith("/"):
            rest = spec[1:]
        else:
            rest = spec
        anchored = anchor != "workspace" or rest != spec or "/" in rest.rstrip("/")
        rest = rest.rstrip("/")
        if "//" in rest:
            raise ValueError("empty path segment (`//`) inside a pattern")
        segments = rest.split("/") if rest else []
        if any(seg in (".", "..") for seg in segments):
            raise ValueError("`.` and `..` segments are not allowed in path rules")
        body = _segments_regex(segments)
        if not segments:
            regex = ".*"  # the anchor directory itself and everything beneath
        elif not anchored:
            regex = f"(?:.*/)?{body}(?:/.*)?"
        else:
            regex = f"{body}(?:/.*)?"
        base = []
        for seg in segments:
            if any(ch in seg for ch in _GLOB_CHARS) or "\\" in seg:
                break
            base.append(seg)
        return cls(anchor, not anchored, "/".join(base), re.compile(regex, re.DOTALL))

    def anchor_dir(self, *, workspace: str, home: str) -> str:
        if self.anchor == "workspace":
            return workspace
        return home if self.anchor == "home" else "/"

    def matches(self, path: str, *, workspace: str, home: str) -> bool:
        """Whether the normalized absolute ``path`` is covered by the pattern."""
        rel = _relative(path, self.anchor_dir(workspace=workspace, home=home))
        return rel is not None and self.regex.fullmatch(rel) is not None

    def reaches_into(self, directory: str, *, workspace: str, home: str) -> bool:
        """Whether a search of ``directory`` would reach what an anchored pattern names."""
        if self.anywhere:
            return False
        base = posixpath.join(self.anchor_dir(workspace=workspace, home=home), self.base)
        base = "/" + posixpath.normpath(base).lstrip("/")
        return _relative(base, directory) is not None


def _relative(path: str, directory: str) -> str | None:
    if directory == "/":
        return path[1:]
    if path == directory:
        return ""
    if path.startswith(directory + "/"):
        return path[len(directory) + 1 :]
    return None


def _segments_regex(segments: list[str]) -> str:
    out = ""
    for k, seg in enumerate(segments):
        last = k == len(segments) - 1
        if seg == "**":
            out += ".*" if last else "(?:[^/]*/)*"
            continue
        if "**" in seg:
            raise ValueError(f"`**` must be a whole path segment (in `{seg}`)")
        out += _segment_regex(seg) + ("" if last else "/")
    return out


def _segment_regex(seg: str) -> str:
    out, i = "", 0
    while i < len(seg):
        c = seg[i]
        i += 1
        if c == "*":
            out += "[^/]*"
        elif c == "?":
            out += "[^/]"
        elif c == "\\":
            if i >= len(seg):
                raise ValueError("a trailing backslash in a path pattern")
            out += re.escape(seg[i])
            i += 1
        elif c == "[":
            close = seg.find("]", i + 1 if seg[i : i + 1] in ("!", "^") else i)
            close = seg.find("]", close + 1) if close == i else close  # `[]…]`
            if close < 0:
                raise ValueError(f"an unclosed `[` in `{seg}`")
            body = seg[i:close]
            negate = body[:1] in ("!", "^")
            body = body[1:] if negate else body
            if not body:
                raise ValueError(f"an empty character class in `{seg}`")
            chars = "".join("\\" + ch if ch in "\\]^[" else ch for ch in body)
            out += f"[^/{chars}]" if negate else f"(?!/)[{chars}]"
            i = close + 1
        else:
            out += re.escape(c)
    return out
