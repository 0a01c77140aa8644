"""The engine's short cuts give what the long way gives (hypothesis): a line of
plain words split without the character scanner, and a tier's screen of Bash and
path rules (one pattern for all) passing a unit exactly when one of its rules would."""

from __future__ import annotations

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from agentdeck.core import bash_split
from agentdeck.core.bash_split import split_command
from agentdeck.core.policy import Rule, _Entry
from agentdeck.core.policy_rules import Unit
from agentdeck.core.policy_screen import screen_of
from agentdeck.core.policy_subject import analyze

WS, HOME = "/work/repo", "/home/u"
PLAIN = "abcz019_./:=+,@%^~- \t"
ODD = "'\"\\$`;&|()<>*?[]{}#!\n\r\x0b\x0cé\u00a0\ue001"
WORDS = ["git", "status", "bash", "-c", "eval", "sh", "-lc", "if", "then", "for", "FOO=1",
         "PATH=/x", "sudo", "rm", "-rf", "/", "~", "time", "{", "}", "case", "x=y"]  # fmt: skip
RULES = [
    "Bash(git:*)", "Bash(git status:*)", "Bash(ls *)", "Bash(rm -rf /:*)", "Bash(sudo:*)",
    "Bash(*.ssh/*)", "Bash(sh)", "Bash(* --no-preserve-root*)", "Bash(a*b)", "Bash(x)",
    "Bash(dd * of=/dev/*)", "Bash(FOO=1 git:*)", "Bash(git * main)",
]  # fmt: skip


def scanned(source: str) -> bash_split.Split:
    """What the character scanner alone gives for ``source``."""
    out: list[bash_split.SimpleCommand] = []
    try:
        bash_split._Lexer(source, out, 0).parse(end=None)
    except bash_split._Unsure as exc:
        return bash_split.Split(tuple(out), exc.problem)
    return bash_split.Split(tuple(out)) if out else bash_split.Split((), "empty command")


lines = st.one_of(
    st.text(alphabet=PLAIN, max_size=60),
    st.lists(st.sampled_from(WORDS), max_size=8).map(" ".join),
    st.sampled_from(ODD).flatmap(  # plain words, one odd character among them
        lambda odd: st.lists(st.text(alphabet=PLAIN.strip() + odd, min_size=1, max_size=4),
                             max_size=6).map(" ".join)
    ),
)  # fmt: skip


@settings(max_examples=600, deadline=None)
@given(lines)
@example("#")
@example("ls a #b")
@example("rm -rf ~/*")
def test_a_plain_line_splits_as_the_scanner_splits_it(line: str) -> None:
    assert split_command(line) == scanned(line)


@pytest.mark.parametrize("odd", list(ODD))
def test_a_line_with_any_other_character_splits_as_the_scanner_splits_it(odd: str) -> None:
    for line in (odd, f"a{odd}", f"{odd}a", f"ls a {odd}b", f"X=1 {odd}y z", f"a{odd}{odd}b"):
        assert split_command(line) == scanned(line), repr(line)


def test_the_plain_path_is_taken_for_plain_words_only() -> None:
    assert bash_split._PLAIN.fullmatch("pytest -q tests/test_m1.py\t--x=1")
    for odd in ODD:
        assert not bash_split._PLAIN.fullmatch(f"ls {odd}"), repr(odd)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(RULES), max_size=8), lines)
def test_a_screen_passes_a_unit_exactly_when_one_of_its_rules_matches(
    texts: list[str], line: str
) -> None:
    entries = [_Entry(Rule.parse(t), "profile:p", "in the deny list") for t in texts]
    entries.append(_Entry(Rule.parse("Bash"), "profile:p", "in the deny list"))  # not screened
    screen = screen_of(entries)
    assert screen.others == [entries[-1]]
    units = analyze("Bash", {"command": line}, workspace=WS, home=HOME).units or (Unit("Bash"),)
    for unit in units:
        for allow, texts_of in ((False, unit.deny_texts), (True, unit.allow_texts)):
            want = [e for e in entries if e.rule.matches("Bash", unit, allow=allow,
                                                          workspace=WS, home=HOME)]  # fmt: skip
            walk = screen.walk(unit, texts_of, workspace=WS, home=HOME)
            got = [e for e in walk if e.rule.matches("Bash", unit, allow=allow,
                                                     workspace=WS, home=HOME)]  # fmt: skip
            assert got == want


PATH_RULES = [
    "Read(~/.ssh/**)", "Read(//etc/shadow)", "Read(/**)", "Read(src/**)", "Read(*.py)",
    "Edit(/src/**)", "Edit(//etc/**)", "Edit(~/.bashrc)", "Read(~)", "Read(//)", "Edit(a?c/[!x]*)",
    "Read(docs/)", "Edit(**/*.txt)",
]  # fmt: skip
PATHS = ["src/a.py", "a.py", "~/.ssh/id", "/etc/shadow", "/etc/x/y", "~", "/", "docs", "docs/x",
         "abc/yz", "b/c.txt", "../outside/a.py", "~/.bashrc", "/work/repo"]  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.sampled_from(PATH_RULES), max_size=8),
    st.sampled_from(["Read", "Edit", "Write", "Grep", "Glob", "LS"]),
    st.sampled_from(PATHS),
)
def test_a_path_screen_passes_a_unit_exactly_when_one_of_its_rules_matches(
    texts: list[str], tool: str, path: str
) -> None:
    entries = [_Entry(Rule.parse(t), "profile:p", "in a list") for t in texts]
    entries = [e for e in entries if e.rule.covers_tool(tool)]  # as a tier holds them
    entries.append(_Entry(Rule.parse(tool), "profile:p", "in a list"))  # not screened
    screen = screen_of(entries)
    field = "path" if tool in ("Grep", "Glob", "LS") else "file_path"
    units = analyze(tool, {field: path, "pattern": "*"}, workspace=WS, home=HOME).units
    for unit in units:
        for allow in (False, True):
            want = [e for e in entries if e.rule.matches(tool, unit, allow=allow,
                                                          workspace=WS, home=HOME)]  # fmt: skip
            walk = screen.walk(unit, (), workspace=WS, home=HOME)
            got = [e for e in walk if e.rule.matches(tool, unit, allow=allow,
                                                     workspace=WS, home=HOME)]  # fmt: skip
            assert got == want
