"""Notifications: the daemon tells webhooks, ntfy and the desktop what waits for a person."""
