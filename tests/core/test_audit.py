"""The hash chain, pure: canonical form, sealing, and what ``verify`` reports."""

from __future__ import annotations

import dataclasses
import hashlib
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentdeck.core.audit import (
    FORMAT,
    GENESIS,
    AuditDecision,
    AuditEntry,
    AuditProblem,
    AuditRecord,
    canonical_form,
    entry_hash,
    input_digest,
    seal,
    verify,
)


def record(n: int, **changes: object) -> AuditRecord:
    fields: dict[str, object] = {
        "ts": 1_700_000_000.0 + n,
        "agent_id": f"a{n % 3}",
        "tool": "Bash",
        "input_digest": input_digest({"command": f"echo {n}"}),
        "decision": AuditDecision.ALLOW,
        "reason": f"rule {n} matched",
        "rule": "Bash(echo *)",
        "answered_by": "policy",
    }
    fields.update(changes)
    return AuditRecord(**fields)  # type: ignore[arg-type]


def chain(n: int) -> list[AuditEntry]:
    entries: list[AuditEntry] = []
    prev = GENESIS
    for i in range(1, n + 1):
        entry = seal(prev, i, record(i))
        entries.append(entry)
        prev = entry.hash
    return entries


def test_input_digest_is_sha256_of_canonical_json() -> None:
    digest = input_digest({"b": 1, "a": "ü"})
    assert digest == hashlib.sha256('{"a":"ü","b":1}'.encode()).hexdigest()
    assert digest == input_digest({"a": "ü", "b": 1})


def test_canonical_form_is_explicit_and_versioned() -> None:
    r = record(1, rule=None)
    form = json.loads(canonical_form(GENESIS, 1, r))
    assert form == [
        FORMAT,
        1,
        GENESIS,
        r.ts,
        r.agent_id,
        "Bash",
        r.input_digest,
        "allow",
        None,
        r.reason,
        "policy",
    ]
    assert FORMAT == "agentdeck-audit-v1"
    assert entry_hash(GENESIS, 1, r) == hashlib.sha256(canonical_form(GENESIS, 1, r)).hexdigest()


def test_an_integer_ts_hashes_like_the_float_the_database_returns() -> None:
    assert entry_hash(GENESIS, 1, record(1, ts=5)) == entry_hash(GENESIS, 1, record(1, ts=5.0))


@pytest.mark.parametrize("field", ["ts", "agent_id", "tool", "input_digest", "rule", "reason"])
def test_every_field_is_covered_by_the_hash(field: str) -> None:
    r = record(1)
    value = 1.5 if field == "ts" else "other"
    assert entry_hash(GENESIS, 1, r) != entry_hash(
        GENESIS, 1, dataclasses.replace(r, **{field: value})
    )  # type: ignore[arg-type]
    assert entry_hash(GENESIS, 1, r) != entry_hash(GENESIS, 2, r)
    assert entry_hash(GENESIS, 1, r) != entry_hash("1" * 64, 1, r)


def test_none_and_the_string_null_differ() -> None:
    assert entry_hash(GENESIS, 1, record(1, rule=None)) != entry_hash(
        GENESIS, 1, record(1, rule="null")
    )


def test_unknown_decision_and_non_finite_ts_are_refused() -> None:
    with pytest.raises(ValueError):
        record(1, decision="maybe")
    with pytest.raises(ValueError):
        record(1, ts=float("nan"))


def test_an_intact_chain_verifies() -> None:
    entries = chain(50)
    result = verify(entries)
    assert result.ok and result.count == 50 and result.head == entries[-1].hash
    assert result.entry_id is None and result.problem is None
    empty = verify([])
    assert empty.ok and empty.count == 0 and empty.head == GENESIS


def test_an_edited_entry_is_reported_at_its_id() -> None:
    entries = chain(10)
    entries[4] = dataclasses.replace(entries[4], decision=AuditDecision.DENY)
    result = verify(entries)
    assert not result.ok
    assert (result.entry_id, result.problem, result.count) == (5, AuditProblem.EDITED, 4)
    assert result.head == entries[3].hash
    assert "entry 5 was edited" in result.message


def test_an_edit_with_a_recomputed_hash_breaks_the_next_link() -> None:
    entries = chain(10)
    forged = seal(entries[3].hash, 5, record(5, decision=AuditDecision.DENY))
    entries[4] = forged
    result = verify(entries)
    assert (result.entry_id, result.problem) == (6, AuditProblem.BROKEN_LINK)


@pytest.mark.parametrize("k", [1, 5, 9])
def test_a_removed_entry_is_reported_at_its_id(k: int) -> None:
    entries = chain(10)
    del entries[k - 1]
    result = verify(entries)
    assert (result.entry_id, result.problem) == (k, AuditProblem.REMOVED)
    assert f"entry {k} is missing" in result.message


def test_removed_ranges_are_named() -> None:
    entries = chain(10)
    del entries[2:5]
    result = verify(entries)
    assert result.entry_id == 3 and "entries 3-5 are missing" in result.message


def test_swapped_contents_are_reported_at_the_first() -> None:
    entries = chain(10)
    a, b = entries[2], entries[6]
    entries[2] = dataclasses.replace(b, id=3)
    entries[6] = dataclasses.replace(a, id=7)
    result = verify(entries)
    assert (result.entry_id, result.problem) == (3, AuditProblem.EDITED)


def test_reordered_ids_are_reported() -> None:
    entries = chain(5)
    entries[2], entries[3] = entries[3], entries[2]
    result = verify(entries)  # 1, 2, 4, ...: entry 3 is not where it belongs
    assert (result.entry_id, result.problem) == (3, AuditProblem.REMOVED)
    result = verify([entries[0], entries[1], entries[1]])
    assert (result.entry_id, result.problem) == (2, AuditProblem.OUT_OF_ORDER)


def test_a_forged_tail_entry_with_a_wrong_prev_hash_is_reported() -> None:
    entries = chain(10)
    entries.append(seal("f" * 64, 11, record(11)))
    result = verify(entries)
    assert (result.entry_id, result.problem, result.count) == (11, AuditProblem.BROKEN_LINK, 10)


def test_a_chain_not_starting_at_genesis_is_reported() -> None:
    result = verify([seal("a" * 64, 1, record(1))])
    assert (result.entry_id, result.problem) == (1, AuditProblem.BROKEN_LINK)
    assert "genesis" in result.message


@given(
    n=st.integers(min_value=1, max_value=30),
    data=st.data(),
)
def test_any_single_edit_is_reported_at_the_edited_entry(n: int, data: st.DataObject) -> None:
    entries = chain(n)
    k = data.draw(st.integers(min_value=1, max_value=n))
    reason = data.draw(st.text(max_size=20).filter(lambda t: t != entries[k - 1].reason))
    entries[k - 1] = dataclasses.replace(entries[k - 1], reason=reason)
    result = verify(entries)
    assert not result.ok and result.entry_id == k and result.count == k - 1


def test_entry_to_dict_is_json_ready() -> None:
    entry = chain(1)[0]
    data = entry.to_dict()
    assert data["decision"] == "allow" and data["id"] == 1 and data["prev_hash"] == GENESIS
    json.dumps(data)
    assert AuditEntry(**{**data}) == entry
