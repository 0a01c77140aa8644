"""Memory adapters: capture from hooks and the runner, storage, search, context."""
