"""Properties of the policy engine, checked with hypothesis."""

from __future__ import annotations

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from agentdeck.core.bash_split import split_command
from agentdeck.core.policy import Decision, Grant, decide, profile_from_dict

WS, HOME = "/work/repo", "/home/u"
RULE_POOL = [
    "Bash", "Bash(git:*)", "Bash(git status:*)", "Bash(ls *)", "Bash(echo:*)", "Bash(rm -rf build)",
    "Bash(npm run test:*)", "Bash(git * main)", "Bash(*)", "Read", "Read(src/**)",
    "Read(~/.ssh/**)", "Edit(/src/**)", "Edit(**/*.txt)", "Edit", "Write", "mcp__srv", "Grep",
    "Glob", "WebFetch(domain:example.com)",
]  # fmt: skip
WORDS = ["git", "status", "ls", "-la", "echo", "rm", "-rf", "build", "main", "npm", "run", "test",
         "x", "~", "/", "src/a.txt", "$HOME", "a*b", "'q w'", '"$(id)"', "FOO=1"]  # fmt: skip
SEPARATORS = [";", "&&", "||", "|", "&", "\n", " ; ", "|&"]

rules = st.lists(st.sampled_from(RULE_POOL), max_size=6)
simple = st.lists(st.sampled_from(WORDS), min_size=1, max_size=5).map(" ".join)
line = st.lists(simple, min_size=1, max_size=4).flatmap(
    lambda cmds: st.lists(st.sampled_from(SEPARATORS), min_size=len(cmds) - 1,
                          max_size=len(cmds) - 1).map(
        lambda seps: "".join(c + s for c, s in zip(cmds, [*seps, ""], strict=True))
    )
)  # fmt: skip
calls = st.one_of(
    line.map(lambda c: ("Bash", {"command": c})),
    st.text(max_size=40).map(lambda c: ("Bash", {"command": c})),
    st.sampled_from(["src/a.txt", "~/.ssh/id", "/etc/passwd", "src/../../x", "a.txt"]).flatmap(
        lambda p: st.sampled_from(["Read", "Edit", "Write", "Grep"]).map(
            lambda t: (t, {"path": p} if t == "Grep" else {"file_path": p})
        )
    ),
    st.sampled_from(["https://example.com/", "https://x.example.com", "bad"]).map(
        lambda u: ("WebFetch", {"url": u})
    ),
    st.sampled_from(["mcp__srv__a", "mcp__other__b", "TodoWrite"]).map(lambda t: (t, {})),
)
defaults = st.sampled_from(["allow", "ask", "deny"])


def judge(allow: list[str], deny: list[str], default: str, tool: str, inp: dict[str, str]) -> str:
    profile = profile_from_dict({"allow": allow, "deny": deny, "default": default}, "p.yaml")
    return decide(profile, tool, inp, workspace=WS, home=HOME).decision


@given(rules, rules, rules, defaults, calls)
def test_decisions_are_deterministic_and_explained(
    allow: list[str],
    ask: list[str],
    deny: list[str],
    default: str,
    call: tuple[str, dict[str, str]],
) -> None:
    tool, inp = call
    data = {"allow": allow, "ask": ask, "deny": deny, "default": default}
    first = decide(profile_from_dict(data, "p.yaml"), tool, inp, workspace=WS, home=HOME)
    again = decide(
        profile_from_dict(dict(data), "p.yaml"), tool, dict(inp), workspace=WS, home=HOME
    )
    assert first == again
    assert first.reason.strip() and first.source
    if first.rule is None:  # only the default, tool sets and unsure inputs have no rule
        assert "defaults to" in first.reason or "cannot be judged" in first.reason
    else:
        assert f"`{first.rule.split(', ')[0]}`" in first.reason


@given(rules, defaults, line)
def test_a_matching_deny_wins_over_any_allow_set(allow: list[str], default: str, cmd: str) -> None:
    split = split_command(cmd)
    assume(split.problem is None)
    for target in split.commands:
        if not target.words:
            continue
        plain = not target.dynamic_name and target.words[0].isalnum()
        deny = [f"Bash({target.words[0]}:*)"] if plain else ["Bash"]
        assert judge(allow, deny, default, "Bash", {"command": cmd}) == Decision.DENY
        grant = Grant(deny[0], Decision.DENY)
        profile = profile_from_dict({"allow": allow, "default": default}, "p.yaml")
        verdict = decide(profile, "Bash", {"command": cmd}, workspace=WS, home=HOME, grants=[grant])
        assert verdict.decision is Decision.DENY
    assert judge([*allow, "Bash"], ["Bash"], default, "Bash", {"command": cmd}) == Decision.DENY


@given(rules, calls)
def test_a_bare_deny_wins_for_every_tool(
    allow: list[str], call: tuple[str, dict[str, str]]
) -> None:
    tool, inp = call
    assert judge([*allow, tool], [tool], "allow", tool, inp) == Decision.DENY


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.sampled_from(["git status", "ls -la", "echo hi", "npm run test -- -x", "rm -rf build"]),
    st.sampled_from(SEPARATORS),
    st.one_of(line, st.text(max_size=30)),
    rules,
    st.sampled_from(["ask", "deny"]),
)
def test_no_allow_crosses_a_command_separator(
    allowed: str, sep: str, other: str, extra: list[str], default: str
) -> None:
    allow = ["Bash(git status:*)", "Bash(ls:*)", "Bash(echo:*)", "Bash(npm run test:*)",
             "Bash(rm -rf build)", *[r for r in extra if r.startswith("Bash(")]]  # fmt: skip
    assert judge(allow, [], default, "Bash", {"command": allowed}) == Decision.ALLOW
    combined = judge(allow, [], default, "Bash", {"command": allowed + sep + other})
    if combined == Decision.ALLOW:
        alone = judge(allow, [], default, "Bash", {"command": other})
        assert alone == Decision.ALLOW or split_command(other).problem == "empty command", other


@given(st.text(max_size=60))
def test_arbitrary_text_never_crashes_the_splitter(text: str) -> None:
    split = split_command(text)
    assert split.problem is not None or split.commands
