"""Split a Bash command line into the simple commands it would run. Pure.

Claude Code judges a compound command sub-command by sub-command; so do we. The
splitter is a small quote-aware lexer (``shlex`` cannot see ``$( … )``,
backticks, ``|&`` or ``2>&1``): it walks the text once, honours ``'…'``,
``"…"`` and backslashes, and cuts at ``&&``, ``||``, ``;``, ``|``, ``|&``,
``&`` and newlines. Subshells ``( … )``, groups ``{ …; }``, command
substitutions ``$( … )`` / backticks / ``<( … )`` and the strings given to
``bash -c`` / ``sh -c`` / ``eval`` become sub-commands of their own; a
substitution inside a word leaves a placeholder (``SUBST``) that no literal
rule text can match. Leading keywords (``if``, ``then``, ``do``, ``!``, ``{`` …)
are dropped and ``# comments`` skipped.

Anything the lexer does not understand with confidence sets ``Split.problem``
(unbalanced quotes, heredocs, arithmetic, ``$'…'``, ``for``/``case``
constructs, ``(`` inside a word, a redirection without a target …). The policy
engine never allows such a command by a specifier rule.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

SUBST = "\ue001"  # stands for the output of a command substitution
_MAX_DEPTH = 16
_DROP_LEADING = frozenset({"{", "}", "(", ")", "!", "if", "then", "else", "elif", "do", "while",
                           "until", "fi", "done", "esac", "time"})  # fmt: skip
_UNSUPPORTED = frozenset({"for", "case", "select", "function", "coproc", "[[", "]]", "(("})
_SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh", "fish"})
_HARMLESS_TARGETS = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty"})
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\+?=")
_SPECIAL_PARAM = frozenset("@*#?$!-0123456789_")
# A line the scanner reads as plain words: no quote, escape, expansion, operator,
# redirection, glob, brace, comment or line break; blanks are spaces and tabs.
_PLAIN = re.compile(r"[\w./:=+,@%^~ \t-]*", re.ASCII)


@dataclass(frozen=True)
class SimpleCommand:
    """One command the shell would run: ``assignments`` then ``words`` (unquoted)."""

    words: tuple[str, ...]
    assignments: tuple[str, ...] = ()
    dynamic_name: bool = False  # the command name is computed at run time
    writes_file: bool = False  # output redirected into a file

    @property
    def text(self) -> str:
        return " ".join((*self.assignments, *self.words))

    @property
    def bare_text(self) -> str:
        """The command without its leading ``VAR=value`` assignments."""
        return " ".join(self.words)


@dataclass(frozen=True)
class Split:
    commands: tuple[SimpleCommand, ...]
    problem: str | None = None  # set when the text could not be split with confidence


class _Unsure(Exception):
    def __init__(self, problem: str) -> None:
        super().__init__(problem)
        self.problem = problem


def split_command(source: str) -> Split:
    """The simple commands of ``source``, in order, nested ones after their parents."""
    out: list[SimpleCommand] = []
    try:
        lexer = _Lexer(source, out, 0)
        if _PLAIN.fullmatch(source):
            # Words of ordinary characters only (most commands): the scanner would add
            # them one character at a time to the same words, cut at blanks.
            lexer.words = [(word, False) for word in source.split()]
            lexer._end_command()
        else:
            lexer.parse(end=None)
    except _Unsure as exc:
        return Split(tuple(out), exc.problem)
    if not out:
        return Split((), "empty command")
    return Split(tuple(out))


class _Lexer:
    def __init__(self, src: str, out: list[SimpleCommand], depth: int) -> None:
        if depth > _MAX_DEPTH:
            raise _Unsure("commands nested too deeply")
        self.s, self.i, self.out, self.depth = src, 0, out, depth
        self._reset()

    def _reset(self) -> None:
        self.words: list[tuple[str, bool]] = []  # (text, dynamic)
        self.cur: list[str] | None = None
        self.dyn = False
        self.redirect: str | None = None  # "out", "in" or "dup" awaiting its target
        self.writes = False

    # words and commands -------------------------------------------------
    def _add(self, text: str, *, dynamic: bool = False) -> None:
        if self.cur is None:
            self.cur = []
        self.cur.append(text)
        self.dyn = self.dyn or dynamic

    def _end_word(self) -> None:
        if self.cur is None:
            return
        word, dyn = "".join(self.cur), self.dyn
        self.cur, self.dyn = None, False
        if self.redirect is not None:
            kind, self.redirect = self.redirect, None
            if kind == "out" and word not in _HARMLESS_TARGETS:
                self.writes = True
            if kind == "dup" and not (word.isdigit() or word == "-"):
                self.writes = True
            return
        self.words.append((word, dyn))

    def _end_command(self) -> None:
        self._end_word()
        if self.redirect is not None:
            raise _Unsure("a redirection without a target")
        words, writes = self.words, self.writes
        self._reset()
        while words and words[0][0] in _DROP_LEADING and (not words[0][1] or words[0][0] in "{}"):
            words = words[1:]
        if not words:
            if writes:
                raise _Unsure("a redirection without a command")
            return
        if words[0][0] in _UNSUPPORTED:
            raise _Unsure(f"`{words[0][0]}` constructs are not supported")
        n = 0
        while n < len(words) and _ASSIGNMENT.match(words[n][0]):
            n += 1
        names = [w for w, _ in words[n:]]
        dynamic = n < len(words) and words[n][1]
        self.out.append(
            SimpleCommand(tuple(names), tuple(w for w, _ in words[:n]), dynamic, writes)
        )
        self._nested(names)

    def _nested(self, words: list[str]) -> None:
        """Commands hidden in strings: ``bash -c '…'`` and ``eval …``."""
        if not words:
            return
        name = words[0].rsplit("/", 1)[-1]
        inner: str | None = None
        if name == "eval":
            inner = " ".join(words[1:])
        elif name in _SHELLS:
            args = words[1:]
            for k, arg in enumerate(args):
                if not arg.startswith("-"):
                    break
                if "c" in arg[1:] and not arg.startswith("--"):
                    if k + 1 >= len(args):
                        raise _Unsure(f"`{name} -c` without a command")
                    inner = args[k + 1]
                    break
        if inner is not None:
            _Lexer(inner, self.out, self.depth + 1).parse(end=None)

    def _nest(self, end: str) -> None:
        """A substitution starting at ``self.i``: its commands join ``out``."""
        sub = _Lexer(self.s, self.out, self.depth + 1)
        sub.i = self.i
        sub.parse(end=end)
        self.i = sub.i

    # the scanner --------------------------------------------------------
    def parse(self, end: str | None) -> None:
        s = self.s
        while self.i < len(s):
            c = s[self.i]
            if end is not None and c == end:
                self._end_command()
                self.i += 1
                return
            self.i += 1
            if c in " \t":
                self._end_word()
            elif c == "\n":
                self._end_command()
            elif c == "\\":
                if self.i >= len(s):
                    raise _Unsure("a trailing backslash")
                if s[self.i] != "\n":  # backslash-newline continues the line
                    self._add(s[self.i])
                self.i += 1
            elif c == "#" and self.cur is None:
                while self.i < len(s) and s[self.i] != "\n":
                    self.i += 1
            elif c == "'":
                close = s.find("'", self.i)
                if close < 0:
                    raise _Unsure("an unbalanced single quote")
                self._add(s[self.i : close])
                self.i = close + 1
            elif c == '"':
                self._double_quoted()
            elif c == "$":
                self._dollar()
            elif c == "`":
                self._nest("`")
                self._add(SUBST, dynamic=True)
            elif c in ";&|":
                self._operator(c)
            elif c == "(":
                self._open_paren()
            elif c == ")":
                raise _Unsure("an unbalanced `)`")
            elif c in "<>":
                self._redirection(c)
            elif ord(c) < 32 or c in (SUBST, "\x7f"):
                raise _Unsure("a control character")
            else:
                # unquoted glob and brace characters make a word dynamic
                self._add(c, dynamic=c in "*?[{}")
        if end is not None:
            raise _Unsure(f"an unclosed substitution (missing `{end}`)")
        self._end_command()

    def _double_quoted(self) -> None:
        s = self.s
        self._add("")
        while self.i < len(s):
            c = s[self.i]
            self.i += 1
            if c == '"':
                return
            if c == "\\" and self.i < len(s) and s[self.i] in '$`"\\\n':
                if s[self.i] != "\n":
                    self._add(s[self.i])
                self.i += 1
            elif c == "$":
                self._dollar()
            elif c == "`":
                self._nest("`")
                self._add(SUBST, dynamic=True)
            elif ord(c) < 32 and c not in "\t\n":
                raise _Unsure("a control character")
            else:
                self._add(c)
        raise _Unsure("an unbalanced double quote")

    def _dollar(self) -> None:
        s, nxt = self.s, self.s[self.i : self.i + 1]
        if nxt == "(":
            if s.startswith("((", self.i):
                raise _Unsure("arithmetic expansion is not supported")
            self.i += 1
            self._nest(")")
            self._add(SUBST, dynamic=True)
        elif nxt == "{":
            close = s.find("}", self.i)
            if close < 0:
                raise _Unsure("an unclosed `${`")
            body = s[self.i + 1 : close]
            if any(x in body for x in ("$", "`", "{", "'", '"', "\\")):
                raise _Unsure("a complex parameter expansion")
            self._add("${" + body + "}", dynamic=True)
            self.i = close + 1
        elif nxt == "'":
            raise _Unsure("$'…' quoting is not supported")
        elif nxt == '"':
            self.i += 1
            self._double_quoted()
        elif nxt and (nxt.isalnum() or nxt in _SPECIAL_PARAM):
            self._add("$", dynamic=True)
        else:
            self._add("$")

    def _operator(self, c: str) -> None:
        s, nxt = self.s, self.s[self.i : self.i + 1]
        if c == ";" and nxt in (";", "&"):
            raise _Unsure("`;;` outside a case statement")
        if c == "&" and nxt == ">":
            self._end_word()
            self.i += 2 if s.startswith(">>", self.i) else 1
            self.redirect = "out"
            return
        if (c == "&" and nxt == "&") or (c == "|" and nxt in ("|", "&")):
            self.i += 1
        self._end_command()

    def _open_paren(self) -> None:
        if self.cur is not None or self.words:
            raise _Unsure("`(` inside a command (function, array or syntax error)")
        if self.s.startswith("(", self.i):
            raise _Unsure("`((` arithmetic commands are not supported")
        self._end_command()
        self._nest(")")

    def _redirection(self, c: str) -> None:
        s = self.s
        if self.cur is not None and "".join(self.cur).isdigit() and not self.dyn:
            self.cur, self.dyn = None, False  # the file descriptor: `2>`
        self._end_word()
        if self.redirect is not None:
            raise _Unsure("a redirection without a target")
        if s.startswith("(", self.i):  # process substitution <( … ) / >( … )
            self.i += 1
            self._nest(")")
            self._add(SUBST, dynamic=True)
            return
        if c == "<" and s.startswith("<<", self.i):
            self.i += 2
            self.redirect = "in"  # here-string: the next word is data
        elif c == "<" and s.startswith("<", self.i):
            raise _Unsure("heredocs are not supported")
        elif s.startswith("&", self.i):
            self.i += 1
            self.redirect = "dup"
        elif (c == ">" and s[self.i : self.i + 1] in (">", "|")) or (
            c == "<" and s.startswith(">", self.i)
        ):
            self.i += 1  # `>>`, `>|` and `<>` write as much as `>`
            self.redirect = "out"
        else:
            self.redirect = "out" if c == ">" else "in"
