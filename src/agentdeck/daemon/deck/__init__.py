"""The Deck: the one way into what the daemon serves (``Deck``), with the types
its methods return that are not the core's (``StoreStats``) and the identity
service the web layer authenticates against (``Identity``)."""

from agentdeck.daemon.deck.facade import Deck as Deck
from agentdeck.daemon.identity import Identity as Identity
from agentdeck.store.reads import StoreStats as StoreStats

__all__ = ["Deck", "Identity", "StoreStats"]
