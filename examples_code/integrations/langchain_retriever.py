"""ragindex as a LangChain retriever, end to end.

Ingests two documents of the sample corpus (``examples/``) into a temporary embedded index, then asks the
retriever a question and prints the documents it returns with their metadata. With ``--url`` it asks a running
``ragindex serve`` instead (``--api-key`` from ``ragindex keys create``, ``--set-id`` of your documents).

Run: ``pip install 'ragindex[langchain]'`` then ``python examples_code/integrations/langchain_retriever.py``.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from ragindex import Engine, Settings
from ragindex.integrations.langchain import RagindexRetriever

CORPUS = Path(__file__).resolve().parents[2] / "examples"
FILES = ("honeybee_colonies.txt", "photosynthesis.md")


def main() -> None:
    """Parse the arguments, build the retriever, print what it returns."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("query", nargs="?", default="what does the queen bee do")
    parser.add_argument("--url", help="a running `ragindex serve` (default: a temporary embedded index)")
    parser.add_argument("--api-key", help="a key of that service")
    parser.add_argument("--set-id", type=int, default=1)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        if args.url:
            retriever = RagindexRetriever(url=args.url, api_key=args.api_key, set_id=args.set_id, top_k=3)
        else:
            data_dir = Path(tmp) / "index"
            with Engine(Settings(data_dir=data_dir)) as engine:
                engine.ingest([CORPUS / name for name in FILES], user_id=1, set_id=args.set_id)
            retriever = RagindexRetriever(data_dir=data_dir, set_id=args.set_id, top_k=3)

        with retriever:
            for doc in retriever.invoke(args.query):
                meta = doc.metadata
                scores = ", ".join(f"{name} {score:.3f}" for name, score in meta["scores"].items())
                print(f"{meta['rank']}. {meta['filename']} (section: {meta['section']}; {scores})")
                print(f"   {doc.page_content[:100]}...")


if __name__ == "__main__":
    main()
