"""The cluster tests' fixture: API nodes and runner hosts on one PostgreSQL."""

from tests.support.cluster import cluster as cluster

__all__ = ["cluster"]
