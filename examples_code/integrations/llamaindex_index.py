"""ragindex as a LlamaIndex managed index: insert, filter, query, delete.

Builds a ``RagindexIndex`` on a temporary data dir (ragindex embeds: no embed model, no OpenAI key), inserts three
files of the sample corpus (``examples/``) as LlamaIndex ``Document`` objects and two hand-made nodes of one
document, then retrieves with a ``MetadataFilters``, answers through ``as_query_engine`` (with LlamaIndex's
``MockLLM``, which echoes its prompt: put a real LLM there), and deletes a document by its ``ref_doc_id``.

Run: ``pip install 'ragindex[llamaindex]'`` then ``python examples_code/integrations/llamaindex_index.py``.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from llama_index.core import Document
from llama_index.core.llms import MockLLM
from llama_index.core.schema import NodeRelationship, RelatedNodeInfo, TextNode
from llama_index.core.vector_stores.types import FilterOperator, MetadataFilter, MetadataFilters

from ragindex.integrations.llamaindex import RagindexIndex

CORPUS = Path(__file__).resolve().parents[2] / "examples"
FILES = {"honeybee_colonies.txt": "biology", "photosynthesis.md": "biology", "history_of_printing.txt": "history"}


def main() -> None:
    """Build the index, then print what each call returns."""
    documents = [
        Document(id_=name, text=(CORPUS / name).read_text(encoding="utf-8"), metadata={"topic": topic, "year": 2024})
        for name, topic in FILES.items()
    ]
    field_notes = [
        TextNode(id_="note-1", text="Bees dance to tell the hive where the flowers are.", metadata={"year": 2025}),
        TextNode(id_="note-2", text="A queen bee lays up to two thousand eggs a day.", metadata={"year": 2025}),
    ]
    for node in field_notes:
        node.metadata["topic"] = "biology"
        node.relationships[NodeRelationship.SOURCE] = RelatedNodeInfo(node_id="field-notes")

    with (
        tempfile.TemporaryDirectory() as tmp,
        RagindexIndex.from_documents(documents, data_dir=Path(tmp) / "index", set_id=1) as index,
    ):
        index.insert_nodes(field_notes)  # one record "field-notes", the nodes as its chunks, ids kept

        recent = MetadataFilters(filters=[MetadataFilter(key="year", value=2025, operator=FilterOperator.GTE)])
        print("nodes of 2025 about bees:")
        for found in index.as_retriever(similarity_top_k=2, filters=recent).retrieve("how do bees find flowers"):
            print(f"  {found.node.node_id} of {found.node.ref_doc_id}: {found.node.get_content()}")

        history = MetadataFilters(filters=[MetadataFilter(key="topic", value="history")])
        best = index.as_retriever(similarity_top_k=1, filters=history).retrieve("who invented movable type")[0]
        print(f"history: {best.node.ref_doc_id} {best.node.metadata}")

        answer = index.as_query_engine(llm=MockLLM(), similarity_top_k=1).query("how do plants make sugar")
        print(f"answered from: {[n.node.ref_doc_id for n in answer.source_nodes]}")

        index.delete_ref_doc("field-notes")
        print(f"after delete_ref_doc: {sorted(index.ref_doc_info)}")


if __name__ == "__main__":
    main()
