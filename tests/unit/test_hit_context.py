"""Context expansion and grouping as pure functions: overlap joining, budgets, windows, grouping, validation."""

from __future__ import annotations

import random
from dataclasses import dataclass, replace

import pytest

from ragindex.chunking import FixedChunker, RecursiveChunker
from ragindex.errors import ValidationError
from ragindex.retrieval.context import (
    MAX_GROUP_FETCH,
    HitShape,
    around,
    group_hits,
    join_chunks,
    neighbour_run,
    neighbours_context,
    overlap,
    section_context,
    validate_shape,
)
from ragindex.types import MAX_CONTEXT_CHARS, ChunkDraft, Document, Expand, GroupBy, Hit, SourceScore


@dataclass(frozen=True)
class P:
    """A chunk as joining sees it."""

    content: str
    start_line: int | None = None
    end_line: int | None = None


def pieces(drafts: list[ChunkDraft]) -> list[P]:
    return [P(d.text, d.start_line, d.end_line) for d in drafts]


WORDS = ["alpha", "beta", "gamma", "delta", "epsilon", "vector", "index", "shard", "tenant", "chunk", "token"]


def prose(seed: int, paragraphs: int = 12) -> str:
    rng = random.Random(seed)
    paras = []
    for p in range(paragraphs):
        sentences = [
            " ".join(rng.choice(WORDS) for _ in range(rng.randint(4, 14))).capitalize() + "."
            for _ in range(rng.randint(2, 6))
        ]
        paras.append((f"## Part {p}\n\n" if p % 4 == 0 else "") + " ".join(sentences))
    return "\n\n".join(paras)


def test_overlap_is_the_longest_suffix_that_starts_the_next_text() -> None:
    assert overlap("one two three", "two three four") == len("two three")
    assert overlap("aaa", "aaab") == 3
    assert overlap("abc", "xyz") == 0
    assert overlap("", "abc") == overlap("abc", "") == 0
    assert overlap("the end", "end") == 3  # the next text wholly repeated


@pytest.mark.parametrize("seed", range(5))
def test_recursive_chunks_join_back_into_the_document(seed: int) -> None:
    text = prose(seed)
    drafts = RecursiveChunker(size=120, overlap=40).chunk(Document("d.md", text, "markdown"))
    assert len(drafts) > 5 and any(overlap(a.text, b.text) for a, b in zip(drafts, drafts[1:], strict=False))
    joined, spans = join_chunks(pieces(drafts))
    assert joined == text.strip()  # overlaps written once; paragraph breaks and spaces restored from lines
    assert [joined[s:e] for s, e in spans] == [d.text for d in drafts]


def test_fixed_windows_with_overlap_join_back_into_the_document() -> None:
    text = prose(7)
    drafts = FixedChunker(size=100, overlap=30).chunk(Document("d.txt", text, "text"))
    joined, spans = join_chunks(pieces(drafts))
    assert joined == text
    assert [joined[s:e] for s, e in spans] == [d.text for d in drafts]


def test_join_without_lines_falls_back_to_overlap_or_a_line_break() -> None:
    joined, spans = join_chunks([P("first part of it"), P("of it continues"), P("new")])
    assert joined == "first part of it continues\nnew"
    assert spans == [(0, 16), (11, 26), (27, 30)]


def test_neighbours_grow_balanced_with_whole_chunks_within_the_budget() -> None:
    row = [P(f"chunk{i:02d}", i + 1, i + 1) for i in range(10)]  # 7 chars each, one line each: joined with "\n"
    assert neighbour_run(row, 5, 7) == (5, 6)  # the hit alone
    assert neighbour_run(row, 5, 15) == (4, 6)  # one before (nearest first, before then after)
    assert neighbour_run(row, 5, 23) == (4, 7)
    assert neighbour_run(row, 5, 39) == (3, 8)
    assert neighbour_run(row, 0, 23) == (0, 3)  # at the start: the room goes after
    assert neighbour_run(row, 9, 1000) == (0, 10)
    context = neighbours_context(row, 5, 23)
    assert context == "chunk04\nchunk05\nchunk06" and len(context) <= 23


def test_the_hit_is_kept_whole_when_it_alone_exceeds_the_budget() -> None:
    row = [P("a" * 50, 1, 1), P("b" * 500, 2, 2), P("c" * 50, 3, 3)]
    assert neighbours_context(row, 1, 100) == "b" * 500
    assert section_context(row, 1, 100) == "b" * 500


