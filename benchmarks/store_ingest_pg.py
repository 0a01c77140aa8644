"""Store ingest on PostgreSQL next to SQLite: persisted events per second.

    .venv/bin/python benchmarks/store_ingest_pg.py [--events 50000] [--tasks 50]

The same load as ``store_ingest.py`` (``--tasks`` concurrent asyncio tasks, 1 and
20 events per ``append``), into a fresh SQLite file and into a fresh database on
a private PostgreSQL 15 cluster started for the run (``tests/support/pgcluster``:
initdb + pg_ctl in a temporary directory, fsync off as in the tests), one
process writing. Each PostgreSQL write transaction takes the store's advisory
write lock, as in production.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.store_ingest import _ingest
from tests.support.pgcluster import PgCluster, server_bin


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=50_000)
    parser.add_argument("--tasks", type=int, default=50)
    parser.add_argument("--batch-size", type=int, default=500)
    args = parser.parse_args()
    bindir = server_bin()
    if bindir is None:
        sys.exit("no PostgreSQL server binaries (apt-get install postgresql)")
    base = Path(tempfile.mkdtemp(prefix="agentdeck-pg-bench-"))
    cluster = PgCluster(base, bindir)
    cluster.start()
    try:
        print(
            f"store ingest: {args.events} events, {args.tasks} tasks, batch_size={args.batch_size}"
        )
        with tempfile.TemporaryDirectory() as tmp:
            for chunk in (1, 20):
                for name, target in (
                    ("sqlite", Path(tmp) / f"chunk{chunk}.db"),
                    ("postgresql", cluster.database()),
                ):
                    rate = asyncio.run(
                        _ingest(
                            target,  # type: ignore[arg-type]  # a URL opens too
                            total=args.events,
                            tasks=args.tasks,
                            chunk=chunk,
                            batch_size=args.batch_size,
                        )
                    )
                    print(f"  {name:>10}, chunks of {chunk:>2}: {rate:>10,.0f} events/s")
    finally:
        cluster.stop("immediate")
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
