"""core.endpoints: a template's and a profile's model endpoint, the operator's
endpoints.yaml, and which endpoint an agent gets. Pure."""

from __future__ import annotations

from typing import Any

import pytest

from agentdeck.core.endpoints import (
    Endpoint,
    EndpointPolicy,
    ModelEndpoint,
    choose,
    endpoint_policy,
    parse_endpoints,
    parse_model_endpoint,
    policy_looser,
    policy_meet,
    same_place,
)
from agentdeck.errors import ConfigError, Refused

NAMED = {
    "gateway": Endpoint("gateway", "https://llm.example.com/anthropic", "GATEWAY_KEY"),
    "local": Endpoint("local", "http://127.0.0.1:4000", None),
}


def _parsed(value: Any) -> tuple[ModelEndpoint | None, list[str]]:
    problems: list[str] = []
    found = parse_model_endpoint(value, lambda key, why: problems.append(f"{key}: {why}"))
    return found, problems


def test_a_template_names_an_endpoint_or_gives_one_inline() -> None:
    assert _parsed("gateway") == (ModelEndpoint(name="gateway"), [])
    inline = {"base_url": "http://127.0.0.1:9/v1", "api_key_env": "LOCAL_KEY"}
    assert _parsed(inline) == (ModelEndpoint(None, "http://127.0.0.1:9/v1", "LOCAL_KEY"), [])
    assert _parsed({"base_url": "https://x.test"})[0] == ModelEndpoint(None, "https://x.test")
    assert _parsed(None) == (None, [])


@pytest.mark.parametrize(
    ("value", "said"),
    [
        ("Not A Name", "must name an endpoint"),
        (42, "must name an endpoint"),
        ({"base_url": "ftp://x.test"}, "http:// or https://"),
        ({"base_url": "https://me:pw@x.test"}, "may not hold a user or password"),
        ({"base_url": "https://x.test@evil.test"}, "may not hold a user or password"),
        ({"base_url": "https://x.test/?key=1"}, "query"),
        ({"base_url": "https://x.test/sk-ant-api03-" + "a" * 40}, "looks like a secret"),
        ({"base_url": "https://x.test", "api_key": "sk-1"}, "unknown key(s) `api_key`"),
        ({"base_url": "https://x.test", "api_key_env": "sk-ant-api03-abc"}, "variable's name"),
        ({"base_url": "https://x.test", "api_key_env": "ANTHROPIC_API_KEY"}, "deck's own"),
        ({"base_url": "https://x.test", "api_key_env": "AGENTDECK_TOKEN"}, "deck's own"),
        ({"base_url": "https://x.test", "api_key_env": "claude_code_oauth_token"}, "deck's own"),
        ({"base_url": "https://x.test", "api_key_env": "AWS_SECRET_ACCESS_KEY"}, "deck's own"),
    ],
)
def test_a_bad_model_endpoint_is_one_problem_line(value: Any, said: str) -> None:
    found, problems = _parsed(value)
    assert found is None and len(problems) == 1 and said in problems[0], problems
    assert problems[0].startswith("model_endpoint: ")


def test_endpoints_yaml_is_read_and_checked() -> None:
    data = {"gateway": {"base_url": "https://g.test", "api_key_env": "ANTHROPIC_API_KEY"}}
    # The operator may hand the deck's Anthropic key to an endpoint they name...
    assert parse_endpoints(data, "e.yaml")["gateway"].api_key_env == "ANTHROPIC_API_KEY"
    assert parse_endpoints(None, "e.yaml") == {}
    # ...never the deck's own tokens, nor a key in the file.
    for bad, said in [
        ({"g": {"base_url": "https://g.test", "api_key_env": "AGENTDECK_TOKEN"}}, "deck's own"),
        ({"g": {"base_url": "https://g.test", "api_key": "sk-1"}}, "must be {base_url"),
        ({"G W": {"base_url": "https://g.test"}}, "not an endpoint name"),
        ({"g": {"base_url": "file:///etc"}}, "http://"),
        (["g"], "must map endpoint names"),
    ]:
        with pytest.raises(ConfigError, match="e.yaml") as refused:
            parse_endpoints(bad, "e.yaml")
        assert said in refused.value.message, refused.value.message


def test_the_profile_decides_when_the_template_names_none() -> None:
    policy = EndpointPolicy(endpoint="local")
    assert choose(None, policy, NAMED, source="t") == NAMED["local"]
    assert choose(None, EndpointPolicy(), NAMED, source="t") is None
    assert choose(ModelEndpoint("gateway"), policy, NAMED, source="t") == NAMED["gateway"]


