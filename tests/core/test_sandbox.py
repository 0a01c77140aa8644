"""A profile's sandbox block: validation, domains, paths, read-only writes."""

from __future__ import annotations

from typing import Any

import pytest

from agentdeck.core.sandbox import (
    DEFAULT_DENY_READ,
    NetworkMode,
    SandboxMode,
    SandboxSpec,
    absolute,
    blocked_writes,
    domain_allowed,
    sandbox_from_dict,
    valid_domain,
)
from agentdeck.errors import PolicyError


def test_an_absent_block_is_off_with_safe_defaults() -> None:
    for value in (None, {}):
        spec = sandbox_from_dict(value, "p.yaml")
        assert spec == SandboxSpec() and not spec.enabled
    spec = sandbox_from_dict({"mode": "process"}, "p.yaml")
    assert spec.network is NetworkMode.ALLOWLIST and spec.allowed_domains == ()
    assert spec.deny_read == DEFAULT_DENY_READ and ".git/hooks" in spec.deny_write
    assert spec.allow_write == (".",)


def test_a_full_block_round_trips() -> None:
    block = {
        "mode": "process",
        "required": True,
        "filesystem": {"allow_write": [".", "/tmp/x"], "deny_read": ["~/.ssh"], "deny_write": []},
        "network": {"mode": "allowlist", "allowed_domains": ["PyPI.org", "*.example.com"]},
    }
    spec = sandbox_from_dict(block, "p.yaml")
    assert spec.mode is SandboxMode.PROCESS and spec.required
    assert spec.allowed_domains == ("pypi.org", "*.example.com")
    assert spec.deny_write == ()
    assert sandbox_from_dict(spec.to_dict(), "p.yaml") == spec
    assert spec.summary() == "process, network allowlist (2 domains), required"
    assert SandboxSpec().summary() == "off"


@pytest.mark.parametrize(
    ("block", "says"),
    [
        ("process", "sandbox: must be a mapping"),
        ({"mode": "docker"}, "sandbox.mode: must be one of off, bash, process, not 'docker'"),
        ({"mode": "process", "requierd": True}, "unknown key `requierd`"),
        ({"mode": "process", "required": "yes"}, "sandbox.required: must be true or false"),
        ({"required": True}, "cannot be required with mode off"),
        ({"mode": "bash", "filesystem": ["."]}, "sandbox.filesystem: must be a mapping"),
        ({"mode": "bash", "filesystem": {"allow": ["."]}}, "sandbox.filesystem: unknown key"),
        ({"mode": "bash", "filesystem": {"deny_read": "~/.ssh"}}, "must be a list"),
        ({"mode": "bash", "filesystem": {"deny_read": ["a\0b"]}}, "NUL byte"),
        ({"mode": "bash", "network": {"mode": "some"}}, "sandbox.network.mode: must be one of"),
        ({"mode": "bash", "network": {"allowed_domains": ["http://x.org"]}}, "not a host name"),
        ({"mode": "bash", "network": {"allowed_domains": ["*"]}}, "not a host name"),
    ],
)
def test_a_mistake_is_named_with_its_file_and_line(block: Any, says: str) -> None:
    with pytest.raises(PolicyError) as info:
        sandbox_from_dict(block, "team.yaml", line=7)
    assert says in str(info.value)
    assert "team.yaml" in str(info.value) and "7" in str(info.value)


def test_domains() -> None:
    assert valid_domain("pypi.org") and valid_domain("*.github.com") and valid_domain("10.0.0.1")
    assert valid_domain("::1") and not valid_domain("a..b") and not valid_domain("a b.org")
    assert not valid_domain("*.") and not valid_domain("x" * 300)
    patterns = ("pypi.org", "*.githubusercontent.com", "10.0.0.1")
    assert domain_allowed("PyPI.org.", patterns)
    assert domain_allowed("raw.githubusercontent.com", patterns)
    assert not domain_allowed("githubusercontent.com", patterns)  # the apex is not below itself
    assert not domain_allowed("evilgithubusercontent.com", patterns)
    assert not domain_allowed("pypi.org.evil.com", patterns)
    assert domain_allowed("[10.0.0.1]", patterns) and not domain_allowed("10.0.0.2", patterns)


def test_paths_are_made_absolute_and_normal() -> None:
    where = {"workspace": "/w/a1", "home": "/home/u"}
    assert absolute(".", **where) == "/w/a1"
    assert absolute("build/../out", **where) == "/w/a1/out"
    assert absolute("~", **where) == "/home/u"
    assert absolute("~/.ssh", **where) == "/home/u/.ssh"
    assert absolute("~user/x", **where) == "/w/a1/~user/x"  # only the own home is expanded
    assert absolute("/tmp/../etc", **where) == "/etc"


@pytest.mark.parametrize(
    ("output", "paths"),
    [
        ("OSError: [Errno 30] Read-only file system: '/etc/x'", ["/etc/x"]),
        ("Error: EROFS: read-only file system, open '/srv/a.txt'", ["/srv/a.txt"]),
        ("EROFS: read-only file system, open '/srv/b.txt.tmp.2.ce95ec916de0'", ["/srv/b.txt"]),
        ("touch: cannot touch '/opt/y': Read-only file system", ["/opt/y"]),
        ("mkdir: cannot create directory \u2018/opt/d\u2019: Read-only file system", ["/opt/d"]),
        ("bash: /etc/z: Read-only file system", ["/etc/z"]),
        ("something: read-only file system", ["?"]),
        ("all good: wrote /w/a1/x", []),
    ],
)
def test_read_only_writes_are_found_in_tool_output(output: str, paths: list[str]) -> None:
    assert blocked_writes(output) == paths
