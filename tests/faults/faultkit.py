"""Shared pieces of the fault-injection suite: the corpus, the settings, and the convergence invariants.

``assert_converged`` is the definition of "nothing lost": after a fault and a repair, the truth
store and the index agree exactly, every index copy holds the vector of its chunk's *current*
content, nothing removed is still in the index, and every document's ACTIVE chunks still cover a
version of its text that was really written.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections import defaultdict
from collections.abc import Collection, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ragindex.config.settings import Settings
from ragindex.engine import Engine
from ragindex.hashing import sha256_text
from ragindex.index.protocol import TenantFilter, VectorQuery
from ragindex.pipeline.sync import unit_kinds
from ragindex.store.records import ChunkRow

CHUNK_SIZE = 160
CHUNK_OVERLAP = 20
CLI = str(Path(sys.executable).with_name("ragindex"))

# four documents of four or five chunks each, every chunk with its own content; the first
# sentence of each names a topic no other document mentions (the "distinctive phrase")
CORPUS = {
    "bees.txt": (
        "Honeybee colonies keep one queen, thousands of female workers and a few hundred drones. "
        "Workers secrete wax from glands under the abdomen and shape it into hexagonal cells. "
        "Foragers dance in a figure of eight to tell their sisters the bearing of a flower patch. "
        "In winter the bees form a tight cluster and shiver their flight muscles to keep warm. "
        "A swarm leaves with the old queen while a new queen hatches in the parent hive."
    ),
    "photosynthesis.txt": (
        "Photosynthesis in chloroplasts turns light, water and carbon dioxide into sugar. "
        "The light reactions split water on the thylakoid membrane and release oxygen gas. "
        "ATP synthase spins like a turbine as protons flow back across the membrane. "
        "The Calvin cycle fixes carbon with rubisco, the most abundant enzyme on the planet. "
        "C4 grasses such as maize concentrate carbon dioxide to avoid wasteful photorespiration."
    ),
    "tcp.txt": (
        "TCP congestion control grows the congestion window by slow start after a connection opens. "
        "Once the window passes the threshold, additive increase adds one segment per round trip. "
        "Three duplicate acknowledgements trigger fast retransmit of the missing segment. "
        "A timeout is treated as severe congestion and the window falls back to one segment. "
        "CUBIC replaces the linear growth with a cubic function of the time since the last loss."
    ),
    "bread.md": (
        "Sourdough starter is flour and water fermented by wild yeast and lactobacilli bacteria. "
        "Feeding the starter twice a day keeps the culture active and pleasantly sour in taste. "
        "Autolyse rests flour and water for an hour so gluten forms before the salt is added. "
        "Stretch and fold sessions during bulk fermentation build strength without kneading. "
        "A hot Dutch oven traps steam so the loaf springs up before the crust finally sets."
    ),
}

PHRASES = {
    "bees.txt": "honeybee colonies queen workers drones",
    "photosynthesis.txt": "photosynthesis chloroplasts light sugar",
    "tcp.txt": "TCP congestion window slow start",
    "bread.md": "sourdough starter wild yeast lactobacilli",
}

# a re-ingest after a change: one sentence replaced in two documents (old chunks REMOVED, new ones added)
REPLACED = {  # file -> (the old sentence, the new one)
    "bees.txt": (
        "Foragers dance in a figure of eight to tell their sisters the bearing of a flower patch.",
        "Guard bees at the entrance sniff every arrival and chase away robbers from other hives.",
    ),
    "tcp.txt": (
        "Three duplicate acknowledgements trigger fast retransmit of the missing segment.",
        "Explicit congestion notification marks packets instead of dropping them at the router.",
    ),
}
CHANGED = {name: CORPUS[name].replace(old, new) for name, (old, new) in REPLACED.items()}

# the failpoints of the index stages and of the purge, as the matrices of the suite name them
BOUNDARIES = ("after_claim", "after_encode", "after_index_write", "before_mark_success")
INDEX_POINTS = [f"{kind}.{where}" for kind in ("dense", "bm25") for where in BOUNDARIES]
PURGE_POINTS = ["purge.before_index_delete", "purge.after_index_delete"]

NEW_CHUNK_TEXT = "Glaciers carve U-shaped valleys and leave moraines of unsorted boulders where the ice stops."


def settings(data_dir: Path, **extra: Any) -> Settings:
    """The settings every engine of the suite uses (small chunks: several per document).

    The light (ONNX) encoder is off: :func:`warm_cache` seeds the torch encoder's cache key, and the suite is
    about the pipeline's failpoints, not the encoder runtimes (tests/encoders_local/test_onnx_encoder.py).
    """
    return Settings(
        data_dir=data_dir, chunk_size=CHUNK_SIZE, chunk_overlap=CHUNK_OVERLAP, **{"light_encoder": "off", **extra}
    )


def cli_env(
    data_dir: Path, failpoints: str | None = None, extra_env: Mapping[str, str] | None = None
) -> dict[str, str]:
    """Environment of a ragindex subprocess with the same settings as :func:`settings`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAGINDEX_")}
    env.update(
        RAGINDEX_DATA_DIR=str(data_dir),
        RAGINDEX_CHUNK_SIZE=str(CHUNK_SIZE),
        RAGINDEX_CHUNK_OVERLAP=str(CHUNK_OVERLAP),
        RAGINDEX_LIGHT_ENCODER="off",
        OPENBLAS_NUM_THREADS="1",
    )
    if failpoints:
        env["RAGINDEX_FAILPOINTS"] = failpoints
    env.update(extra_env or {})
    return env


