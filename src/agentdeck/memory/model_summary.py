"""The optional model-written session summary: off by default, hard USD cap.

One Messages API request per finished session, sized so that it cannot cost
more than ``memory_summary_budget_usd`` even if the model uses every output
token it is allowed (input priced from a conservative token estimate). Unknown
models are priced as the most expensive family. Any failure — 429, 500, a
hang, a budget too small — leaves the token-free summary as it is.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import httpx

from agentdeck.core.memory import estimate_tokens
from agentdeck.settings import Settings

logger = logging.getLogger(__name__)

DEFAULT_BASE_URL = "https://api.anthropic.com"
REQUEST_TIMEOUT_SECONDS = 30.0
MAX_SUMMARY_TOKENS = 400
MIN_SUMMARY_TOKENS = 64
# USD per million tokens (input, output); unknown models pay the highest.
PRICES = {"haiku": (1.0, 5.0), "sonnet": (3.0, 15.0), "opus": (15.0, 75.0)}
INSTRUCTIONS = (
    "Summarize this coding session for the next session in the same project, in at most "
    "five short bullet points: what was asked, what was changed, what failed, what is left. "
    "Do not include secrets.\n\n"
)


@dataclass(frozen=True)
class Plan:
    max_tokens: int
    worst_case_usd: float


def prices(model: str) -> tuple[float, float]:
    for family, price in PRICES.items():
        if family in model:
            return price
    return PRICES["opus"]


def plan(prompt: str, model: str, budget_usd: float) -> Plan | None:
    """How many output tokens the budget affords; None if not enough for a summary."""
    price_in, price_out = prices(model)
    input_usd = estimate_tokens(prompt) * price_in / 1e6
    affordable = int((budget_usd - input_usd) * 1e6 / price_out)
    max_tokens = min(MAX_SUMMARY_TOKENS, affordable)
    if max_tokens < MIN_SUMMARY_TOKENS:
        return None
    return Plan(max_tokens, input_usd + max_tokens * price_out / 1e6)


@dataclass(frozen=True)
class ModelSummary:
    text: str
    cost_usd: float


def request_timeout(settings: Settings) -> float:
    """A hung model is bounded like the agents' own requests (AGENTDECK_API_TIMEOUT_SECONDS)."""
    return settings.api_timeout_seconds or REQUEST_TIMEOUT_SECONDS


async def summarize_with_model(settings: Settings, session_text: str) -> ModelSummary | None:
    """Ask the model; None when disabled, over budget or failed (logged)."""
    if not settings.memory_model_summary:
        return None
    prompt = INSTRUCTIONS + session_text
    model = settings.memory_summary_model
    budget = plan(prompt, model, settings.memory_summary_budget_usd)
    if budget is None:
        logger.info("model summary skipped: the budget cannot pay for it")
        return None
    headers = {"anthropic-version": "2023-06-01", "content-type": "application/json"}
    if settings.anthropic_api_key is not None:
        headers["x-api-key"] = settings.anthropic_api_key.get_secret_value()
    body = {
        "model": model,
        "max_tokens": budget.max_tokens,
        "messages": [{"role": "user", "content": prompt}],
    }
    url = (settings.anthropic_base_url or DEFAULT_BASE_URL).rstrip("/") + "/v1/messages"
    try:
        async with httpx.AsyncClient(timeout=request_timeout(settings)) as client:
            response = await client.post(url, json=body, headers=headers)
        response.raise_for_status()
        data = response.json()
        text = "".join(
            block.get("text", "") for block in data.get("content", []) if isinstance(block, dict)
        ).strip()
        usage = data.get("usage") or {}
    except (httpx.HTTPError, ValueError, AttributeError) as exc:
        logger.warning("model summary failed: %s", exc)
        return None
    price_in, price_out = prices(model)
    cost = (
        int(usage.get("input_tokens") or 0) * price_in
        + int(usage.get("output_tokens") or 0) * price_out
    ) / 1e6
    return ModelSummary(text, cost) if text else None
