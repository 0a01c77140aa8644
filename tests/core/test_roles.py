from __future__ import annotations

import pytest

from agentdeck.core import token_hash
from agentdeck.core.roles import Principal, Role, parse_duration
from agentdeck.errors import UsageError


def test_roles_include_the_ones_below() -> None:
    assert Role.ADMIN.allows(Role.OPERATOR) and Role.OPERATOR.allows(Role.VIEWER)
    assert not Role.VIEWER.allows(Role.OPERATOR) and not Role.OPERATOR.allows(Role.ADMIN)
    assert Role.parse(" Operator ") is Role.OPERATOR
    with pytest.raises(UsageError, match="choose one of"):
        Role.parse("root")


def test_durations() -> None:
    assert parse_duration("30d") == 30 * 86400 and parse_duration("90m") == 5400
    for bad in ("", "0d", "5 years", "-1h", "1.5h"):
        with pytest.raises(UsageError):
            parse_duration(bad)


def test_principal_expiry() -> None:
    assert Principal("a", Role.VIEWER, "t1", expires_at=10.0).valid(9.9)
    assert not Principal("a", Role.VIEWER, "t1", expires_at=10.0).valid(10.0)


def test_token_hash_verifies_only_its_token() -> None:
    salt = token_hash.new_salt()
    digest = token_hash.digest("s3cret-token-value", salt)
    assert token_hash.verify("s3cret-token-value", salt, digest)
    assert not token_hash.verify("s3cret-token-valuE", salt, digest)
    assert "s3cret" not in digest and len(token_hash.lookup_key("x")) == 16
