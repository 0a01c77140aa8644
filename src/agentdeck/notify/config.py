"""Read the notification targets: ``notify.yaml`` in the home, or AGENTDECK_NOTIFY_CONFIG.

Fail closed: a file that does not parse, or a target that is wrong, stops the
daemon's start with the file and the field named. A file holding a webhook
secret must be readable by its owner only.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from agentdeck.core.notify import NotifyConfigError, Target, parse_targets
from agentdeck.errors import ConfigError
from agentdeck.settings import Settings


def config_path(settings: Settings) -> Path:
    return settings.notify_config or settings.home_dir / "notify.yaml"


def load_targets(settings: Settings) -> list[Target]:
    path = config_path(settings)
    if not path.exists():
        if settings.notify_config is not None:
            raise ConfigError(
                f"the notification config {path} does not exist",
                hint="create it, or unset AGENTDECK_NOTIFY_CONFIG",
            )
        return []
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise ConfigError(
            f"the notification config {path} could not be read: {exc}",
            hint="see docs/settings.md (notifications)",
        ) from None
    try:
        targets = parse_targets(data)
    except NotifyConfigError as exc:
        raise ConfigError(
            f"invalid notification config {path}: {exc.field}: {exc.problem}",
            hint="see the README's Team section for the file's shape",
        ) from None
    if any(t.secret for t in targets) and path.stat().st_mode & 0o077:
        raise ConfigError(
            f"the notification config {path} holds a secret and others may read it",
            hint=f"chmod 600 {path}",
        )
    return targets
