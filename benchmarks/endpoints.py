"""What a model endpoint adds to an agent's start: the home's endpoints.yaml read,
the endpoint chosen and its key looked up (``runner.endpoints.resolve`` then
``endpoint_env``), as every start with an endpoint does (twice: its sandbox's
and its options').

    .venv/bin/python benchmarks/endpoints.py [--runs 2000]

Prints the median of three timings per start, with and without an endpoint.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import timeit
from pathlib import Path

from agentdeck.core.agent import AgentSpec
from agentdeck.core.endpoints import ModelEndpoint
from agentdeck.runner.endpoints import endpoint_env, resolve
from agentdeck.settings import Settings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=2000)
    runs = parser.parse_args().runs
    home = Path(tempfile.mkdtemp(prefix="agentdeck-bench-"))
    (home / "endpoints.yaml").write_text(
        "alpha: {base_url: 'http://127.0.0.1:4000', api_key_env: BENCH_ENDPOINT_KEY}\n"
        "beta: {base_url: 'https://gateway.example.com/v1', api_key_env: OTHER_KEY}\n"
    )
    environ = {**os.environ, "BENCH_ENDPOINT_KEY": "not-a-key"}
    settings = Settings(home=home)
    named = AgentSpec(prompt="p", model_endpoint=ModelEndpoint("alpha"))
    plain = AgentSpec(prompt="p")

    def with_endpoint() -> None:
        endpoint = resolve(named, None, settings)
        assert endpoint is not None
        endpoint_env(endpoint, settings, environ)

    for label, step in (
        ("with an endpoint", with_endpoint),
        ("without", lambda: resolve(plain, None, settings)),
    ):
        times = [timeit.timeit(step, number=runs) / runs for _ in range(3)]
        print(f"{label}: {statistics.median(times) * 1e6:.1f} us per start")


if __name__ == "__main__":
    main()
