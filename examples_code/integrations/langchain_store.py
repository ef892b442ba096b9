"""ragindex as a LangChain vector store: add, filter, get, delete, and a retriever on the same data dir.

Adds four documents with ids and metadata to a temporary embedded index, searches them with and without a
metadata filter, reads one back by id, deletes one, and then searches the same data dir with a
``RagindexRetriever`` next to the store (one engine per data dir per process: they share it). ragindex embeds
with its own models: no LangChain ``Embeddings`` is given. With ``--url`` it works on a running ``ragindex serve``
instead (``--api-key`` from ``ragindex keys create``; ``--set-id`` should be a set you can fill and empty).

Run: ``pip install 'ragindex[langchain]'`` then ``python examples_code/integrations/langchain_store.py``.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from langchain_core.documents import Document

from ragindex.integrations.langchain import RagindexRetriever, RagindexVectorStore

DOCUMENTS = [
    Document(id="ganymede", page_content="Ganymede is the largest moon of Jupiter.", metadata={"planet": "jupiter"}),
    Document(
        id="titan", page_content="Titan, largest moon of Saturn, has methane lakes.", metadata={"planet": "saturn"}
    ),
    Document(id="europa", page_content="Europa hides an ocean under its ice.", metadata={"planet": "jupiter"}),
    Document(id="bees", page_content="A honeybee colony has one queen.", metadata={"topic": "bees", "year": 2021}),
]


def main() -> None:
    """Parse the arguments, fill the store, print what each call returns."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", help="a running `ragindex serve` (default: a temporary embedded index)")
    parser.add_argument("--api-key", help="a key of that service")
    parser.add_argument("--set-id", type=int, default=1)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        data_dir = Path(tmp) / "index"
        if args.url:
            store = RagindexVectorStore(url=args.url, api_key=args.api_key, set_id=args.set_id)
        else:
            store = RagindexVectorStore(data_dir=data_dir, set_id=args.set_id)
        with store:
            print("added:", ", ".join(store.add_documents(DOCUMENTS)))
            for doc in store.similarity_search("the largest moon", k=2):
                print(f"moon: {doc.id} {doc.metadata}")
            for doc in store.similarity_search("the largest moon", k=2, filter={"planet": "saturn"}):
                print(f"saturn only: {doc.id} {doc.page_content}")
            print("by id:", [d.page_content for d in store.get_by_ids(["bees"])])
            store.delete(["titan"])
            print("after deleting titan:", [d.id for d in store.similarity_search("largest moon", k=4)])
            if not args.url:  # a retriever on the same data dir shares the store's engine
                with RagindexRetriever(data_dir=data_dir, set_id=args.set_id, top_k=1) as retriever:
                    best = retriever.invoke("honeybee queen", mode="bm25", k=1)
                    print("retriever:", best[0].metadata["source"], best[0].page_content)
            store.delete([d.id for d in DOCUMENTS if d.id])


if __name__ == "__main__":
    main()
