"""The search path that does little (issue 27): its section map and its lazy sections against the truth store.

Fusion maps a lexical source's sections to the chunks dense found through one narrow read of the dense candidates'
sections, and leaves a section none of whose chunks dense found as pending until a backfilled page reaches it.
The reference below is the path it replaced: read every lexical section's live chunks first, then fuse. Both must
rank the same hits, and neither may return a chunk that is REMOVED in the truth store (a ghost still in the index).
Real engines: SQLite, Qdrant Edge and the shipped MiniLM model.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import replace
from typing import Any

import pytest

from ragindex.engine import Engine
from ragindex.errors import StoreError
from ragindex.retrieval.fusion import Candidate
from ragindex.retrieval.search import Retriever, SearchRequest
from ragindex.retrieval.terms import best_match, query_terms
from ragindex.store.records import ChunkText, ChunkView
from ragindex.types import GroupBy, SearchMode, Unit, VectorKind

pytestmark = pytest.mark.integration

TOPICS = {
    "bees": "honeybee colony queen workers drones hive wax frames honey harvest nectar pollen swarm",
    "tides": "tide harbour high water low water moon current estuary shore channel pilot vessel",
    "basalt": "basalt lava columns cooling volcano magma rock crystals fracture plateau island geology",
    "bread": "bread dough flour yeast oven crust proof knead starter loaf rye wheat bakery",
}
QUERIES = [
    "how much honey does a strong hive give",
    "when is high water in the harbour",
    "why does cooling lava form basalt columns",
    "sourdough starter and rye flour",
    "queen lays eggs in spring",
    "pilot boards the vessel in the channel",
]


def _document(topic: str, words: str, sections: int = 4, paragraphs: int = 4) -> str:
    vocabulary = words.split()
    parts = [f"# {topic.title()} notes"]
    for s in range(sections):
        parts.append(f"## {topic.title()} part {s}")
        for p in range(paragraphs):
            picked = [vocabulary[(s * 7 + p * 3 + i) % len(vocabulary)] for i in range(18)]
            parts.append(f"Paragraph {s}.{p} about {topic}: " + " ".join(picked) + ".")
    return "\n\n".join(parts) + "\n"


@pytest.fixture
def corpus_files() -> dict[str, str]:
    return {f"{topic}.md": _document(topic, words) for topic, words in TOPICS.items()}


@pytest.fixture
def engine_settings() -> dict[str, Any]:
    return {"chunk_size": 160, "chunk_overlap": 0}  # several chunks per section: sections stand for many chunks


class EveryJoinedSection(Retriever):
    """The path the search path replaced: every lexical section's live chunks are read before fusion."""

    _query = ""

    def _chunk_lists(self, lists: Mapping[str, list[tuple[str, float]]]) -> tuple[dict[str, list[Candidate]], set[str]]:
        out: dict[str, list[Candidate]] = {source: list(items) for source, items in lists.items()}
        lexical = [source for source in lists if source != VectorKind.DENSE]
        if not lexical:
            return out, set()
        members = self.store.section_chunks([uid for source in lexical for uid, _ in lists[source]])
        dense = {cid for cid, _ in lists.get(VectorKind.DENSE, ())}
        terms = query_terms(self._query)
        for source in lexical:
            expanded: list[Candidate] = []
            for rank, (uid, score) in enumerate(lists[source], 1):
                chunks: list[ChunkText] | None = members.get(uid)
                if chunks is None:
                    expanded.append((uid, score, rank))
                    continue
                found = [c.chunk_id for c in chunks if c.chunk_id in dense]
                expanded += [(cid, score, rank) for cid in found or [best_match(terms, chunks)]]
            out[source] = expanded
        return out, set()


def _retriever(engine: Engine, cls: type[Retriever] = Retriever) -> Retriever:
    return cls(
        engine.store,
        lambda: engine.index,
        engine.read_collection,
        lambda: engine.dense,
        engine.sparse,
        bucket_count=engine.settings.bucket_count,
        rrf_k=engine.settings.rrf_k,
    )


def _request(query: str, mode: str, fusion: str, top_k: int = 20) -> SearchRequest:
    return SearchRequest(
        query=query,
        user_id=1,
        set_id=1,
        doc_ids=None,
        mode=SearchMode(mode),
        top_k=top_k,
        score_threshold=None,
        fusion=fusion,
        candidates=50,
    )


