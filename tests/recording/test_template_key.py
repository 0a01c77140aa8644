"""A template's ``record: true`` records the agents made from it."""

from __future__ import annotations

import pytest

from agentdeck.core.agent import AgentSpec
from agentdeck.core.templates import Template, apply_template, parse_template
from agentdeck.errors import TemplateError
from agentdeck.runner.recording.service import mode_for
from agentdeck.settings import Settings

FRONT = {"name": "taped", "description": "Recorded."}


def test_record_true_in_a_template_records_its_agents() -> None:
    template = parse_template({**FRONT, "record": True}, "body", "x/taped.md")
    assert template.record is True
    spec = apply_template(template, AgentSpec(prompt="go"))
    assert spec.record is True
    assert mode_for(spec, Settings()) == "all"
    assert Template.from_dict(template.to_dict()).record is True


def test_without_the_key_nothing_is_recorded_unless_asked() -> None:
    template = parse_template(FRONT, "body", "x/taped.md")
    assert apply_template(template, AgentSpec(prompt="go")).record is False
    assert apply_template(template, AgentSpec(prompt="go", record=True)).record is True
    assert mode_for(AgentSpec(prompt="go"), Settings(record="errors")) == "errors"
    assert mode_for(AgentSpec(prompt="go"), Settings(record="none")) is None


@pytest.mark.parametrize("value", ["yes", 1, "true", None, [True]])
def test_record_must_be_a_boolean(value: object) -> None:
    with pytest.raises(TemplateError, match="record: must be true or false"):
        parse_template({**FRONT, "record": value}, "body", "x/taped.md")
