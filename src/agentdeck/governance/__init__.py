"""Governance adapters: profile files in, decisions of the pure engine (``core.policy``) out."""
