"""Parsing and chunking in a child process: a hang, a crash or a runaway parser costs one file, never the ingest.

:class:`IsolatedParser` keeps one long-lived child (``python -c ... serve()``) and sends it each file's path and
bytes over a pipe; the child runs the file's loader and answers with the documents or the error. The ingest then
sends back the documents that must be chunked, and the child cuts them (:meth:`IsolatedParser.cut`, with the
ingest's :class:`~ragindex.chunking.cutter.DocumentCutter`), under the same per-file deadline: chunking is user
input too, and a regular expression stuck on a hostile line ignores every signal, so only a process boundary
bounds it. A file whose parse takes longer than the timeout gets its child killed (SIGKILL: a parser stuck in C
code ignores anything gentler) and a :class:`~ragindex.errors.ParseTimeoutError` (a
:class:`~ragindex.errors.ChunkingTimeoutError` when the chunking ran out of time); a child that dies (a segfault,
the kernel's OOM killer, ``os._exit`` in a parser) gives a :class:`~ragindex.errors.DocumentLoadError` naming the
signal. The next file starts a fresh child. Any exception of a loader in the child (``RecursionError``,
``MemoryError``, ``UnicodeError``, ``OSError``, a parser's own errors) comes back as a ``DocumentLoadError`` of
that file; a chunker's comes back per document.

While it waits for the child, the parent calls a ``poll`` function about every :data:`POLL_SECONDS`: a stop or a
cancel raised there kills the child at once, so a job is never stuck behind one slow file.

The child is started on the first file that must be parsed (a no-op ingest never starts it) and costs about
0.2 s; each file then costs one round trip of its bytes through a pipe.
"""

from __future__ import annotations

import contextlib
import logging
import os
import pickle
import select
import signal
import struct
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from ragindex import errors
from ragindex.closing import Closing
from ragindex.errors import (
    ChunkingTimeoutError,
    ConfigurationError,
    DocumentLoadError,
    ParseTimeoutError,
    RagindexError,
)
from ragindex.loaders.registry import LoaderRegistry
from ragindex.types import Document

if TYPE_CHECKING:
    from ragindex.chunking.cutter import Cut, DocumentCutter

log = logging.getLogger(__name__)

Poll = Callable[[], None]
"""Called while the parent waits for the child; whatever it raises kills the child and propagates."""

_LENGTH = struct.Struct("!Q")
START_SECONDS = 60.0
"""How long a child may take to start (import the loaders); the parse timeout starts once it is ready."""
POLL_SECONDS = 0.2
"""How often the parent calls its ``poll`` function while a file is parsed or chunked."""
_CHILD = (
    "import sys; sys.path.insert(0, {root!r}); from ragindex.loaders.isolated import serve; "
    "serve({parent}, memory_mb={memory_mb})"
)


