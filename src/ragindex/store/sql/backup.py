"""SQLite's online backup of a live truth store (``ragindex backup``), and the counts a backup records.

The backup API copies the database page by page inside one read transaction: on the WAL journal the writers
(``serve``, ``watch``) go on while it runs, and the copy is the database as of the moment it began.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

from ragindex.errors import ConfigurationError, StoreError


def sqlite_path(url: str) -> Path | None:
    """The database file of a ``sqlite:///`` URL; None for another dialect (or an in-memory database)."""
    if not url.startswith("sqlite:"):
        return None
    path = url.removeprefix("sqlite:///")
    return None if not path or path == ":memory:" else Path(path)


def online_backup(url: str, dest: Path) -> None:
    """Copy the live SQLite truth store at ``url`` to ``dest`` (a new file), consistent as of the start of the copy.

    Raises:
        ConfigurationError: ``url`` is not a SQLite file.
        StoreError: SQLite failed (the partial copy is removed).
    """
    path = sqlite_path(url)
    if path is None:
        raise ConfigurationError(f"{url.split('@')[-1]} is not a SQLite file: back it up with `ragindex export`")
    partial = dest.with_name(dest.name + ".partial")
    partial.unlink(missing_ok=True)
    try:
        source = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30)
        try:
            target = sqlite3.connect(partial)
            try:
                source.backup(target)  # every page in one step: one snapshot, writers on the WAL are not blocked
            finally:
                target.close()
        finally:
            source.close()
        with open(partial, "rb") as handle:
            os.fsync(handle.fileno())
        os.replace(partial, dest)
    except sqlite3.Error as exc:
        partial.unlink(missing_ok=True)
        raise StoreError(f"the online backup of {path} failed: {exc}", backend="sqlite") from exc


def sqlite_counts(path: Path) -> dict[str, int]:
    """ACTIVE documents and chunks, and cached vectors, of the SQLite truth store at ``path`` (read only)."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        one = conn.execute
        return {
            "documents": int(one("SELECT count(*) FROM documents WHERE lifecycle_status = 'ACTIVE'").fetchone()[0]),
            "chunks": int(one("SELECT count(*) FROM chunks WHERE lifecycle_status = 'ACTIVE'").fetchone()[0]),
            "vectors": int(one("SELECT count(*) FROM embedding_cache").fetchone()[0]),
        }
    finally:
        conn.close()


def install_database(copy: Path, url: str) -> None:
    """Make ``copy`` the SQLite truth store at ``url``: its WAL and shared-memory files go, then the file is replaced.

    The caller holds the data dir's index lock and has closed every connection to the database.
    """
    path = sqlite_path(url)
    if path is None:
        raise ConfigurationError(
            f"{url.split('@')[-1]} is not a SQLite file: a SQLite backup restores into the embedded default "
            "(RAGINDEX_DATABASE_URL unset); restore it there, then `ragindex migrate` it"
        )
    path.parent.mkdir(parents=True, exist_ok=True)
    staged = path.with_name(path.name + ".restoring")
    with open(copy, "rb") as src, open(staged, "wb") as dst:
        while block := src.read(1024 * 1024):
            dst.write(block)
        dst.flush()
        os.fsync(dst.fileno())
    for suffix in ("-wal", "-shm"):
        path.with_name(path.name + suffix).unlink(missing_ok=True)
    os.replace(staged, path)
