"""The command line. Placeholder until the runner lands."""


def main() -> None:
    raise SystemExit(0)
