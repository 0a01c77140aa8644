"""What charging an agent's tree budget costs, per cost increase.

    .venv/bin/python benchmarks/tree_budget.py [--charges 200000] [--rounds 5]
    .venv/bin/python benchmarks/tree_budget.py --tree-from OLD_TREE_PY  # another core/tree.py

On SQLite (one process alone on its database) a session charges its
``BudgetNode`` itself: the guard's ``charge`` walks the node's ancestors. This
times that call on a leaf three levels down (each level with a limit, none
over): the median and the best of the rounds. ``--tree-from``: the same with another version of
``core/tree.py`` (``git show REV:src/agentdeck/core/tree.py > /tmp/tree.py``), in
the same run, rounds alternating, so drift on a shared machine hits both.

    .venv/bin/python benchmarks/tree_budget.py --postgres [--reads 300]

On a deck that may have runner hosts (PostgreSQL) a charge is followed by a
read of the tree from the store (``TreeBudgets.check``, off the charging call:
the session does not wait for it). This times that read for a root and three
queued children on a private PostgreSQL 15 cluster (``tests/support/pgcluster``),
median and p99 of ``--reads``.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import sys
import tempfile
import time
from pathlib import Path
from types import ModuleType
from typing import Any

from _common import header, median, percentile
from agentdeck.core import tree


def load(path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location("tree_other", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["tree_other"] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def per_charge_us(module: Any, charges: int) -> float:
    top = module.BudgetNode("root", 1e9)
    mid = module.BudgetNode("mid", 1e9, parent=top)
    leaf = module.BudgetNode("leaf", 1e9, parent=mid)
    charge = leaf.charge
    start = time.perf_counter()
    for _ in range(charges):
        charge(0.0001)
    return (time.perf_counter() - start) / charges * 1e6


async def check_ms(url: str, home: Path, reads: int) -> list[float]:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from tests.conftest import make_settings

    from agentdeck.core.agent import AgentSpec
    from agentdeck.daemon.compose import open_deck

    deck = await open_deck(make_settings(home, database_url=url))
    try:
        lead = await deck.create_agent(AgentSpec(prompt="lead", scenario="chat", budget_usd=9.0))
        orch = deck._orchestration
        kids = [await orch.spawn(lead.id, "task", budget_usd=1.0) for _ in range(3)]
        await orch.budget(await deck.get_agent(kids[0].id))
        times = []
        for _ in range(reads):
            start = time.perf_counter()
            await orch.budgets.check(kids[0].id)
            times.append((time.perf_counter() - start) * 1000)
        return times
    finally:
        await deck.close()


def postgres(reads: int) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from tests.support.pgcluster import PgCluster, server_bin

    bindir = server_bin()
    if bindir is None:
        sys.exit("no PostgreSQL server binaries (apt-get install postgresql)")
    base = Path(tempfile.mkdtemp(prefix="agentdeck-pg-bench-"))
    cluster = PgCluster(base, bindir)
    cluster.start()
    try:
        times = asyncio.run(check_ms(cluster.database(), base / "deck", reads))
    finally:
        cluster.stop()
    print(
        f"a tree read after a charge (PostgreSQL): {median(times):.2f} ms median, "
        f"{percentile(times, 99):.2f} ms p99 ({reads} reads)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--charges", type=int, default=200_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--tree-from", type=Path, default=None)
    parser.add_argument("--postgres", action="store_true")
    parser.add_argument("--reads", type=int, default=300)
    args = parser.parse_args()
    if args.postgres:
        header("tree budget: the tree read again after a charge (PostgreSQL)")
        postgres(args.reads)
        return
    header("tree budget: one charge (SQLite path: the node itself)")
    other = load(args.tree_from) if args.tree_from else None
    now: list[float] = []
    then: list[float] = []
    for _ in range(args.rounds):
        now.append(per_charge_us(tree, args.charges))
        if other is not None:
            then.append(per_charge_us(other, args.charges))
    print(f"this tree.py: {median(now):.3f} µs per charge median, {min(now):.3f} best")
    if other is not None:
        print(f"{args.tree_from}: {median(then):.3f} µs per charge median, {min(then):.3f} best")


if __name__ == "__main__":
    main()
