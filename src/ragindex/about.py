"""What is running: package version, truth-store schema version, dense model (``--version``, ``/v1/version``).

Cheap: nothing here loads a model or opens an index.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ragindex.config.settings import Settings
    from ragindex.engine import Engine


def package_version() -> str:
    """The installed ragindex version (from the package metadata; ``ragindex.__version__`` in a bare source tree)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("ragindex")
    except PackageNotFoundError:  # run from a source tree that was never installed
        from ragindex import __version__

        return __version__


def schema_version() -> str:
    """The newest truth-store migration this code applies (``mNNN_<what>``): the schema version it needs."""
    from ragindex.store.migrations import MIGRATIONS

    return MIGRATIONS[-1][0]


def dense_model(settings: Settings) -> str:
    """The dense model searches and ingests use: the local model's name, or the remote encoder's."""
    return settings.dense_model


def version_lines(settings: Settings | None) -> list[str]:
    """``ragindex --version``'s lines (the model line only when the settings are valid)."""
    lines = [f"ragindex {package_version()}", f"schema {schema_version()}"]
    if settings is not None:
        lines.append(f"dense model {dense_model(settings)}")
    return lines


def version_info(engine: Engine, *, other_steps: Iterable[str] = ()) -> dict[str, Any]:
    """``GET /v1/version``: versions, the schema of the code and of the database, the model and its collection.

    Args:
        engine: The engine whose truth store and collection are described.
        other_steps: Names of steps of other tables in the same migrations table (the service's jobs and keys).
    """
    from ragindex.store.migrations import MIGRATIONS, applied_migrations

    known = [name for name, _ in MIGRATIONS]
    sql = getattr(engine.store, "engine", None)  # the SQLAlchemy engine of the SQL truth store
    applied = applied_migrations(sql) if sql is not None else set()
    newest = next((name for name in reversed(known) if name in applied), None)
    # a step this code does not know was applied by a newer ragindex: this process is older than its database
    unknown = sorted(applied - set(known) - set(other_steps))
    collection = engine.read_collection()
    meta = next((m for m in engine.store.list_index_meta() if m.collection == collection), None)
    return {
        "version": package_version(),
        "schema": {
            "code": known[-1],
            "database": unknown[-1] if unknown else newest,
            "current": newest == known[-1] and not unknown,
        },
        "dense_model": dense_model(engine.settings),
        "collection": None if meta is None else {"collection": meta.collection, "dense": meta.dense_fingerprint},
    }
