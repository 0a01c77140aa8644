"""``agentdeck usage`` and ``agentdeck budgets``, run as a user would: real
subprocesses, real agents on the scripted model, with and without a daemon."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from tests.cli.test_quick import heavy, loaded_modules
from tests.support.daemonproc import Daemon
from tests.support.deckcli import deck, deck_env

pytestmark = pytest.mark.cli

HELLO = ("run", "--scenario", "chat", "Hello! Who are you?")


def test_embedded_agents_count_for_local_and_a_budget_stops_the_next(tmp_path: Path) -> None:
    env = deck_env(tmp_path)
    for _ in range(2):
        assert deck(env, *HELLO).code == 0
    agents = deck(env, "ls", "--json").json()
    assert {a["spec"]["owner"] for a in agents} == {"local"}
    spent = sum(a["cost_usd"] for a in agents)
    assert spent > 0
    usage = deck(env, "usage", "--by", "user", "--json")
    assert usage.code == 0, usage.err
    (group,) = usage.json()["groups"]
    assert group["key"] == "local" and math.isclose(group["cost_usd"], spent, rel_tol=1e-9)
    text = deck(env, "usage", "--by", "user", "--bucket", "hour")
    assert text.code == 0 and "by user" in text.out and "local" in text.out

    assert deck(env, "budgets", "set", "--user", "local", str(spent / 2)).code == 0
    listed = deck(env, "budgets", "ls", "--json").json()
    assert listed == [
        {
            "scope": "user",
            "name": "local",
            "daily_usd": spent / 2,
            "spent_today_usd": listed[0]["spent_today_usd"],
        }
    ]
    assert math.isclose(listed[0]["spent_today_usd"], spent, rel_tol=1e-9)
    refused = deck(env, *HELLO)
    assert refused.code != 0
    assert "user local's daily budget exceeded" in refused.out + refused.err
    assert deck(env, "budgets", "rm", "--user", "local").code == 0
    assert deck(env, *HELLO).code == 0  # no budget: it runs again


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("budgets", "set", "5"), "name one budget"),
        (("budgets", "set", "--user", "a", "--project", "/p", "5"), "name one budget"),
        (("budgets", "set", "--user", "a", "--", "-1"), ">= 0"),
        (("budgets", "rm", "--user", "nobody"), "no user budget"),
        (("usage", "--since", "7x"), "cannot read the period '7x'"),
    ],
)
def test_bad_input_is_one_clear_line_and_changes_nothing(
    tmp_path: Path, args: tuple[str, ...], message: str
) -> None:
    env = deck_env(tmp_path)
    done = deck(env, *args)
    assert done.code != 0 and message in done.err, done
    assert deck(env, "budgets", "ls", "--json").json() == []


@pytest.mark.anyio
async def test_through_a_daemon_usage_is_quick_and_says_the_same(
    tmp_path: Path, daemons: list[Daemon]
) -> None:
    env = deck_env(tmp_path)
    daemons.append(await Daemon(env).start())
    assert deck(env, *HELLO).code == 0
    (agent,) = deck(env, "ls", "--json").json()
    assert agent["spec"]["owner"] == "admin"  # the legacy token's user
    code, modules, errors = loaded_modules(env, "usage", "--by", "user", "--json")
    assert code == 0, errors
    assert heavy(modules) == set() and "agentdeck.cli.quick" in modules
    usage = deck(env, "usage", "--by", "user", "--json").json()
    assert usage["groups"][0]["key"] == "admin"
    assert math.isclose(usage["total"]["cost_usd"], agent["cost_usd"], rel_tol=1e-9)
    bad = deck(env, "usage", "--since", "7x")
    assert bad.code != 0 and "cannot read the period" in bad.err
