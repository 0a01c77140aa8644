"""The Deck's webhook triggers: one signed delivery to ``POST /hooks/NAME`` in, an
agent of the trigger's template out (``core.triggers``; the rows in
``store.triggers``; the HTTP side, size cap and Host check in ``web.hooks_api``).

Each refusal is an answer, not an error, and starts nothing: 401 a missing or wrong
signature, or no trigger of that name (the same answer, so an unsigned sender cannot
list the deck's triggers by name; each logged as an audit line without the body),
503 its secret file cannot be used, 400 no delivery id or no JSON object, 409 a delivery
id seen within a day, 429 past the rate, 422 the prompt template failed on this
payload; else 202 and the agent's id.
"""

from __future__ import annotations

import json
import logging
from typing import cast

from agentdeck.core.agent import AgentSpec
from agentdeck.core.redact import scrub_value
from agentdeck.core.triggers import (
    HookAnswer,
    Trigger,
    check_delivery_id,
    check_name,
    signature_ok,
)
from agentdeck.daemon.deck.agents import Agents
from agentdeck.daemon.deck.parts import DeckParts
from agentdeck.errors import AgentdeckError, ConfigError, NotFound, UsageError
from agentdeck.orchestration.trigger_prompts import render_prompt
from agentdeck.store.triggers import TriggerStore, read_secret

logger = logging.getLogger(__name__)
BAD_SIGNATURE = HookAnswer(401, "missing or bad X-Hub-Signature-256")


def _printable(event: str | None) -> str:
    event = (event or "")[:100]
    return event if event and event.isprintable() else "unknown"


def _refused(
    name: str, why: str, delivery: str | None, event: str | None, peer: str, body: bytes
) -> None:
    logger.warning(
        "audit: trigger %r refused a delivery (%s), delivery %r, event %r, from %s, %d bytes",
        name[:100],
        why,
        (delivery or "")[:100],
        _printable(event),
        peer,
        len(body),
    )


class Triggers(DeckParts):
    async def receive_webhook(
        self,
        name: str,
        body: bytes,
        *,
        signature: str | None,
        delivery: str | None,
        event: str | None,
        peer: str = "?",
    ) -> HookAnswer:
        """Take one webhook delivery for trigger ``name`` (``body`` as it came, its
        ``X-Hub-Signature-256``, ``X-GitHub-Delivery`` and ``X-GitHub-Event``)."""
        store = TriggerStore(self._store)
        try:
            trigger = await store.get(check_name(name))
        except (UsageError, NotFound):
            _refused(name, "an unknown trigger", delivery, event, peer, body)
            return BAD_SIGNATURE
        try:
            secret = read_secret(trigger.secret_file)
        except ConfigError as exc:
            logger.error("trigger %s: its secret cannot be used: %s", name, exc)
            return HookAnswer(503, "this trigger's secret cannot be used (see the daemon's log)")
        event = _printable(event)
        if not signature_ok(secret, body, signature):
            why = "no signature" if signature is None else "a bad signature"
            _refused(name, why, delivery, event, peer, body)
            return BAD_SIGNATURE
        try:
            delivery = check_delivery_id(delivery)
            payload = json.loads(body)
        except UsageError as exc:
            return HookAnswer(400, str(exc))
        except (ValueError, RecursionError):  # RecursionError: nested past Python's stack
            return HookAnswer(400, "the payload is not JSON (or nested too deep)")
        if not isinstance(payload, dict):
            return HookAnswer(400, "the payload is no JSON object")
        try:
            await store.admit(trigger, delivery, event)
        except AgentdeckError as exc:
            return HookAnswer(exc.http_status, str(exc))
        return await self._started(store, trigger, delivery, event, payload)

    async def _started(
        self,
        store: TriggerStore,
        trigger: Trigger,
        delivery: str,
        event: str,
        payload: dict[str, object],
    ) -> HookAnswer:
        try:
            prompt = render_prompt(trigger.prompt_template, payload, event=event, delivery=delivery)
            spec = AgentSpec(
                prompt=prompt,
                project=trigger.project,
                scenario=trigger.scenario,
                owner=trigger.created_by,
            )
            # The Deck composes both parts: an agent starts as ``create_agent`` starts it,
            # answered once it exists: the sender (GitHub waits 10 s) is not held
            # while its Claude Code boots.
            agent = await cast(Agents, self).create_agent(
                spec, template=trigger.template, background=True
            )
        except AgentdeckError as exc:
            status = 422 if isinstance(exc, UsageError) else exc.http_status
            await store.settle(trigger.name, delivery, status=status, outcome=str(exc))
            logger.warning(
                "trigger %s: delivery %r started no agent: %s", trigger.name, delivery, exc
            )
            return HookAnswer(status, str(exc), delivery=delivery)
        try:
            kept: str | None = json.dumps(scrub_value(payload))
        except RecursionError:  # nested too deep to scrub: not kept at all
            kept = None
        await store.settle(
            trigger.name, delivery, status=202, outcome="started", agent_id=agent.id, payload=kept
        )
        logger.info("trigger %s: delivery %r started agent %s", trigger.name, delivery, agent.id)
        return HookAnswer(202, "started", agent_id=agent.id, delivery=delivery)