def test_around_centres_the_span_cuts_at_whitespace_and_shifts_unused_room() -> None:
    text = " ".join(f"w{i:03d}" for i in range(200))  # 5 chars a word
    start = text.index("w100")
    span = (start, start + 4)
    out = around(text, span, 84)
    assert "w100" in out and len(out) <= 84
    assert out.split()[0].startswith("w") and len(out.split()[0]) == 4  # no word cut in half
    before, after = out.split("w100")
    assert abs(len(before) - len(after)) <= 10  # balanced
    head = around(text, (0, 4), 84)  # at the start: all the room goes after
    assert head.startswith("w000") and len(head) >= 75
    tail = around(text, (len(text) - 4, len(text)), 84)
    assert tail.endswith("w199") and len(tail) >= 75
    assert around(text, span, 10_000) == text
    assert around(text, span, 2) == "w100"


def test_around_cuts_text_without_spaces_where_it_falls() -> None:
    text = "数据治理流程需要明确的责任划分与标准规范" * 20
    span = (200, 210)
    out = around(text, span, 60)
    assert len(out) == 60 and text[200:210] in out


def test_section_context_is_the_section_trimmed_around_the_hit() -> None:
    row = [P(f"Sentence number {i} of the section.", i + 1, i + 1) for i in range(40)]
    context = section_context(row, 20, 300)
    assert "Sentence number 20 of the section." in context
    assert len(context) <= 300
    assert "Sentence number 0 " not in context and "Sentence number 39 " not in context
    whole = section_context(row[:5], 2, 5000)
    assert whole == "\n".join(p.content for p in row[:5])


def hit(rank: int, chunk_id: str, doc_id: int = 1) -> Hit:
    return Hit(
        rank=rank,
        chunk_id=chunk_id,
        doc_id=doc_id,
        set_id=1,
        score=1.0 / rank,
        source="s",
        filename="f",
        text=chunk_id,
        page=None,
        section=None,
        start_line=None,
        end_line=None,
        scores={"dense": SourceScore(1.0 / rank, rank)},
    )


def test_group_keeps_the_best_hit_in_place_and_lists_the_others_with_their_scores() -> None:
    hits = [hit(1, "a1"), hit(2, "b1"), hit(3, "a2"), hit(4, "c1"), hit(5, "b2"), hit(6, "d1"), hit(7, "a3")]
    keys = ["A", "B", "A", "C", "B", "D", "A"]
    grouped = group_hits(hits, keys, top_k=3)
    assert [(h.rank, h.chunk_id) for h in grouped] == [(1, "a1"), (2, "b1"), (3, "c1")]
    assert [(m.chunk_id, m.rank) for m in grouped[0].merged] == [("a2", 3), ("a3", 7)]  # folded after top_k too
    assert grouped[0].merged[0].scores == {"dense": SourceScore(1 / 3, 3)}
    assert [m.chunk_id for m in grouped[1].merged] == ["b2"] and grouped[2].merged == ()
    as_dict = grouped[0].to_dict()
    assert as_dict["merged"][0] == {
        "chunk_id": "a2",
        "rank": 3,
        "score": 1 / 3,
        "scores": {"dense": {"score": 1 / 3, "rank": 3}},
    }
    assert "merged" not in grouped[2].to_dict()


def test_hit_to_dict_adds_context_and_merged_only_when_set() -> None:
    plain = hit(1, "a").to_dict()
    assert "context" not in plain and "merged" not in plain
    assert replace(hit(1, "a"), context="x a y").to_dict()["context"] == "x a y"


def test_validate_shape_names_the_field() -> None:
    shape = validate_shape(expand="neighbours", context_chars=0, group_by="document")
    assert shape == HitShape(Expand.NEIGHBOURS, 0, GroupBy.DOCUMENT)
    for kwargs, field in [
        ({"expand": "paragraph"}, "expand"),
        ({"expand": "neighbors"}, "expand"),
        ({"group_by": "page"}, "group_by"),
        ({"context_chars": -1}, "context_chars"),
        ({"context_chars": MAX_CONTEXT_CHARS + 1}, "context_chars"),
        ({"context_chars": True}, "context_chars"),
    ]:
        options = {"expand": "none", "context_chars": 100, "group_by": "none", **kwargs}
        with pytest.raises(ValidationError) as caught:
            validate_shape(**options)  # type: ignore[arg-type]
        assert caught.value.field == field and field in caught.value.message


def test_grouping_over_fetches_a_bounded_number_of_hits() -> None:
    assert HitShape(group_by=GroupBy.NONE).fetch(10) == 10
    assert HitShape(group_by=GroupBy.SECTION).fetch(10) == 50
    assert HitShape(group_by=GroupBy.DOCUMENT).fetch(400) == MAX_GROUP_FETCH
    assert HitShape(group_by=GroupBy.DOCUMENT).fetch(MAX_GROUP_FETCH + 5) == MAX_GROUP_FETCH + 5
