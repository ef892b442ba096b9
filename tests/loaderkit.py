"""Loaders that misbehave on purpose, for the tests of parse isolation (importable by the parser's child process).

Each one stands in for a third-party parser that hangs, crashes its process, runs out of memory or prints; the
thing under test is the isolation around it (:class:`ragindex.loaders.isolated.IsolatedParser`), never these.
"""

from __future__ import annotations

import os
import signal
import threading
from pathlib import Path

from ragindex.types import ChunkDraft, Document


class MisbehavingLoader:
    """``.hang`` waits forever, ``.crash`` kills its own process with SIGSEGV, ``.oom`` raises MemoryError,
    ``.chatty`` prints to stdout before answering, ``.exit`` calls ``os._exit(3)``, ``.hog`` allocates as many bytes
    as the file's text says (a runaway parse)."""

    name = "misbehaving"
    suffixes = (".hang", ".crash", ".oom", ".chatty", ".exit", ".hog")

    def load(self, path: Path, data: bytes) -> list[Document]:
        suffix = path.suffix
        if suffix == ".hang":
            threading.Event().wait()
        elif suffix == ".crash":
            os.kill(os.getpid(), signal.SIGSEGV)
        elif suffix == ".oom":
            raise MemoryError
        elif suffix == ".exit":
            os._exit(3)
        elif suffix == ".hog":
            hoard = bytearray(int(data))
            return [Document(source_uri=str(path), text=f"held {len(hoard)} bytes", parser=self.name)]
        elif suffix == ".chatty":
            print("a parser that talks on stdout", flush=True)
        return [Document(source_uri=str(path), text=data.decode("utf-8"), parser=self.name)]


class StallingChunker:
    """Cuts like the recursive chunker, but never returns on a document whose text contains ``STALL`` (a chunker
    caught in a runaway loop); it pickles, so it runs in the parse child."""

    name = "stalling"

    def __init__(self) -> None:
        from ragindex.chunking.recursive import RecursiveChunker

        self.inner = RecursiveChunker(512, 64)

    def config(self) -> dict[str, object]:
        return {"name": self.name}

    def chunk(self, document: Document) -> list[ChunkDraft]:
        if "STALL" in document.text:
            threading.Event().wait()
        return self.inner.chunk(document)


class ClosureChunker(StallingChunker):
    """A chunker that holds a lambda, so it does not pickle: it must still chunk (in the ingest's own process)."""

    name = "closure"

    def __init__(self) -> None:
        super().__init__()
        self.measure = lambda text: len(text)
