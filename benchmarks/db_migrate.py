"""``agentdeck db migrate --to URL``: rows copied per second from a SQLite home into
PostgreSQL, and a second run (nothing to copy: every row compared, none written).

    .venv/bin/python benchmarks/db_migrate.py [--events 200000] [--batch 5000]

Builds a home with ``--events`` events (small assistant texts, one in ten a cost
update, so the hourly usage roll-up has rows too), 1,000 audit entries and a row
in every other table, starts a private PostgreSQL cluster (``tests.support.
pgcluster``: initdb + pg_ctl in a temporary directory, fsync off), and runs the
real command in a subprocess, twice, timing each from spawn to exit.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import REPO, clean_env, command_line, header

sys.path.insert(0, str(REPO))

from tests.support.decks_to_copy import fill_home
from tests.support.pgcluster import PgCluster, server_bin


def _migrate(env: dict[str, str], url: str, batch: int) -> tuple[float, dict[str, object]]:
    started = time.perf_counter()
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "agentdeck",
            "db",
            "migrate",
            "--to",
            url,
            "--json",
            "--batch",
            str(batch),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=3600,
        check=False,
    )
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        sys.exit(f"db migrate failed ({done.returncode}): {done.stderr}")
    return elapsed, json.loads(done.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=200_000)
    parser.add_argument("--batch", type=int, default=5000)
    args = parser.parse_args()
    bindir = server_bin()
    if bindir is None:
        sys.exit("no PostgreSQL server binaries (apt-get install postgresql)")
    header("agentdeck db migrate: SQLite home -> PostgreSQL")
    with tempfile.TemporaryDirectory(prefix="agentdeck-bench-") as tmp:
        home = Path(tmp) / "home"
        started = time.perf_counter()
        fill_home(home / "agentdeck.db", agents=50, events=args.events, audit=1000, batch=2000)
        size = (home / "agentdeck.db").stat().st_size / 1024**2
        print(f"home built in {time.perf_counter() - started:.1f} s: {size:.0f} MiB")
        cluster = PgCluster(Path(tempfile.mkdtemp(prefix="agentdeck-pg-")), bindir)
        cluster.start()
        try:
            url = cluster.database()
            env = clean_env(AGENTDECK_HOME=str(home))
            first, report = _migrate(env, url, args.batch)
            second, again = _migrate(env, url, args.batch)
        finally:
            cluster.stop("immediate")
    rows = int(report["copied"])  # type: ignore[call-overload]
    print(f"first run : {rows:,} rows in {first:.2f} s (process) = {rows / first:,.0f} rows/s")
    print(f"            the copier's own timing: {report['rows_per_second']:,} rows/s")
    print(f"second run: {again['copied']} rows copied, {second:.2f} s (every row compared)")
    print(f"audit chain verified on the target: {report['audit']}")
    print(f"command: {command_line()}")


if __name__ == "__main__":
    main()
