"""Where things live under agentdeck's home: the paths ``Settings`` derives from
``home``, and making the home's layout."""

from __future__ import annotations

from pathlib import Path

from agentdeck.errors import ConfigError


class HomeLayout:
    """Mixed into ``Settings``, which holds ``home``."""

    home: Path

    @property
    def home_dir(self) -> Path:
        return self.home.expanduser().resolve()

    @property
    def db_path(self) -> Path:
        return self.home_dir / "agentdeck.db"

    @property
    def workspaces_dir(self) -> Path:
        return self.home_dir / "workspaces"

    @property
    def payloads_dir(self) -> Path:
        return self.home_dir / "payloads"

    @property
    def worktrees_dir(self) -> Path:
        return self.home_dir / "worktrees"

    @property
    def checkpoints_dir(self) -> Path:
        return self.home_dir / "checkpoints"

    @property
    def logs_dir(self) -> Path:
        return self.home_dir / "logs"

    @property
    def bridges_dir(self) -> Path:
        """The chat bridges' state (conversations, open prompts) and action logs."""
        return self.home_dir / "bridges"

    @property
    def socket_path(self) -> Path:
        """Where the daemon listens for the hook client."""
        return self.home_dir / "daemon.sock"

    @property
    def hooks_config_path(self) -> Path:
        """Deadline and fallbacks for the hook client, which cannot read settings."""
        return self.home_dir / "hooks.json"

    def ensure_home(self) -> Path:
        """Create the home layout; a clear ``ConfigError`` if that is impossible. A
        home made here is private (0700): it holds the API token and the event log."""
        home = self.home_dir
        try:
            home.mkdir(mode=0o700, parents=True, exist_ok=True)
            for d in (self.workspaces_dir, self.payloads_dir, self.logs_dir):
                d.mkdir(parents=True, exist_ok=True)
            probe = home / ".write-probe"
            probe.write_text("ok")
            probe.unlink()
        except OSError as exc:
            raise ConfigError(
                f"agentdeck home {home} is not writable: {exc.strerror or exc}",
                hint="set AGENTDECK_HOME to a writable directory",
            ) from exc
        return home