class IsolatedParser(Closing):
    """Parses files with the loaders of ``registry`` in a child process that a timeout kills.

    Args:
        registry: The loaders. It is pickled to the child, so a loader added with ``LoaderRegistry(extra=...)``
            must be importable there (the child gets this process's ``sys.path``).
        timeout: Seconds one file may take (``RAGINDEX_PARSE_TIMEOUT_SECONDS``); 0 parses in this process,
            with no limit and no isolation.
        memory_mb: Address space of the child (``RLIMIT_AS``, ``RAGINDEX_PARSE_MEMORY_MB``); a parse that needs
            more fails with a ``MemoryError`` (or the child dies), as a ``DocumentLoadError`` of its file. 0: none.

    Use as a context manager, or call :meth:`close`, so the child ends with the ingest.
    """

    def __init__(self, registry: LoaderRegistry, *, timeout: float, memory_mb: int = 0) -> None:
        self.registry = registry
        self.timeout = timeout
        self.memory_mb = memory_mb
        self._child: subprocess.Popen[bytes] | None = None
        self._busy = False  # a file is being parsed: closing must not wait for it
        self._cutter: DocumentCutter | None = None  # the cutter the child holds (sent with its first cut)
        self._local: DocumentCutter | None = None  # a cutter the child cannot have: it cuts in this process
        self.started = 0  # children started (one, plus one after each timeout or crash)

    def load(
        self, path: Path, data: bytes, *, deadline: float | None = None, poll: Poll | None = None
    ) -> list[Document]:
        """The documents of ``path`` (whose bytes are ``data``), parsed by the loader of its suffix.

        Args:
            path: The file (its suffix picks the loader).
            data: Its bytes.
            deadline: ``time.monotonic()`` by which the parse must end (default: the timeout from now); the
                ingest gives a file one deadline for its parsing and its chunking.
            poll: Called about every :data:`POLL_SECONDS` while the child parses; what it raises kills the child.

        Raises:
            ConfigurationError: The child process could not start.
            UnsupportedFormatError: No loader handles the suffix.
            ParseTimeoutError: The parse took longer than the timeout; the child was killed.
            DocumentLoadError: The loader failed (whatever it raised), or the child died while parsing.
        """
        loader = self.registry.for_path(path)
        if self.timeout <= 0:
            return loader.load(path, data)
        status, payload = self._ask(("load", (str(path), data)), path, deadline, poll, ParseTimeoutError, "parsing")
        if status == "ok":
            documents: list[Document] = payload
            return documents
        raise _rebuild(path, *payload)

    def cut(
        self,
        cutter: DocumentCutter,
        documents: Sequence[Document],
        *,
        path: Path,
        deadline: float | None = None,
        poll: Poll | None = None,
    ) -> list[Cut | RagindexError]:
        """Each document's :class:`~ragindex.chunking.cutter.Cut`, or the error that document alone failed with.

        Args:
            cutter: The ingest's cutter (pickled to the child once, with the first documents it cuts).
            documents: Documents of the file ``path``.
            path: The file they come from (named in errors).
            deadline: As for :meth:`load`: the file's deadline.
            poll: As for :meth:`load`.

        Raises:
            ChunkingTimeoutError: The chunking did not end by the deadline; the child was killed.
            DocumentLoadError: The child died while chunking.
            RagindexError: A chunker failed in a way that concerns the run (a ``ConfigurationError``).
        """
        if self.timeout <= 0 or cutter is self._local:
            return [_cut_here(cutter, doc, path) for doc in documents]
        try:
            sent = None if cutter is self._cutter else pickle.dumps(cutter, protocol=pickle.HIGHEST_PROTOCOL)
        except (pickle.PicklingError, AttributeError, TypeError) as exc:  # a chunker built from a closure, say
            return self._cut_locally(cutter, documents, path, f"it does not pickle ({type(exc).__name__}: {exc})")
        status, payload = self._ask(
            ("cut", (sent, list(documents))), path, deadline, poll, ChunkingTimeoutError, "chunking"
        )
        if status == "local":  # the child could not import the chunker's class (one defined in __main__)
            return self._cut_locally(cutter, documents, path, str(payload))
        if status != "ok":
            raise _rebuild(path, *payload, family=RagindexError)
        self._cutter = cutter
        return [cut if kind == "ok" else _rebuild(path, *cut, family=RagindexError) for kind, cut in payload]

    def _cut_locally(
        self, cutter: DocumentCutter, documents: Sequence[Document], path: Path, why: str
    ) -> list[Cut | RagindexError]:
        """Cut in this process from now on: a chunker the child cannot have still chunks, without the deadline."""
        log.warning(
            "the chunker %s cannot run in the parse process: %s; documents are chunked in this process, "
            "without RAGINDEX_PARSE_TIMEOUT_SECONDS (define the chunker in an importable module to restore it)",
            type(cutter.chunker).__name__,
            why,
        )
        self._local = cutter
        return [_cut_here(cutter, doc, path) for doc in documents]

    def _ask(
        self,
        request: tuple[str, Any],
        path: Path,
        deadline: float | None,
        poll: Poll | None,
        timeout_error: type[ParseTimeoutError],
        doing: str,
    ) -> tuple[str, Any]:
        """Send one request to the child (started if needed) and return its reply, within the deadline."""
        if self._child is not None and self._child.poll() is not None:  # died while idle: not this file's fault
            self._kill()
        child = self._child or self._start()
        frame = pickle.dumps(request, protocol=pickle.HIGHEST_PROTOCOL)
        if deadline is None:
            deadline = time.monotonic() + self.timeout
        self._busy = True
        try:
            _write_frame(_stdin(child), frame)
            reply = _read_frame(_stdout(child).fileno(), deadline, poll)
            self._busy = False
        except TimeoutError:
            self._kill()
            raise timeout_error(
                f"{path.name}: {doing} took longer than {self.timeout:g} s and was stopped "
                "(RAGINDEX_PARSE_TIMEOUT_SECONDS, the time each file may take to parse and chunk)",
                path=str(path),
                timeout=self.timeout,
            ) from None
        except (OSError, EOFError):  # a broken pipe or end of file: the child died
            code = self._kill()
            raise DocumentLoadError(
                f"{path.name}: the parser process died while {doing} it ({_describe(code)}): a parser crash, "
                "or it ran out of memory",
                path=str(path),
            ) from None
        except BaseException:  # poll raised (a stop, a cancel): the child may be mid-file, it cannot be reused
            self._kill()
            raise
        status, payload = pickle.loads(reply)
        return str(status), payload

    def close(self) -> None:
        """End the child: it exits when its input closes (killed at once when interrupted mid-parse, else after 5 s)."""
        if self._busy:
            self._kill()
        child, self._child = self._child, None
        if child is None:
            return
        try:
            _stdin(child).close()
            child.wait(timeout=5)
        except (OSError, subprocess.TimeoutExpired):
            child.kill()
            child.wait()
        finally:
            _stdout(child).close()

    def _start(self) -> subprocess.Popen[bytes]:
        try:
            registry = pickle.dumps(self.registry, protocol=pickle.HIGHEST_PROTOCOL)
        except (pickle.PicklingError, AttributeError, TypeError) as exc:
            raise _not_started(f"the loaders do not pickle ({type(exc).__name__}: {exc})") from exc
        root = str(Path(__file__).resolve().parents[2])  # the directory holding this ragindex package
        child = subprocess.Popen(
            [sys.executable, "-c", _CHILD.format(root=root, parent=os.getpid(), memory_mb=self.memory_mb)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            bufsize=0,
            close_fds=True,
        )
        self._child = child
        self._cutter = None
        self.started += 1
        try:
            _write_frame(_stdin(child), pickle.dumps(list(sys.path)))
            _write_frame(_stdin(child), registry)
            status, detail = pickle.loads(_read_frame(_stdout(child).fileno(), time.monotonic() + START_SECONDS))
        except (OSError, EOFError, TimeoutError) as exc:
            status, detail = "error", f"{type(exc).__name__} (see its output above)"
        if status != "ready":
            self._kill()
            raise _not_started(detail)
        return child

    def _kill(self) -> int:
        self._busy = False
        self._cutter = None
        child, self._child = self._child, None
        if child is None:
            return 0
        child.kill()
        code = child.wait()
        for stream in (_stdin(child), _stdout(child)):
            with contextlib.suppress(OSError):  # the pipe to a dead child cannot flush: nothing is lost
                stream.close()
        return code


def _not_started(detail: str) -> ConfigurationError:
    return ConfigurationError(
        f"the parser process did not start: {detail}. A loader added with LoaderRegistry(extra=...) must be "
        "importable in a new Python process; RAGINDEX_PARSE_TIMEOUT_SECONDS=0 parses in-process instead."
    )


def _stdin(child: subprocess.Popen[bytes]) -> IO[bytes]:
    assert child.stdin is not None  # Popen(stdin=PIPE) always sets it
    return child.stdin


def _stdout(child: subprocess.Popen[bytes]) -> IO[bytes]:
    assert child.stdout is not None  # Popen(stdout=PIPE) always sets it
    return child.stdout


def _describe(returncode: int) -> str:
    if returncode < 0:
        try:
            return f"killed by {signal.Signals(-returncode).name}"
        except ValueError:
            return f"killed by signal {-returncode}"
    return f"exit code {returncode}"


def _rebuild(
    path: Path,
    kind: str,
    message: str,
    context: dict[str, Any],
    *,
    family: type[RagindexError] = DocumentLoadError,
) -> RagindexError:
    """The parent's error for what a loader or chunker raised in the child: its own class when it is of ``family``.

    A loader's errors are rebuilt only as load errors (a ``ConfigurationError`` of one file's OCR language fails
    that file alone); a chunker's keep any ragindex class, as they would in-process (a chunk limit is a
    ``DocumentTooLargeError``; a chunker that cannot load its tokenizer stops the run).
    """
    cls = getattr(errors, kind, None)
    if isinstance(cls, type) and issubclass(cls, family):
        try:
            rebuilt: RagindexError = cls(message, **context)
            return rebuilt
        except TypeError:  # a subclass with another signature: keep the message
            pass
    return DocumentLoadError(f"{path.name}: {kind}: {message}", path=str(path), error=kind)


def _cut_here(cutter: DocumentCutter, document: Document, path: Path) -> Cut | RagindexError:
    """:meth:`DocumentCutter.cut` in this process, with a failure of this document returned as its error."""
    try:
        return cutter.cut(document)
    except RagindexError as exc:
        return exc
    except Exception as exc:  # a chunker may raise anything on one document (RecursionError, MemoryError)
        return DocumentLoadError(f"{path.name}: {type(exc).__name__}: {exc}", path=str(path), error=type(exc).__name__)


def _write_frame(stream: IO[bytes], payload: bytes) -> None:
    stream.write(_LENGTH.pack(len(payload)))
    stream.write(payload)
    stream.flush()


def _read_frame(fd: int, deadline: float | None, poll: Poll | None = None) -> bytes:
    """One length-prefixed frame from ``fd``; TimeoutError past ``deadline``, EOFError at end of file.

    ``poll`` is called about every :data:`POLL_SECONDS` while nothing arrives.
    """
    (size,) = _LENGTH.unpack(_read_exact(fd, _LENGTH.size, deadline, poll))
    return _read_exact(fd, size, deadline, poll)


def _read_exact(fd: int, size: int, deadline: float | None, poll: Poll | None = None) -> bytes:
    parts: list[bytes] = []
    left = size
    while left:
        if deadline is not None:
            while True:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise TimeoutError
                if select.select([fd], [], [], min(remaining, POLL_SECONDS) if poll else remaining)[0]:
                    break
                if poll is not None:
                    poll()
        part = os.read(fd, min(left, 1 << 20))
        if not part:
            raise EOFError
        parts.append(part)
        left -= len(part)
    return b"".join(parts)


def serve(parent: int | None = None, *, memory_mb: int = 0) -> None:
    """The child's loop: read (path, bytes) frames from stdin, answer each with a frame on the original stdout.

    The loaders' own prints go to stderr (file descriptor 1 is pointed there), so they can never corrupt a reply.
    On Linux the child is killed when ``parent`` dies, even in the middle of a hanging parse.
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the whole process group: the parent decides
    _die_with(parent)
    _limit_memory(memory_mb)
    replies = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    requests = sys.stdin.buffer.fileno()
    try:
        paths: list[str] = pickle.loads(_read_frame(requests, None))
        sys.path[:0] = [p for p in paths if p not in sys.path]
        try:
            registry: LoaderRegistry = pickle.loads(_read_frame(requests, None))
        except Exception as exc:  # a loader class that this process cannot import
            _write_frame(replies, pickle.dumps(("error", f"{type(exc).__name__}: {exc}")))
            return
        _write_frame(replies, pickle.dumps(("ready", None)))
        cutter: DocumentCutter | None = None
        while True:
            op, payload = pickle.loads(_read_frame(requests, None))
            if op == "cut":
                sent, documents = payload
                if sent is not None:
                    try:
                        cutter = pickle.loads(sent)
                    except Exception as exc:  # its class is not importable here: the parent cuts instead
                        _write_frame(replies, pickle.dumps(("local", f"{type(exc).__name__}: {exc}")))
                        continue
                assert cutter is not None  # the parent sends the cutter with the first cut of each child
                _write_frame(replies, _cut_all(cutter, documents))
            else:
                raw_path, data = payload
                _write_frame(replies, _answer(registry, Path(raw_path), data))
    except EOFError:  # the parent closed the pipe: the ingest is over
        return


def _limit_memory(memory_mb: int) -> None:
    """Cap the child's address space, so a runaway parse gets a MemoryError instead of the machine's memory."""
    if memory_mb <= 0:
        return
    import resource

    limit = memory_mb * 1024 * 1024
    with contextlib.suppress(ValueError, OSError):  # a hard limit below ours: keep it
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def _die_with(parent: int | None) -> None:
    """Ask the kernel for SIGKILL when the parent dies (a parent killed by SIGKILL cannot kill its child itself)."""
    if parent is None or not sys.platform.startswith("linux"):
        return
    import ctypes

    pr_set_pdeathsig = 1
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, signal.SIGKILL)
    if os.getppid() != parent:  # it died before the request took effect
        os._exit(0)


def _answer(registry: LoaderRegistry, path: Path, data: bytes) -> bytes:
    try:
        reply: tuple[str, Any] = ("ok", registry.for_path(path).load(path, data))
        return pickle.dumps(reply, protocol=pickle.HIGHEST_PROTOCOL)
    # every failure of one file is that file's error (a parser may raise anything, MemoryError included)
    except Exception as exc:
        return pickle.dumps(("error", _error(exc)))


def _cut_all(cutter: DocumentCutter, documents: Sequence[Document]) -> bytes:
    """The reply to a cut request: each document's cut or error (one document's failure is its own)."""
    cuts: list[tuple[str, Any]] = []
    for document in documents:
        try:
            cuts.append(("ok", cutter.cut(document)))
        except Exception as exc:
            cuts.append(("error", _error(exc)))
    try:
        return pickle.dumps(("ok", cuts), protocol=pickle.HIGHEST_PROTOCOL)
    except Exception as exc:  # a draft that does not pickle (a chunker's metadata): the whole request fails
        return pickle.dumps(("error", _error(exc)))


def _error(exc: BaseException) -> tuple[str, str, dict[str, Any]]:
    """``(class name, message, context)`` of an error, as it travels to the parent (a context that pickles)."""
    message = getattr(exc, "message", None) or str(exc) or type(exc).__name__
    context = dict(getattr(exc, "context", None) or {})
    try:
        pickle.dumps(context)
    except Exception:  # a context value that does not pickle: the message is what matters
        context = {}
    return type(exc).__name__, message, context