def _ranked(retriever: Retriever, request: SearchRequest) -> list[tuple[str, float, int]]:
    if isinstance(retriever, EveryJoinedSection):
        retriever._query = request.query
    return [(hit.chunk_id, round(hit.score, 9), hit.rank) for hit in retriever.search(request).hits]


@pytest.fixture
def searched(engine: Engine) -> Iterator[Engine]:
    assert engine.store.chunk_count_by_status(VectorKind.DENSE)
    yield engine


def test_the_section_map_is_the_truth_stores(searched: Engine) -> None:
    """chunk_sections maps exactly the ACTIVE chunks that have a section to it (and its place in the document)."""
    engine = searched
    rows = [row for doc in engine.store.list_documents() for row in engine.store.chunks_of_document(doc.doc_id)]
    assert rows and all(row.unit == Unit.CHUNK for row in rows)
    ids = [row.chunk_id for row in rows] + ["not-a-chunk"]
    expected = {row.chunk_id: (row.section_id, row.chunk_index) for row in rows if row.section_id is not None}
    assert len(expected) == len(rows)  # every chunk of these documents belongs to a section
    assert engine.store.chunk_sections(ids) == expected
    removed = rows[0].chunk_id
    engine.store.remove_chunks([removed])
    assert removed not in engine.store.chunk_sections(ids)  # a REMOVED chunk maps to nothing
    sections = {section_id for section_id, _ in expected.values()}
    members = engine.store.section_chunks(sorted(sections))
    live = [row for row in rows if row.chunk_id != removed]
    assert set(members) == {row.section_id for row in live}
    assert engine.store.live_sections([*sorted(sections), "not-a-section"]) == set(members)
    for section_id, chunks in members.items():  # the lazy read gives each section's live chunks in order
        assert [(c.chunk_id, c.content) for c in chunks] == [
            (row.chunk_id, row.content) for row in live if row.section_id == section_id
        ]


@pytest.mark.parametrize("fusion", ["rrf", "dbsf", "combine", "boost"])
def test_fusion_ranks_as_reading_every_section_first_would(searched: Engine, fusion: str) -> None:
    fast, reference = _retriever(searched), _retriever(searched, EveryJoinedSection)
    for query in QUERIES:
        for mode in ("hybrid", "bm25"):
            request = _request(query, mode, fusion)
            expected = _ranked(reference, request)
            assert expected, (query, mode)
            assert _ranked(fast, request) == expected, (query, mode, fusion)


def test_a_removed_chunk_is_never_returned_by_the_fast_path(searched: Engine) -> None:
    """Ghosts (REMOVED in the truth store, points still in the index) of both kinds: a chunk dense found, and the
    chunk that stood for a section BM25 found; neither comes back, as a hit or folded into one."""
    engine = searched
    fast = _retriever(engine)
    query = QUERIES[0]
    dense_best = fast.search(_request(query, "dense", "rrf", top_k=3)).hits
    bm25_best = fast.search(_request(query, "bm25", "rrf", top_k=3)).hits
    ghosts = {hit.chunk_id for hit in (*dense_best, *bm25_best)}
    assert sorted(engine.store.remove_chunks(sorted(ghosts))) == sorted(ghosts)
    for mode in ("hybrid", "bm25", "dense"):
        for group_by in ("none", "section", "document"):
            result = engine.search(query, user_id=1, set_id=1, mode=mode, top_k=10, group_by=group_by)
            returned = {hit.chunk_id for hit in result.hits} | {m.chunk_id for h in result.hits for m in h.merged}
            assert result.hits and not returned & ghosts, (mode, group_by)
    reference = _retriever(engine, EveryJoinedSection)
    for fusion in ("rrf", "dbsf"):
        request = replace(_request(query, "hybrid", fusion), top_k=10)
        assert _ranked(fast, request) == _ranked(reference, request)


def _grouped(retriever: Retriever, request: SearchRequest, keep: int) -> list[Any]:
    if isinstance(retriever, EveryJoinedSection):
        retriever._query = request.query
    result, _ = retriever.run(request, group_by=GroupBy.SECTION, keep=keep)
    return [
        (hit.chunk_id, round(hit.score, 9), hit.rank, [(m.chunk_id, m.rank) for m in hit.merged]) for hit in result.hits
    ]


