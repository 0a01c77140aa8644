"""Memory's store and search, every test that uses ``memory`` (or ``small``)
on SQLite and on PostgreSQL (conftest's ``store``): the same records, the same
rankings, the same snippets. Where the engines truly differ, the test says
which and why."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from agentdeck.core.memory import MemoryKind, Observation, SessionSummary
from agentdeck.errors import NotFound, UsageError
from agentdeck.store import Store
from agentdeck.store.memory import MAX_LIMIT, MemoryStore
from agentdeck.store.memory_search import _TitleWords

pytestmark = pytest.mark.anyio

PROJECT = "/work/alpha"
OTHER = "/work/beta"


@pytest.fixture
def memory(store: Store) -> MemoryStore:
    """On the store of each backend (``backend`` in conftest.py)."""
    return MemoryStore(store)


_serial = iter(range(1, 10**6))


def obs(
    input_summary: str = "Bash(ls)",
    output: str = "",
    *,
    project: str = PROJECT,
    session_id: str = "s1",
    tool: str = "Bash",
    ts: float | None = None,
    **changes: Any,
) -> Observation:
    n = next(_serial)
    return Observation(
        id=f"ob{n:012x}",
        project=project,
        session_id=session_id,
        agent_id="a1",
        ts=float(n) if ts is None else ts,
        tool=tool,
        input_summary=input_summary,
        output_excerpt=output,
        **changes,
    )


def summary(
    request: str = "fix the build",
    *,
    project: str = PROJECT,
    session_id: str = "s1",
    **changes: Any,
) -> SessionSummary:
    n = next(_serial)
    return SessionSummary(
        id=f"su{n:012x}",
        project=project,
        session_id=session_id,
        agent_id="a1",
        ts=float(n),
        request=request,
        **changes,
    )


async def index_rows(memory: MemoryStore) -> list[str]:
    """The memory ids in the full-text index, read as the store reads."""

    def query(conn: Any) -> list[str]:
        return sorted(conn.exec_driver_sql("SELECT memory_id FROM memory_fts").scalars())

    return await memory.store._read(query)


async def ids(memory: MemoryStore, query: str, **kwargs: Any) -> list[str]:
    return [hit.id for hit in await memory.search(query, **kwargs)]


# --- records --------------------------------------------------------------------


async def test_an_observation_round_trips(memory: MemoryStore) -> None:
    o = obs(
        "Edit(src/app.py)",
        "replaced 3 lines",
        tool="Edit",
        files=("src/app.py", "src/ünïcode.py"),
        is_error=True,
    )
    await memory.add_observation(o)
    assert await memory.get(o.id) == o


async def test_an_observation_delivered_twice_is_kept_once(memory: MemoryStore) -> None:
    o = obs("Bash(make)", "built")
    await memory.add_observation(o)
    await memory.add_observation(o)
    assert (await memory.stats())["observations"] == 1
    assert await index_rows(memory) == [o.id]


async def test_a_summary_round_trips(memory: MemoryStore) -> None:
    s = summary(
        "add a login page",
        files_changed=("web/login.html",),
        commands=("pytest -x",),
        errors=("AssertionError",),
        final_message="Done: the login page works.",
        model_summary="Added a login page.",
    )
    assert await memory.save_summary(s) == s
    assert await memory.get(s.id) == s


async def test_session_and_recent_listings_are_ordered(memory: MemoryStore) -> None:
    first = obs("Bash(one)", ts=10.0)
    second = obs("Bash(two)", ts=20.0)
    elsewhere = obs("Bash(three)", ts=30.0, session_id="s2", project=OTHER)
    for o in (second, first, elsewhere):
        await memory.add_observation(o)
    assert await memory.session_observations("s1") == [first, second]
    assert await memory.recent_observations(PROJECT) == [second, first]
    assert await memory.recent_observations(PROJECT, limit=1) == [second]

    older = summary("older", session_id="s1")
    newer = summary("newer", session_id="s3")
    await memory.save_summary(older)
    await memory.save_summary(newer)
    await memory.save_summary(summary("other project", session_id="s2", project=OTHER))
    assert await memory.recent_summaries(PROJECT) == [newer, older]


@pytest.mark.parametrize("bad_id", ["ob000000000404", "su000000000404", "xx12", "", "o"])
async def test_get_of_an_unknown_or_malformed_id_is_not_found(
    memory: MemoryStore, bad_id: str
) -> None:
    with pytest.raises(NotFound) as caught:
        await memory.get(bad_id)
    assert caught.value.ident == bad_id


async def test_stats_count_records_and_projects(memory: MemoryStore) -> None:
    assert await memory.stats() == {"observations": 0, "summaries": 0, "projects": 0}
    await memory.add_observation(obs(project=PROJECT))
    await memory.add_observation(obs(project=PROJECT))
    await memory.save_summary(summary(project=OTHER, session_id="s9"))
    assert await memory.stats() == {"observations": 2, "summaries": 1, "projects": 2}


# --- summaries are one per session ----------------------------------------------


async def test_a_later_summary_replaces_the_sessions_earlier_one_keeping_its_id(
    memory: MemoryStore,
) -> None:
    first = await memory.save_summary(summary("migrate the quokka database"))
    later = summary("migrate the wombat database", final_message="all green")
    stored = await memory.save_summary(later)

    assert stored.id == first.id
    assert stored.request == later.request
    assert await memory.get(first.id) == stored
    assert (await memory.stats())["summaries"] == 1
    # reindexed: the old text is gone from search, the new one is found
    assert await memory.search("quokka") == []
    assert await ids(memory, "wombat") == [first.id]
    assert await index_rows(memory) == [first.id]


# --- search ---------------------------------------------------------------------


async def test_a_term_in_the_title_outranks_the_same_term_in_the_body(
    memory: MemoryStore,
) -> None:
    in_body = obs("Read(notes.md)", "the flamingo test is flaky on CI", tool="Read")
    in_title = obs("Bash(pytest -k flamingo)", "3 passed")
    await memory.add_observation(in_body)
    await memory.add_observation(in_title)
    hits = await memory.search("flamingo")
    assert [h.id for h in hits] == [in_title.id, in_body.id]
    assert hits[0].score > hits[1].score
    assert hits[0].title == "Bash(pytest -k flamingo)"
    assert hits[0].kind is MemoryKind.OBSERVATION
    assert (hits[0].project, hits[0].session_id, hits[0].ts) == (PROJECT, "s1", in_title.ts)


async def test_snippets_mark_the_matched_words(memory: MemoryStore) -> None:
    await memory.add_observation(obs("Bash(make)", "error: the gizmo module failed to link"))
    (hit,) = await memory.search("gizmo")
    assert "[gizmo]" in hit.snippet


async def test_stemming_finds_other_forms_of_a_word(memory: MemoryStore) -> None:
    o = obs("Bash(pytest)", "two tests failed")
    await memory.add_observation(o)
    assert await ids(memory, "failing test") == [o.id]


async def test_a_summary_is_preferred_to_an_equally_good_observation(
    memory: MemoryStore,
) -> None:
    o = obs("Bash(cat pelican)", tool="Bash")
    await memory.add_observation(o)
    s = await memory.save_summary(summary("Bash(cat pelican)"))
    assert await ids(memory, "pelican") == [s.id, o.id]


async def test_every_word_must_match_before_any_word_will_do(memory: MemoryStore) -> None:
    both = obs("Bash(deploy)", "the otter and the badger")
    otter = obs("Bash(deploy)", "the otter alone")
    await memory.add_observation(both)
    await memory.add_observation(otter)
    assert await ids(memory, "otter badger") == [both.id]
    # no record has both words: fall back to either
    assert set(await ids(memory, "otter narwhal")) == {both.id, otter.id}


async def test_a_trailing_star_or_an_unfinished_word_matches_a_prefix(
    memory: MemoryStore,
) -> None:
    o = obs("Bash(pytest)", "configuration loaded")
    await memory.add_observation(o)
    assert await ids(memory, "configur*") == [o.id]
    assert await ids(memory, "configur") == [o.id]  # nothing exact: tried as a prefix
    assert await ids(memory, "zzz*") == []


async def test_the_project_filter_keeps_to_one_project(memory: MemoryStore) -> None:
    here = obs("Bash(pytest)", "heron", project=PROJECT)
    there = obs("Bash(pytest)", "heron", project=OTHER)
    await memory.add_observation(here)
    await memory.add_observation(there)
    assert set(await ids(memory, "heron")) == {here.id, there.id}
    assert await ids(memory, "heron", project=PROJECT) == [here.id]
    assert await ids(memory, "heron", project="/nowhere") == []


async def test_words_of_the_project_path_are_not_searched_as_text(memory: MemoryStore) -> None:
    await memory.add_observation(obs("Bash(ls)", project="/home/me/kangaroo"))
    assert await memory.search("kangaroo") == []


@pytest.mark.parametrize("query", ["", "   ", "!!!", "*", '"', "- : ( ) ^ { }", "___"])
async def test_an_empty_or_punctuation_only_query_finds_nothing(
    memory: MemoryStore, query: str
) -> None:
    await memory.add_observation(obs("Bash(ls)", "anything at all"))
    assert await memory.search(query) == []


@pytest.mark.parametrize(
    "query",
    [
        "NEAR(a b)",
        "a AND",
        "OR",
        "NOT x",
        'say "hello',
        "col:value",
        "title: hello",
        "-hello",
        "hello*world*",
        "^start",
        "{title}: x",
        "a + b",
        "(((",
        "'; DROP TABLE observations; --",
        "x" * 5000,
        " ".join(f"w{n}" for n in range(200)),
        "héllo wörld 日本語",
        # tsquery's syntax (PostgreSQL)
        "hello & world | !say",
        "hello:* <-> world:AB",
        "!(hello)",
        "'hello':*",
        "hello <2> world",
        "\\' \\\\ ''",
        "hel\x00lo wor\x00ld",
        "y" * 10_000,
        "é" * 1500 + "*",
        " ".join(["hello*"] * 3000),
    ],
)
async def test_fts_syntax_in_a_query_is_taken_as_text_and_never_raises(
    memory: MemoryStore, query: str
) -> None:
    await memory.add_observation(obs("Bash(echo hello)", "hello world: say NEAR title"))
    hits = await memory.search(query)
    assert isinstance(hits, list)
    assert (await memory.stats())["observations"] == 1


async def test_operator_words_are_matched_as_words(memory: MemoryStore, backend: str) -> None:
    o = obs("Bash(grep NEAR)", "AND OR NOT")
    await memory.add_observation(o)
    await memory.add_observation(obs("Bash(ls)", "other"))
    assert await ids(memory, "NEAR AND") == [o.id]
    # FTS5 indexes every word; PostgreSQL's english configuration leaves stop
    # words ("and", "not") out of the index, so alone they find nothing there.
    assert await ids(memory, '"not"') == ([o.id] if backend == "sqlite" else [])


async def test_the_limit_is_capped_and_must_be_positive(memory: MemoryStore) -> None:
    for _ in range(MAX_LIMIT + 5):
        await memory.add_observation(obs("Bash(ls)", "walrus"))
    assert len(await memory.search("walrus", limit=3)) == 3
    assert len(await memory.search("walrus", limit=10_000)) == MAX_LIMIT
    with pytest.raises(UsageError):
        await memory.search("walrus", limit=0)


async def test_hits_are_best_first(memory: MemoryStore) -> None:
    await memory.add_observation(obs("Bash(ls)", "lynx " * 1 + "padding " * 40))
    await memory.add_observation(obs("Bash(lynx)", "lynx lynx"))
    await memory.add_observation(obs("Read(x)", "lynx", tool="Read"))
    scores = [h.score for h in await memory.search("lynx")]
    assert len(scores) == 3
    assert scores == sorted(scores, reverse=True)


async def test_a_prefix_shorter_than_three_characters_is_taken_as_a_word(
    memory: MemoryStore,
) -> None:
    o = obs("Bash(ls)", "configuration")
    await memory.add_observation(o)
    assert await ids(memory, "config*") == [o.id]
    assert await ids(memory, "co*") == []


# Past ``candidates`` matches a word is common: the newest candidates are ranked
# with bounded queries instead of bm25(); the same orderings hold.


@pytest.fixture
def small(store: Store) -> MemoryStore:
    return MemoryStore(store, candidates=3)


async def test_common_words_rank_the_newest_candidates_title_first(small: MemoryStore) -> None:
    old_title = obs("Bash(pytest jaguar)", "")
    bodies = [obs("Read(x)", "jaguar in the body", tool="Read") for _ in range(4)]
    new_title = obs("Bash(pytest jaguar)", "")
    for o in (old_title, *bodies, new_title):
        await small.add_observation(o)
    hits = await small.search("jaguar")
    # the newest three matches only, the title match first
    assert [h.id for h in hits] == [new_title.id, bodies[3].id, bodies[2].id]
    assert hits[0].score > hits[1].score > 0
    assert "[jaguar]" in hits[1].snippet


async def test_common_words_prefer_a_summary_and_keep_to_the_project(small: MemoryStore) -> None:
    for _ in range(4):
        await small.add_observation(obs("Bash(jaguar)", project=OTHER))
    here = obs("Read(x)", "jaguar", tool="Read")
    await small.add_observation(here)
    s = await small.save_summary(summary("Bash(jaguar)", session_id="s5", project=OTHER))
    assert (await ids(small, "jaguar"))[0] == s.id
    assert await ids(small, "jaguar", project=PROJECT) == [here.id]


async def test_common_words_weigh_a_rare_word_above_a_common_one(small: MemoryStore) -> None:
    for _ in range(6):
        await small.add_observation(obs("Bash(ls)", "jaguar"))
    rare = obs("Bash(ls)", "ocelot")
    await small.add_observation(rare)
    await small.add_observation(obs("Bash(ls)", "jaguar"))
    # no record has both: any will do, and the rarer word counts for more
    hits = await small.search("jaguar ocelot")
    assert hits[0].id == rare.id
    assert len(hits) == 3


async def test_common_words_weigh_each_word_by_whether_it_is_in_the_title(
    small: MemoryStore,
) -> None:
    # Both records hold both words; which one is in the title (here in a
    # stemmed form: "testing" for "tests") decides, weighted by its rarity:
    # the rare word's title wins over the common word's newer one.
    for _ in range(4):
        await small.add_observation(obs("Read(y)", "jaguar tests", tool="Read"))
    rare_in_title = obs("Bash(ocelot)", "jaguar tests")
    common_in_title = obs("Bash(testing)", "jaguar ocelot")
    for o in (rare_in_title, common_in_title):
        await small.add_observation(o)
    hits = await small.search("tests ocelot")
    assert [h.id for h in hits] == [rare_in_title.id, common_in_title.id]
    assert hits[0].score > hits[1].score > 0


async def test_every_word_with_a_rare_one_finds_matches_older_than_the_candidates(
    small: MemoryStore,
) -> None:
    # "jaguar" is common (past 3 matches), "ocelot" rare: the records holding
    # both are all found, however far back, newest first among equals.
    oldest = obs("Read(a)", "jaguar ocelot", tool="Read")
    older = obs("Read(b)", "ocelot jaguar", tool="Read")
    await small.add_observation(oldest)
    await small.add_observation(older)
    for _ in range(5):
        await small.add_observation(obs("Read(d)", "jaguar", tool="Read"))
    hits = await small.search("jaguar ocelot")
    assert [h.id for h in hits] == [older.id, oldest.id]
    assert all("[jaguar]" in h.snippet and "[ocelot]" in h.snippet for h in hits)


async def test_snippets_of_a_project_search_mark_the_words_not_the_project(
    small: MemoryStore,
) -> None:
    for _ in range(4):
        await small.add_observation(obs("Read(x)", "jaguar elsewhere", tool="Read", project=OTHER))
    here = obs("Bash(make)", "the jaguar build failed")
    await small.add_observation(here)
    (hit,) = await small.search("jaguar", project=PROJECT)
    assert (hit.id, hit.snippet, hit.project) == (here.id, "the [jaguar] build failed", PROJECT)


@pytest.mark.parametrize(
    ("term", "tokens", "expected"),
    [
        ('"tests"', {"Testing", "tested", "ocelot"}, {"Testing", "tested"}),
        ('"ocel"*', {"Ocelots", "jaguar"}, {"Ocelots"}),
        ('"café"', {"CAFE", "cafes", "caff"}, {"CAFE", "cafes"}),
        ('"jaguar"', set(), set()),
    ],
)
def test_title_words_are_matched_as_the_index_matches_them(
    term: str, tokens: set[str], expected: set[str]
) -> None:
    words = _TitleWords()
    assert words.matching(term, tokens) == expected
    assert words.matching(term, tokens) == expected  # remembered, same answer


def test_title_words_forget_their_answers_past_the_memo_size() -> None:
    words = _TitleWords()
    words.MEMO = 2
    for n in range(5):
        assert words.matching('"jaguar"', {f"jaguar{n}", "jaguar"}) == {"jaguar"}
    assert len(words._memo) <= words.MEMO


# --- forget ---------------------------------------------------------------------


async def test_forget_one_record_removes_it_from_search(memory: MemoryStore) -> None:
    keep = obs("Bash(ls)", "mongoose")
    gone = obs("Bash(ls)", "mongoose")
    await memory.add_observation(keep)
    await memory.add_observation(gone)
    assert await memory.forget(memory_id=gone.id) == 1
    assert await ids(memory, "mongoose") == [keep.id]
    assert await index_rows(memory) == [keep.id]
    with pytest.raises(NotFound):
        await memory.get(gone.id)
    with pytest.raises(NotFound):
        await memory.forget(memory_id=gone.id)


async def test_forget_a_summary_by_id(memory: MemoryStore) -> None:
    s = await memory.save_summary(summary("tapir"))
    assert await memory.forget(memory_id=s.id) == 1
    assert await memory.search("tapir") == []
    assert await index_rows(memory) == []


async def test_forget_a_session_removes_its_observations_and_summary(memory: MemoryStore) -> None:
    other = obs("Bash(ls)", "gecko", session_id="s2")
    await memory.add_observation(obs("Bash(ls)", "gecko", session_id="s1"))
    await memory.add_observation(obs("Bash(ls)", "gecko", session_id="s1"))
    await memory.add_observation(other)
    await memory.save_summary(summary("gecko", session_id="s1"))
    assert await memory.forget(session_id="s1") == 3
    assert await ids(memory, "gecko") == [other.id]
    assert await index_rows(memory) == [other.id]
    assert await memory.forget(session_id="s1") == 0


async def test_forget_a_project(memory: MemoryStore) -> None:
    other = obs("Bash(ls)", "ibis", project=OTHER)
    await memory.add_observation(obs("Bash(ls)", "ibis"))
    await memory.save_summary(summary("ibis"))
    await memory.add_observation(other)
    assert await memory.forget(project=PROJECT) == 2
    assert await ids(memory, "ibis") == [other.id]
    assert await index_rows(memory) == [other.id]
    assert await memory.stats() == {"observations": 1, "summaries": 0, "projects": 1}


@pytest.mark.parametrize(
    "selectors",
    [{}, {"memory_id": "ob1", "session_id": "s1"}, {"session_id": "s1", "project": PROJECT}],
)
async def test_forget_needs_exactly_one_selector_and_deletes_nothing_otherwise(
    memory: MemoryStore, selectors: dict[str, str]
) -> None:
    o = obs(session_id="s1")
    await memory.add_observation(o)
    with pytest.raises(UsageError):
        await memory.forget(**selectors)
    assert await memory.get(o.id) == o


async def test_forget_an_id_of_the_wrong_shape_is_not_found(memory: MemoryStore) -> None:
    with pytest.raises(NotFound):
        await memory.forget(memory_id="agent-123")


async def test_tsquery_operators_in_a_query_are_separators_between_words(
    memory: MemoryStore,
) -> None:
    o = obs("Bash(echo hello)", "hello world")
    await memory.add_observation(o)
    await memory.add_observation(obs("Bash(ls)", "goodbye"))
    # not "hello AND NOT world": the words hello and world, both in the record
    assert await ids(memory, "hello & !world") == [o.id]
    assert await ids(memory, "(hello) <-> 'world':*") == [o.id]
    assert await ids(memory, "wor:*") == [o.id]  # an unfinished word, tried as a prefix


async def test_a_record_holding_nul_characters_is_kept(memory: MemoryStore, backend: str) -> None:
    # A tool's output may hold NUL; PostgreSQL's text and JSON cannot: there
    # the record is kept without them (it was refused whole), on SQLite as it is.
    o = obs("Bash(cat a\x00.bin)", "the ar\x00madillo\x00 crashed", files=("a\x00.bin",))
    s = summary("clean the ar\x00madillo", errors=("E\x00",))
    await memory.add_observation(o)
    stored = await memory.save_summary(s)
    if backend == "sqlite":
        assert (await memory.get(o.id), await memory.get(stored.id)) == (o, s)
    else:
        assert await memory.get(o.id) == dataclasses.replace(
            o,
            input_summary="Bash(cat a.bin)",
            output_excerpt="the armadillo crashed",
            files=("a.bin",),
        )
        assert await memory.get(stored.id) == dataclasses.replace(
            s, request="clean the armadillo", errors=("E",)
        )
        assert {h.id for h in await memory.search("armadillo")} == {o.id, s.id}


async def test_a_snippet_of_a_long_text_marks_where_it_was_cut(memory: MemoryStore) -> None:
    before = " ".join(f"lead{n}" for n in range(30))
    after = " ".join(f"tail{n}" for n in range(30))
    await memory.add_observation(obs("Bash(make)", f"{before} the pangolin broke {after}"))
    (hit,) = await memory.search("pangolin")
    assert "[pangolin]" in hit.snippet
    assert hit.snippet.startswith("…") and hit.snippet.endswith("…")
    assert len(hit.snippet.split()) <= 16  # a few words around the match, not the text


async def test_the_words_of_a_path_or_an_address_are_words(memory: MemoryStore) -> None:
    # PostgreSQL's parser reads "tests/test_retry.py" as one word; the index
    # there is written so that it finds its words, as FTS5 does.
    o = obs(
        "Read(tests/test_retry.py)",
        "see ops@example.com and https://ci.example.org/run-7",
        tool="Read",
    )
    await memory.add_observation(o)
    for query in ("retry", "test_retry.py", "tests/test_retry.py", "ops", "example org", "run 7"):
        assert await ids(memory, query) == [o.id], query
    (hit,) = await memory.search("retry")
    assert hit.title == "Read(tests/test_retry.py)"
    assert "[retry]" in hit.snippet and "\x01" not in hit.snippet
    (hit,) = await memory.search("ops")
    assert hit.snippet.startswith("see [ops]@example.com and https://ci.example.org/run")
