"""A child's profile is the meet of its parent's and its own: properties (hypothesis)
and the shipped profiles' order."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentdeck.core.policy import Decision, Profile, decide, profile_from_dict
from agentdeck.core.policy_inherit import looser, meet, sandbox_looser, sandbox_meet
from agentdeck.core.sandbox import SandboxSpec, sandbox_from_dict
from agentdeck.governance.profiles import load_profile

PLACES = [".", "src", "src/gen", "/tmp", "/tmp/x", "~/cache", "~", "/"]
HIDDEN = ["~/.ssh", "~/.aws", "secrets", "/etc/shadow", ".env"]
DOMAINS = ["pypi.org", "*.github.com", "api.github.com", "x.y.github.com", "*.y.github.com"]
RULES = ["Bash(git:*)", "Bash(ls:*)", "Read", "Read(src/**)", "Edit(/**)", "Bash(rm:*)", "WebFetch"]
TOOLS = ["Bash", "Read", "Edit", "Write", "WebFetch", "Grep"]


def unique(pool: list[str], **kw: Any) -> st.SearchStrategy[list[str]]:
    return st.lists(st.sampled_from(pool), unique=True, **kw)


@st.composite
def sandboxes(draw: st.DrawFn) -> dict[str, Any]:
    mode = draw(st.sampled_from(["off", "bash", "process"]))
    return {
        "mode": mode,
        "required": mode != "off" and draw(st.booleans()),
        "filesystem": {
            "allow_write": draw(unique(PLACES, min_size=1, max_size=3)),
            "deny_read": draw(unique(HIDDEN, max_size=3)),
            "deny_write": draw(unique(HIDDEN, max_size=3)),
        },
        "network": {
            "mode": draw(st.sampled_from(["off", "allowlist", "open"])),
            "allowed_domains": draw(unique(DOMAINS, max_size=3)),
        },
    }


budget_values = st.one_of(st.none(), st.integers(min_value=1, max_value=50))


@st.composite
def profiles(draw: st.DrawFn) -> Profile:
    enabled = draw(st.one_of(st.none(), unique(TOOLS, max_size=4)))
    data = {
        "name": "p",
        "default": draw(st.sampled_from(["allow", "ask", "deny"])),
        "allow": draw(unique(RULES, max_size=3)),
        "ask": draw(unique(RULES, max_size=2)),
        "deny": draw(unique(RULES, max_size=2)),
        "enabled_tools": enabled,
        "disabled_tools": draw(unique(TOOLS, max_size=2)),
        "budgets": {
            "max_turns": draw(budget_values),
            "max_usd": draw(budget_values),
            "max_repeated_calls": draw(budget_values),
        },
        "approval_timeout_seconds": draw(st.integers(min_value=1, max_value=900)),
        "sandbox": draw(sandboxes()),
    }
    return profile_from_dict(data, "p.yaml")


def as_sets(spec: SandboxSpec) -> dict[str, Any]:
    out = spec.to_dict()
    fs, net = out["filesystem"], out["network"]
    return {
        **out,
        "filesystem": {k: set(v) for k, v in fs.items()},
        "network": {**net, "allowed_domains": set(net["allowed_domains"])},
    }


@given(profiles(), profiles())
def test_the_meet_is_never_looser_than_either_side(parent: Profile, child: Profile) -> None:
    both = meet(parent, child)
    assert looser(both, parent) == []
    assert looser(both, child) == []
    for rule in (*parent.deny, *child.deny):
        assert rule.text in {r.text for r in both.deny}
    asks = (*child.ask, *(parent.ask if child.default is not Decision.DENY else ()))
    for rule in asks:
        assert rule.text in {r.text for r in both.ask}


@given(sandboxes(), sandboxes())
def test_the_sandbox_meet_is_commutative(a: dict[str, Any], b: dict[str, Any]) -> None:
    x, y = sandbox_from_dict(a, "a"), sandbox_from_dict(b, "b")
    assert as_sets(sandbox_meet(x, y)) == as_sets(sandbox_meet(y, x))
    assert sandbox_looser(sandbox_meet(x, y), x) == sandbox_looser(sandbox_meet(x, y), y) == []


@given(profiles())
def test_a_profile_met_with_itself_is_itself(profile: Profile) -> None:
    assert meet(profile, profile) == profile


@given(profiles(), profiles())
def test_a_child_that_is_not_looser_keeps_its_own_sandbox(parent: Profile, child: Profile) -> None:
    if looser(child, parent) or not parent.sandbox.enabled:
        return
    # As strict as the child's, neither more nor less (a path the parent names under
    # one the child names, or domains where the network is not an allow-list, may
    # stay or go in the meet: they change nothing).
    both = meet(parent, child).sandbox
    assert sandbox_looser(both, child.sandbox) == []
    assert sandbox_looser(child.sandbox, both) == []


STRICTNESS = {Decision.ALLOW: 0, Decision.ASK: 1, Decision.DENY: 2}


@settings(max_examples=600)
@given(
    profiles(),
    profiles(),
    st.sampled_from(["Bash", "Read", "Edit", "WebFetch"]),
    st.sampled_from(["git push", "ls -la", "rm -rf x", "src/a.py", "/etc/x", "https://a.io"]),
)
def test_a_call_the_meet_allows_or_asks_for_is_never_stricter_for_the_child(
    parent: Profile, child: Profile, tool: str, arg: str
) -> None:
    """As the Governor judges a child (under the meet and under its parent, the
    strictest answer winning), it never gets an answer looser than either profile's."""
    field = {"Bash": "command", "WebFetch": "url"}.get(tool, "file_path")

    def verdict(p: Profile) -> Decision:
        return decide(p, tool, {field: arg}, workspace="/w", home="/h").decision

    assert STRICTNESS[verdict(meet(parent, child))] >= STRICTNESS[verdict(child)]
    governed = max(verdict(meet(parent, child)), verdict(parent), key=STRICTNESS.__getitem__)
    assert STRICTNESS[governed] >= STRICTNESS[verdict(parent)]
    assert STRICTNESS[governed] >= STRICTNESS[verdict(child)]