def test_a_name_endpoints_yaml_lacks_is_refused_naming_it() -> None:
    with pytest.raises(ConfigError, match="template t: no model endpoint named nowhere"):
        choose(ModelEndpoint("nowhere"), EndpointPolicy(), NAMED, source="template t")


def test_an_inline_endpoint_needs_the_operators_word() -> None:
    evil = ModelEndpoint(None, "https://evil.test/v1", "OPENAI_API_KEY")
    with pytest.raises(Refused, match="does not allow inline endpoints"):
        choose(evil, EndpointPolicy(), NAMED, source="t")
    # A profile allowing inline endpoints lets it through, with its own key's name.
    assert choose(evil, EndpointPolicy(inline=True), NAMED, source="t") == Endpoint(
        None, "https://evil.test/v1", "OPENAI_API_KEY"
    )
    # The base URL of a named endpoint is that endpoint, and only with its key.
    same = ModelEndpoint(None, "HTTPS://LLM.example.com:443/anthropic/")
    assert choose(same, EndpointPolicy(), NAMED, source="t") == NAMED["gateway"]
    other_key = ModelEndpoint(None, "https://llm.example.com/anthropic", "GITHUB_TOKEN")
    with pytest.raises(Refused, match="whose key is not GITHUB_TOKEN"):
        choose(other_key, EndpointPolicy(inline=True), NAMED, source="t")
    # Near is not the same: another host, another path.
    assert not same_place("https://llm.example.com.evil.test/anthropic", NAMED["gateway"].base_url)
    assert not same_place("https://llm.example.com/anthropic/x", NAMED["gateway"].base_url)


def test_a_profile_pins_the_endpoints_its_agents_use() -> None:
    pinned = EndpointPolicy(allowed=("local",), inline=True)
    with pytest.raises(Refused, match=r"not one its profile allows \(model_endpoints: local\)"):
        choose(ModelEndpoint("gateway"), pinned, NAMED, source="t")
    with pytest.raises(Refused, match="not one its profile allows"):
        choose(ModelEndpoint(None, "https://inline.test"), pinned, NAMED, source="t")
    assert (
        choose(ModelEndpoint(None, "http://127.0.0.1:4000/"), pinned, NAMED, source="t")
        == (NAMED["local"])
    )


def test_a_profiles_keys() -> None:
    def error(key: str, why: str) -> Exception:
        return ValueError(f"{key}: {why}")

    data = {"model_endpoint": "local", "model_endpoints": ["local", "gateway"]}
    assert endpoint_policy(data, error) == EndpointPolicy("local", ("local", "gateway"), False)
    assert endpoint_policy({}, error) == EndpointPolicy()
    for bad in (
        {"model_endpoint": {"base_url": "https://x.test"}},  # a profile names, never inlines
        {"model_endpoints": "local"},
        {"model_endpoint": "gateway", "model_endpoints": ["local"]},
        {"inline_endpoints": "yes"},
    ):
        with pytest.raises(ValueError):
            endpoint_policy(bad, error)


def test_a_child_gets_no_endpoint_its_parent_forbids() -> None:
    parent = EndpointPolicy("local", ("local", "gateway"), False)
    child = EndpointPolicy(None, None, True)
    met = policy_meet(parent, child)
    assert met == EndpointPolicy("local", ("local", "gateway"), False)
    assert policy_meet(EndpointPolicy(allowed=("a", "b")), EndpointPolicy(allowed=("b", "c"))) == (
        EndpointPolicy(allowed=("b",))
    )
    assert policy_looser(child, parent) == [
        "it allows inline model endpoints, its parent does not",
        "it allows model endpoints its parent does not: any",
    ]
    assert policy_looser(parent, child) == []


def test_a_profile_file_carries_its_endpoint_keys_to_children() -> None:
    from agentdeck.core.policy_inherit import looser, meet
    from agentdeck.core.policy_profile import profile_from_dict
    from agentdeck.errors import PolicyError

    parent = profile_from_dict(
        {"model_endpoint": "local", "model_endpoints": ["local", "gateway"]}, "parent.yaml"
    )
    child = profile_from_dict({"inline_endpoints": True}, "child.yaml")
    assert parent.endpoints == EndpointPolicy("local", ("local", "gateway"), False)
    assert meet(parent, child).endpoints == EndpointPolicy("local", ("local", "gateway"), False)
    assert "it allows inline model endpoints, its parent does not" in looser(child, parent)
    with pytest.raises(PolicyError, match="`model_endpoints` must list endpoint names"):
        profile_from_dict({"model_endpoints": "local"}, "bad.yaml")
