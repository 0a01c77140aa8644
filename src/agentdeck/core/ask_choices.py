"""Multiple-choice questions: what Claude Code's ``AskUserQuestion`` asks, and
the answers a person gives to it. Pure.

The model writes the questions and their options, so they are the attacker's
text: bounded here (how many, how long), scrubbed by the caller's ``scrub``
before anyone keeps them, and only ever rendered escaped.

An ask that carries questions keeps them apart (``Ask.questions``, the asks
table's ``questions`` column), its ``text`` a readable rendering (numbered
options) that every client shows as it is.

Answers, as a person types them (``agentdeck answer``, a chat, the dashboard):

- one question: an option's label or number (``2``), several numbers or labels
  separated by commas when it takes more than one (``1,3``), or any other text
  (the "other" answer);
- several questions: ``1=Label;2=Other text`` (``;`` or new lines between them),
  every question answered.

An answer is kept in one canonical form (``canonical``): the value itself for a
single question, else one ``N=value`` line per question; ``tool_answers`` turns
it into what Claude Code takes back (each question's text to its answer, the
labels of a multiple choice joined with ``", "``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

TOOL = "AskUserQuestion"
MAX_QUESTIONS = 4
MAX_OPTIONS = 8
MAX_QUESTION_CHARS = 2_000
MAX_HEADER_CHARS = 60
MAX_LABEL_CHARS = 200
MAX_DESCRIPTION_CHARS = 1_000
MAX_ANSWER_CHARS = 4_000  # one question's answer
_NUMBERS = re.compile(r"^\s*\d+(\s*,\s*\d+)*\s*$")
_PART = re.compile(r"^\s*(\d+)\s*=(.*)$", re.DOTALL)


class ChoiceError(ValueError):
    """Questions or an answer that cannot be taken; the message says why."""


@dataclass(frozen=True)
class Choice:
    label: str
    description: str = ""


@dataclass(frozen=True)
class ChoiceQuestion:
    question: str
    header: str
    options: tuple[Choice, ...]
    multi_select: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "question": self.question,
            "header": self.header,
            "multiSelect": self.multi_select,
            "options": [{"label": o.label, "description": o.description} for o in self.options],
        }

    @classmethod
    def from_dict(
        cls, data: Mapping[str, Any], scrub: Callable[[str], str] = str
    ) -> ChoiceQuestion:
        """One question as the tool (or ``to_dict``) gives it; raises ChoiceError."""
        if not isinstance(data, Mapping):
            raise ChoiceError("a question is an object with question, header and options")
        question = _text(data.get("question"), "question", MAX_QUESTION_CHARS, scrub)
        if not question:
            raise ChoiceError("a question has no text")
        header = _text(data.get("header", ""), "header", MAX_HEADER_CHARS, scrub)
        raw = data.get("options") or []
        if not isinstance(raw, list) or not raw:
            raise ChoiceError(f"question {question[:60]!r} has no options")
        if len(raw) > MAX_OPTIONS:
            raise ChoiceError(f"a question has at most {MAX_OPTIONS} options, not {len(raw)}")
        options = []
        for item in raw:
            if not isinstance(item, Mapping):
                raise ChoiceError("an option is an object with a label and a description")
            label = _text(item.get("label"), "label", MAX_LABEL_CHARS, scrub)
            if not label:
                raise ChoiceError("an option has no label")
            desc = _text(item.get("description", ""), "description", MAX_DESCRIPTION_CHARS, scrub)
            options.append(Choice(label, desc))
        if len({o.label.casefold() for o in options}) < len(options):
            raise ChoiceError(f"question {question[:60]!r} has two options with the same label")
        multi = data.get("multiSelect", data.get("multi_select", False))
        return cls(question, header, tuple(options), multi_select=multi is True)


def _text(value: Any, what: str, limit: int, scrub: Callable[[str], str]) -> str:
    if value is None:
        value = ""
    if not isinstance(value, str):
        raise ChoiceError(f"a {what} is text")
    if len(value) > limit:
        raise ChoiceError(f"a {what} has at most {limit:,} characters, not {len(value):,}")
    return scrub(value).strip()


def questions_of(
    tool_input: Mapping[str, Any], scrub: Callable[[str], str] = str
) -> tuple[ChoiceQuestion, ...]:
    """The questions of an ``AskUserQuestion`` call, scrubbed and bounded."""
    raw = tool_input.get("questions")
    if not isinstance(raw, list) or not raw:
        raise ChoiceError("AskUserQuestion needs a list of questions")
    if len(raw) > MAX_QUESTIONS:
        raise ChoiceError(
            f"AskUserQuestion takes at most {MAX_QUESTIONS} questions, not {len(raw)}"
        )
    questions = tuple(ChoiceQuestion.from_dict(q, scrub) for q in raw)
    if len({q.question for q in questions}) < len(questions):
        raise ChoiceError("two questions have the same text")
    return questions


# -- the ask's text -------------------------------------------------------------------------


def rendered(questions: Sequence[ChoiceQuestion]) -> str:
    """The questions as plain text, options numbered: what a client that knows
    nothing of choices shows (and a person answers with a number or a label)."""
    blocks = []
    several = len(questions) > 1
    for n, q in enumerate(questions, 1):
        head = f"{n}. " if several else ""
        head += f"[{q.header}] " if q.header else ""
        lines = [head + q.question]
        for i, o in enumerate(q.options, 1):
            lines.append(f"  {i}) {o.label}" + (f": {o.description}" if o.description else ""))
        pick = "one or more (e.g. 1,2)" if q.multi_select else "one"
        lines.append(f"  (pick {pick}, or answer in your own words)")
        blocks.append("\n".join(lines))
    if several:
        blocks.append("Answer as 1=…;2=… (an option's number or label, or your own words).")
    return "\n\n".join(blocks)


# -- answers ------------------------------------------------------------------------------


def answer_values(questions: Sequence[ChoiceQuestion], text: str) -> list[str]:
    """Each question's answer (a label, labels joined by ", ", or other text) from
    what a person typed; raises ChoiceError saying what is wrong."""
    if not text.strip():
        raise ChoiceError("the answer is empty")
    if len(questions) == 1:
        m = _PART.match(text)
        value = m.group(2) if m and m.group(1) == "1" else text
        return [_value(questions[0], 1, value)]
    given: dict[int, str] = {}
    last: int | None = None
    for part in re.split(r"[;\n]", text):
        m = _PART.match(part)
        if m is None:
            if last is None:
                if not part.strip():
                    continue
                said = part.strip()[:40]
                raise ChoiceError(f"{len(questions)} questions: answer each as 1=…;2=… ({said!r}?)")
            given[last] += ";" + part  # a ';' inside a free-text answer
            continue
        last = int(m.group(1))
        if not 1 <= last <= len(questions):
            raise ChoiceError(f"there is no question {last} (1-{len(questions)})")
        if last in given:
            raise ChoiceError(f"question {last} is answered twice")
        given[last] = m.group(2)
    missing = [str(n) for n in range(1, len(questions) + 1) if n not in given]
    if missing:
        raise ChoiceError(f"question {', '.join(missing)} has no answer: answer every question")
    return [_value(q, n, given[n]) for n, q in enumerate(questions, 1)]


def _value(q: ChoiceQuestion, n: int, raw: str) -> str:
    value = " ".join(raw.split())  # one line: the canonical form is line-based
    if not value:
        raise ChoiceError(f"question {n} has no answer")
    if len(value) > MAX_ANSWER_CHARS:
        raise ChoiceError(f"an answer has at most {MAX_ANSWER_CHARS:,} characters")
    labels = {o.label.casefold(): o.label for o in q.options}
    if _NUMBERS.match(value):
        picked = []
        for num in (int(x) for x in value.split(",")):
            if not 1 <= num <= len(q.options):
                raise ChoiceError(f"question {n} has no option {num} (options 1-{len(q.options)})")
            picked.append(q.options[num - 1].label)
        if len(picked) > 1 and not q.multi_select:
            raise ChoiceError(f"question {n} takes one option, not {len(picked)}")
        return ", ".join(dict.fromkeys(picked))
    if value.casefold() in labels:
        return labels[value.casefold()]
    if q.multi_select:
        parts = [p.strip() for p in value.split(",")]
        found = [_pick(q, p, labels) for p in parts]
        if all(found):
            return ", ".join(dict.fromkeys(f for f in found if f))
    return value  # the person's own words


def _pick(q: ChoiceQuestion, part: str, labels: Mapping[str, str]) -> str | None:
    if part.isdigit() and 1 <= int(part) <= len(q.options):
        return q.options[int(part) - 1].label
    return labels.get(part.casefold())


def canonical(questions: Sequence[ChoiceQuestion], values: Sequence[str]) -> str:
    if len(questions) == 1:
        return values[0]
    return "\n".join(f"{n}={v}" for n, v in enumerate(values, 1))


def normalized(questions: Sequence[ChoiceQuestion], text: str) -> str:
    """What a person typed, checked and in the canonical form."""
    return canonical(questions, answer_values(questions, text))


def from_structured(questions: Sequence[ChoiceQuestion], answers: Mapping[str, Any]) -> str:
    """An API's answers (question number, text or header → a label or number, a
    list of them, or other text) in the canonical form; raises ChoiceError."""
    values: dict[int, str] = {}
    for key, given in answers.items():
        n = _question_number(questions, str(key))
        if isinstance(given, list):
            if not given or not all(isinstance(g, str | int) for g in given):
                raise ChoiceError(f"question {n}'s answer is a list of labels or numbers")
            picked = [
                _pick(questions[n - 1], str(g).strip(), _labels(questions[n - 1])) for g in given
            ]
            if not all(picked):
                raise ChoiceError(f"question {n}: {given!r} are not all its options")
            if len(picked) > 1 and not questions[n - 1].multi_select:
                raise ChoiceError(f"question {n} takes one option, not {len(picked)}")
            values[n] = ", ".join(dict.fromkeys(p for p in picked if p))
        elif isinstance(given, str | int) and not isinstance(given, bool):
            values[n] = _value(questions[n - 1], n, str(given))
        else:
            raise ChoiceError(f"question {n}'s answer is text, a number or a list")
    missing = [str(n) for n in range(1, len(questions) + 1) if n not in values]
    if missing:
        raise ChoiceError(f"question {', '.join(missing)} has no answer: answer every question")
    return canonical(questions, [values[n] for n in range(1, len(questions) + 1)])


def _labels(q: ChoiceQuestion) -> dict[str, str]:
    return {o.label.casefold(): o.label for o in q.options}


def _question_number(questions: Sequence[ChoiceQuestion], key: str) -> int:
    if key.strip().isdigit() and 1 <= int(key) <= len(questions):
        return int(key)
    for n, q in enumerate(questions, 1):
        if key in (q.question, q.header):
            return n
    raise ChoiceError(f"there is no question {key[:60]!r} (1-{len(questions)})")


def tool_answers(
    asked: Sequence[Mapping[str, Any]], questions: Sequence[ChoiceQuestion], stored: str
) -> dict[str, str]:
    """The ``answers`` Claude Code takes back: each question's text as the model
    wrote it (``asked``: the call's own questions) to its answer."""
    values = answer_values(questions, stored)
    return {str(q.get("question", "")): v for q, v in zip(asked, values, strict=False)}