@pytest.mark.parametrize(
    ("child", "parent", "loose"),
    [
        ("permissive", "strict", True),
        ("permissive", "default", True),
        ("default", "strict", True),
        ("strict", "default", False),
        ("strict", "permissive", False),
        ("default", "default", False),
        ("default", "permissive", False),  # a sandbox where the parent had none
    ],
)
def test_the_shipped_profiles_are_ordered(child: str, parent: str, loose: bool) -> None:
    assert bool(looser(load_profile(child), load_profile(parent))) is loose


def test_looser_names_every_axis() -> None:
    found = looser(load_profile("permissive"), load_profile("strict"))
    text = "\n".join(found)
    for words in ("sandbox is off", "required", "network is open", "default is allow", "max_turns"):
        assert words in text


def test_domains_and_places_meet_by_coverage() -> None:
    a = sandbox_from_dict(
        {
            "mode": "process",
            "filesystem": {"allow_write": [".", "/tmp"]},
            "network": {"mode": "allowlist", "allowed_domains": ["*.github.com", "pypi.org"]},
        },
        "a",
    )
    b = sandbox_from_dict(
        {
            "mode": "bash",
            "required": True,
            "filesystem": {"allow_write": ["src", "/var"]},
            "network": {"mode": "allowlist", "allowed_domains": ["api.github.com", "npmjs.org"]},
        },
        "b",
    )
    both = sandbox_meet(a, b)
    assert (str(both.mode), both.required) == ("process", True)
    assert both.allow_write == ("src",)
    assert both.allowed_domains == ("api.github.com",)


def test_a_parent_s_rules_say_they_are_inherited_and_a_shared_rule_stays_the_child_s() -> None:
    parent = profile_from_dict(
        {"name": "up", "deny": ["Bash(curl:*)", "Bash(rm:*)"], "ask": ["Bash(git push:*)"],
         "enabled_tools": ["Bash", "Read"]}, "up.yaml",
    )  # fmt: skip
    child = profile_from_dict({"name": "down", "deny": ["Bash(rm:*)"]}, "down.yaml")
    met = meet(parent, child)
    origins = {r.text: r.origin and r.origin.source for r in (*met.deny, *met.ask)}
    assert origins == {
        "Bash(curl:*)": "profile:up", "Bash(rm:*)": None, "Bash(git push:*)": "profile:up",
    }  # fmt: skip
    assert [r.text for r in met.deny] == ["Bash(curl:*)", "Bash(rm:*)"]  # the order kept
    assert meet(parent, child).deny[0] is met.deny[0]  # stamped once per parent list
    ws = {"workspace": "/w", "home": "/h"}
    curl = decide(met, "Bash", {"command": "curl x"}, **ws)
    assert curl.source == "profile:up"
    assert curl.reason.endswith("in the deny list of profile up, inherited from its parent")
    rm = decide(met, "Bash", {"command": "rm x"}, **ws)
    assert rm.source == "profile:down" and "in the deny list of profile down" in rm.reason
    web = decide(met, "WebFetch", {"url": "https://a.example/"}, **ws)
    assert web.decision is Decision.DENY and web.source == "profile:down + profile:up"
    assert "by profile down and profile up, inherited from its parent" in web.reason


def test_a_default_inherited_from_above_names_whose_it_is() -> None:
    """A child under a stricter parent defaults as the parent does; the reason and
    the source name the parent's profile, not the child's (which allows)."""
    strict, default, permissive = (load_profile(n) for n in ("strict", "default", "permissive"))
    for above in (strict, meet(strict, default)):  # a parent, a grandparent
        under = meet(above, permissive)
        verdict = decide(under, "Bash", {"command": "frobnicate --all"}, workspace="/w", home="/h")
        assert verdict.decision is Decision.DENY and verdict.source == "profile:strict"
        assert verdict.reason.endswith(
            "profile permissive defaults to deny, inherited from profile strict above it"
        ), verdict.reason
    own = decide(permissive, "Bash", {"command": "frobnicate --all"}, workspace="/w", home="/h")
    assert own.source == "profile:permissive" and "inherited" not in own.reason
    same = meet(default, load_profile("default"))  # the same default: its own
    assert same.default_from is None