@pytest.mark.parametrize("keep", [1, 3, 10])
def test_grouping_by_section_resolves_only_the_sections_it_shows(
    searched: Engine, keep: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Grouped by section (the default), a lexical section dense did not find is resolved to a chunk only if its
    group is kept: the groups, their ranks and what each folds in are those of resolving every section first."""
    fast, reference = _retriever(searched), _retriever(searched, EveryJoinedSection)
    resolved: list[str] = []
    real = searched.store.section_chunks

    def counted(section_ids: Sequence[str]) -> dict[str, list[ChunkText]]:
        resolved.extend(section_ids)
        return real(section_ids)

    monkeypatch.setattr(searched.store, "section_chunks", counted)
    for query in QUERIES:
        for mode in ("hybrid", "bm25"):
            request = _request(query, mode, "rrf", top_k=keep * 5)
            expected = _grouped(reference, request, keep)
            assert expected, (query, mode)
            resolved.clear()
            assert _grouped(fast, request, keep) == expected, (query, mode, keep)
            assert len(set(resolved)) <= keep  # only the shown groups' sections


def test_a_shown_section_whose_chunks_went_away_gives_its_place_to_the_next(searched: Engine) -> None:
    """The chunks of a deferred section are removed between the backfill and its resolution: it is not shown, the
    next group takes its place, and the answer is the one a search after the removal gives."""
    engine = searched
    query = QUERIES[0]
    request = _request(query, "bm25", "rrf", top_k=15)

    class Racing(Retriever):
        removed: list[str] = []

        def _hits(self, fused: Any, views: Any, deferred: set[str], *args: Any, **kwargs: Any) -> Any:
            if deferred and not self.removed:
                first = next(item.id for item in fused if item.id in deferred)
                self.removed += [c.chunk_id for c in engine.store.section_chunks([first])[first]]
                engine.store.remove_chunks(self.removed)
            return super()._hits(fused, views, deferred, *args, **kwargs)

    racing = _retriever(engine, Racing)
    raced = _grouped(racing, request, 3)
    assert Racing.removed and not {chunk for chunk, *_ in raced} & set(Racing.removed)
    assert len(raced) == 3
    assert raced == _grouped(_retriever(engine, EveryJoinedSection), request, 3)


def test_a_backfilled_view_reads_what_its_chunk_row_holds(searched: Engine) -> None:
    """A view answers grouping and section questions from the row as read; its ChunkRow, built on first use, is
    the truth store's row (get_chunks) field for field, metadata included."""
    engine = searched
    ids = [row.chunk_id for doc in engine.store.list_documents() for row in engine.store.chunks_of_document(doc.doc_id)]
    views = engine.store.backfill(ids)
    assert sorted(views) == sorted(ids)
    for row in engine.store.get_chunks(ids):
        view = views[row.chunk_id]
        fields = ("chunk_id", "doc_id", "chunk_index", "content", "start_line", "end_line", "section", "unit")
        assert [getattr(view, name) for name in (*fields, "section_id")] == [
            getattr(row, name) for name in (*fields, "section_id")
        ]
        assert view.chunk == row and dict(view.chunk.metadata) == dict(row.metadata)
        assert view == ChunkView(row, view.source_uri, view.filename, view.doc_metadata)


def test_a_driver_error_in_a_search_read_is_a_store_error(searched: Engine) -> None:
    """The search reads run on the pool's DBAPI cursor: a driver error still reaches the caller as StoreError."""
    engine = searched
    ids = engine.store.all_active_chunk_ids()[:3]
    with engine.store.engine.begin() as conn:
        conn.exec_driver_sql("ALTER TABLE chunks RENAME TO chunks_gone")
    try:
        with pytest.raises(StoreError, match="no such table"):
            engine.store.backfill(ids)
        with pytest.raises(StoreError, match="no such table"):
            engine.store.chunk_sections(ids)
    finally:
        with engine.store.engine.begin() as conn:
            conn.exec_driver_sql("ALTER TABLE chunks_gone RENAME TO chunks")
    assert sorted(engine.store.backfill(ids)) == sorted(ids)  # the pool's connections still serve