def run_cli(
    data_dir: Path,
    args: list[str],
    failpoints: str | None = None,
    *,
    extra_env: Mapping[str, str] | None = None,
    timeout: float = 180,
) -> subprocess.CompletedProcess[str]:
    """Run the real ``ragindex`` command to its end (or its death); return the CompletedProcess."""
    return subprocess.run(
        [CLI, *args],
        env=cli_env(data_dir, failpoints, extra_env),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def write_corpus(folder: Path, files: Mapping[str, str] = CORPUS) -> dict[str, str]:
    """Write ``files`` into ``folder``; return content hash -> text of every version written."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (folder / name).write_text(text, encoding="utf-8")
    return versions_of(files.values())


def versions_of(texts: Iterable[str]) -> dict[str, str]:
    """content hash (as the truth store computes it) -> text."""
    return {sha256_text(t): t for t in texts}


def all_chunks(engine: Engine, *, unit: str | None = "chunk") -> list[ChunkRow]:
    """Every chunk of every document, ACTIVE and REMOVED (``unit=None``: its sections too)."""
    store = engine.store
    return [
        c
        for d in store.list_documents(include_removed=True)
        for c in store.chunks_of_document(d.doc_id, include_removed=True, unit=unit)
    ]


def row_kinds(engine: Engine, row: ChunkRow) -> tuple[str, ...]:
    """The vector kinds a row must have: its unit's (sections: the lexical ones, chunks: dense), else all."""
    units = unit_kinds(engine.kinds, engine.settings.section_max_chars)
    return tuple(units[row.unit]) if units is not None else tuple(engine.kinds)


def chunk_by_text(engine: Engine, needle: str) -> ChunkRow:
    """The ACTIVE chunk whose content contains ``needle``."""
    rows = [c for c in all_chunks(engine) if c.lifecycle_status == "ACTIVE" and needle in c.content]
    assert len(rows) == 1, f"{len(rows)} ACTIVE chunks contain {needle!r}"
    return rows[0]


_VECTORS: dict[str, np.ndarray] = {}  # content hash -> a fresh encode by the real model, once per process


def encode(engine: Engine, texts: Iterable[str]) -> list[np.ndarray]:
    """Document vectors of ``texts`` from the real model, each content encoded once per test process."""
    texts = list(texts)
    missing = {sha256_text(t): t for t in texts if sha256_text(t) not in _VECTORS}
    if missing:
        _VECTORS.update(zip(missing, engine.dense.encode_documents(list(missing.values())), strict=True))
    return [_VECTORS[sha256_text(t)] for t in texts]


def chunk_texts(engine: Engine, paths: Iterable[Path]) -> list[str]:
    """The chunk contents an ingest of ``paths`` produces (the real loaders and chunker)."""
    from ragindex import factory

    loaders = factory.build_loaders(engine.settings)
    out: list[str] = []
    for path in paths:
        for doc in loaders.for_path(path).load(path, path.read_bytes()):
            out += [draft.text for draft in engine.chunker.chunk(doc)]
    return out


def warm_cache(
    engine: Engine, paths: Iterable[Path] = (), texts: Iterable[str] = (), documents: Iterable[str] = ()
) -> None:
    """Put the real vectors of the chunks of ``paths`` and ``documents`` (plain texts), and of ``texts``, in the cache.

    The index stages then find every vector cached and pass every failpoint without running the
    model again: a subprocess never loads it (1 s instead of 10 s on two cores), and the in-process
    tests encode each content once per process.
    """
    from ragindex.types import Document

    pieces = chunk_texts(engine, paths) + list(texts)
    for text in documents:
        pieces += [d.text for d in engine.chunker.chunk(Document(source_uri="warm", text=text, parser="text"))]
    vectors = encode(engine, pieces)
    engine.store.cache_vectors(
        engine.dense.cache_key, {sha256_text(t): v for t, v in zip(pieces, vectors, strict=True)}
    )


def _stored_vectors(engine: Engine, collection: str, chunks: Sequence[ChunkRow]) -> dict[str, Any]:
    """chunk_id -> {vector name: stored vector}, read back from the Edge shards (the protocol has no getter)."""
    by_bucket: dict[int, list[str]] = defaultdict(list)
    for c in chunks:
        by_bucket[c.bucket_id].append(c.chunk_id)
    out: dict[str, Any] = {}
    for bucket, ids in by_bucket.items():
        shard = engine.index._shard(collection, bucket)  # type: ignore[attr-defined]
        for record in shard.retrieve(ids, False, True):
            out[str(record.id)] = record.vector
    return out


def covered(text: str, pieces: list[str]) -> bool:
    """Whether ``pieces`` (in order, possibly overlapping) are substrings that cover every non-blank char."""
    mask = np.zeros(len(text), dtype=bool)
    cursor = 0
    for piece in pieces:
        at = text.find(piece, cursor)
        if at < 0:
            at = text.find(piece)
        if at < 0:
            return False
        mask[at : at + len(piece)] = True
        cursor = at + 1
    blank = np.array([ch.isspace() for ch in text], dtype=bool)
    return bool(np.all(mask | blank))


def _assert_vectors(engine: Engine, collection: str, active: Sequence[ChunkRow]) -> None:
    """The cached vector is the current indexed text's, and each point holds that very vector (every kind)."""
    store = engine.store
    for c in active:
        assert c.content_hash == sha256_text(c.indexed_text)
    dense_rows = [c for c in active if "dense" in row_kinds(engine, c)]
    if dense_rows:
        dense = engine.dense
        cached = store.cached_vectors(dense.cache_key, [c.content_hash for c in dense_rows])
        fresh = encode(engine, [c.indexed_text for c in dense_rows])
        for c, vector in zip(dense_rows, fresh, strict=True):
            assert c.content_hash in cached, f"no cached vector for chunk {c.chunk_id}"
            assert float(np.dot(cached[c.content_hash], vector)) > 0.995, f"cache holds a stale vector: {c.chunk_id}"
            hits = engine.index.search(
                collection,
                c.bucket_id,
                VectorQuery(using="dense", dense=cached[c.content_hash]),
                TenantFilter(user_id=c.user_id, set_id=c.set_id),
                limit=1,
            )
            assert hits and hits[0][0] == c.chunk_id, f"chunk {c.chunk_id} is not its own nearest point: {hits}"
            assert hits[0][1] > 1 - 1e-4, f"point {c.chunk_id} holds another vector (score {hits[0][1]})"
        # and, read back from the Edge shards, every stored vector is the current content's
    if active:
        stored = _stored_vectors(engine, collection, active)
        for c in active:
            point = stored[c.chunk_id]
            if c in dense_rows:
                dense_copy = np.asarray(point["dense"], dtype=np.float32)
                assert float(np.dot(dense_copy, cached[c.content_hash])) > 1 - 1e-4, f"stale dense copy: {c.chunk_id}"
            for kind in row_kinds(engine, c):
                if kind == "dense":
                    continue
                want = engine.sparse[kind].encode_documents([c.indexed_text])[0]
                got = dict(zip(point[kind].indices, point[kind].values, strict=True))
                assert got.keys() == set(want.indices), f"stale {kind} copy: {c.chunk_id}"
                values = [got[i] for i in want.indices]
                assert np.allclose(values, want.values, rtol=1e-4, atol=1e-4), (c.chunk_id, kind, values, want.values)


def assert_converged(
    engine: Engine,
    versions: Mapping[str, str],
    *,
    files: Collection[str] | None = None,
    skip_docs: Collection[int] = (),
    phrases: Mapping[str, str] = PHRASES,
) -> None:
    """Assert every invariant of "nothing lost" (see the module docstring).

    Args:
        engine: An engine on the data dir under test (after repair).
        versions: content hash -> text of every document version written to disk; each ACTIVE
            document must hold exactly one of them, covered by its ACTIVE chunks.
        files: When given, the file names the ACTIVE documents must be exactly.
        skip_docs: Documents whose chunks were edited on purpose (no coverage check).
        phrases: file name -> query that must find that file's document first.
    """
    store, kinds = engine.store, engine.kinds
    collection = engine.read_collection()
    assert collection is not None, "no ACTIVE collection"
    chunks = all_chunks(engine, unit=None)  # every invariant holds for sections as for chunks
    active = [c for c in chunks if c.lifecycle_status == "ACTIVE"]
    removed = [c for c in chunks if c.lifecycle_status == "REMOVED"]

    # 1. truth: every ACTIVE chunk finished for every kind; every REMOVED chunk purged
    unfinished = [
        (c.chunk_id, k, c.status_of(k))
        for c in active
        for k in kinds
        if c.status_of(k) != ("SUCCESS" if k in row_kinds(engine, c) else None)
    ]
    assert not unfinished, f"ACTIVE rows not SUCCESS (or a kind on the wrong unit): {unfinished[:5]}"
    assert not store.removed_unpurged(), "REMOVED chunks whose index copies were never purged"

    # 2. index: each ACTIVE chunk exactly once, in its bucket, with every kind; nothing else
    places: dict[str, list[tuple[int, frozenset[str]]]] = defaultdict(list)
    for bucket in range(engine.settings.bucket_count):
        for cid, names in engine.index.vectors_present(collection, bucket).items():
            places[cid].append((bucket, names))
    for c in active:
        where = places.get(c.chunk_id, [])
        assert len(where) == 1, f"chunk {c.chunk_id} is in the index {len(where)} times"
        bucket, names = where[0]
        assert bucket == c.bucket_id and set(row_kinds(engine, c)) == names, (c.chunk_id, bucket, names)
    ghosts = [c.chunk_id for c in removed if c.chunk_id in places]
    assert not ghosts, f"REMOVED chunks still in the index: {ghosts[:5]}"
    orphans = sorted(set(places) - {c.chunk_id for c in active})
    assert not orphans, f"points with no ACTIVE chunk: {orphans[:5]}"

    # 3. vectors: the cached vector is the current content's, and the point holds that very vector
    _assert_vectors(engine, collection, active)

    # 4. no ghost hits, and every document is findable by its distinctive phrase
    docs = store.list_documents()
    by_name = {d.filename: d for d in docs}
    for name, phrase in phrases.items():
        if name not in by_name or by_name[name].doc_id in skip_docs:
            continue
        result = engine.search(phrase, user_id=1, set_id=1, top_k=10, mode="bm25")  # dense: see 3.
        assert result.hits, f"no hit for {phrase!r}"
        lifecycle = store.lifecycle_of([h.chunk_id for h in result.hits])
        assert all(lifecycle.get(h.chunk_id) == "ACTIVE" for h in result.hits), "a search returned a ghost hit"
        assert result.hits[0].doc_id == by_name[name].doc_id, f"{phrase!r} did not find {name} first"

    # 5. nothing lost: each ACTIVE document holds a written version of its text, fully covered
    if files is not None:
        assert sorted(d.filename for d in docs) == sorted(files)
    for doc in docs:
        mine = [c for c in active if c.doc_id == doc.doc_id and c.unit == "chunk"]
        if doc.doc_id in skip_docs:
            continue
        pieces = [c.content for c in sorted(mine, key=lambda c: c.chunk_index)]
        if not doc.content_hash:
            # recorded but not chunked (a crash before its truth write: no chunks), or a failure
            # recorded after it (record_failed_document clears the hash; the chunks stay): either
            # way the chunks, if any, must be one whole written version
            assert not mine or any(covered(text, pieces) for text in versions.values()), doc.filename
            continue
        assert doc.content_hash in versions, f"document {doc.filename} holds a version that was never written"
        assert covered(versions[doc.content_hash], pieces), f"chunks of {doc.filename} do not cover its text"

    # 6. no run or document left PROCESSING by a process that died (repair closes them)
    assert not store.runs(status="PROCESSING"), [r.run_id for r in store.runs(status="PROCESSING")]
    assert not [d.filename for d in docs if d.status == "PROCESSING"]

    assert engine.verify().ok, engine.verify().to_dict()
