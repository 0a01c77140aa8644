"""``agentdeck tui``'s errors before any screen is drawn: one clear line, no traceback."""

from __future__ import annotations

from pathlib import Path

from tests.support.deckcli import deck, deck_env


def test_without_a_daemon_and_without_start_it_says_how_to_get_one(tmp_path: Path) -> None:
    done = deck(deck_env(tmp_path), "tui", "--no-start")
    assert done.code == 1
    assert "no agentdeck daemon is running for" in done.err
    assert "agentdeck up -d" in done.err and "Traceback" not in done.err


def test_bad_remote_options_are_usage_errors(tmp_path: Path) -> None:
    env = deck_env(tmp_path)
    alone = deck(env, "tui", "--token", "secret")
    assert alone.code == 2 and "--token and --token-file go with --url" in alone.err
    no_scheme = deck(env, "tui", "--url", "localhost:8765", "--token", "secret")
    assert no_scheme.code == 2 and "http(s) URL" in no_scheme.err
    assert "secret" not in no_scheme.err  # a token is never echoed
    no_token = deck(env, "tui", "--url", "http://127.0.0.1:9")
    assert no_token.code == 2 and "needs --token" in no_token.err
    missing = deck(env, "tui", "--url", "http://127.0.0.1:9", "--token-file", str(tmp_path / "no"))
    assert missing.code == 2 and "cannot read the token file" in missing.err
    (tmp_path / "t").write_text("secret\n")
    twice = deck(
        env, "tui", "--url", "http://x:1", "--token", "a", "--token-file", str(tmp_path / "t")
    )
    assert twice.code == 2 and "give the token once" in twice.err
