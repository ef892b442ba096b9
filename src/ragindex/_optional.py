"""Optional dependencies: which extra provides which module, and the one error a missing one raises.

``pip install ragindex`` gives the embedded default (engine, CLI, local model, SQLite, Qdrant Edge, text,
markdown, records and PDF loading). Everything else is an extra; code that needs one calls :func:`require`
(or :func:`missing_extra` in an ``except ImportError``) before importing it, so the error names the pip command
instead of showing a bare ``ModuleNotFoundError``.
"""

from __future__ import annotations

from importlib import import_module
from pathlib import Path

from ragindex.errors import DocumentLoadError, MissingExtraError

__all__ = ["EXTRAS", "missing_extra", "require", "require_for_file"]

EXTRAS: dict[str, tuple[str, ...]] = {
    "parsing": ("bs4", "docx", "pptx", "openpyxl"),
    "server": ("qdrant_client",),
    "mysql": ("pymysql",),
    "postgres": ("psycopg",),
    "service": ("fastapi", "starlette", "uvicorn", "multipart", "prometheus_client", "fastapi_offline"),
    "workers": ("dramatiq",),
    "eval": ("pytrec_eval",),
    "mcp": ("mcp",),
    "langchain": ("langchain_core",),
    "llamaindex": ("llama_index.core",),
}
"""The modules each extra provides (the import names, not the distribution names)."""


def missing_extra(extra: str, purpose: str, exc: ImportError) -> MissingExtraError:
    """The error for a failed import of an extra's module (raise it ``from exc``).

    Args:
        extra: The extra that provides the module (a key of :data:`EXTRAS`).
        purpose: What needs it, as the start of a sentence ("the HTTP service", "reading .docx files").
        exc: The ImportError of the failed import.
    """
    module = exc.name or "a module"
    return MissingExtraError(
        f"{purpose} needs the '{extra}' extra ({module} is not installed): pip install 'ragindex[{extra}]'",
        extra=extra,
        module=module,
    )


def require(extra: str, purpose: str, *modules: str) -> None:
    """Import ``modules`` (default: every module of ``extra``) or raise the error naming the extra.

    Args:
        extra: The extra that provides the modules.
        purpose: What needs them, as the start of a sentence.
        *modules: Import names to check; default :data:`EXTRAS[extra] <EXTRAS>`.

    Raises:
        MissingExtraError: One of them cannot be imported (also an ImportError).
    """
    for name in modules or EXTRAS[extra]:
        try:
            import_module(name)
        except ImportError as exc:
            if exc.name is None:
                exc.name = name
            raise missing_extra(extra, purpose, exc) from exc


def require_for_file(path: Path, extra: str, purpose: str, *modules: str) -> None:
    """:func:`require` for a loader: a missing extra is that file's failure, so the other files still ingest.

    Raises:
        DocumentLoadError: A module cannot be imported; the message names the file and the pip command.
    """
    try:
        require(extra, purpose, *modules)
    except MissingExtraError as exc:
        raise DocumentLoadError(f"{path.name}: {exc.message}", path=str(path), extra=extra) from exc
