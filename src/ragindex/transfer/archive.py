"""The export archive: a tar file of JSON-lines parts, each checksummed, described by a manifest.

Layout (format version 1)::

    ragindex-export.json         first member: {"format": "ragindex-export", "format_version": 1}
    parts/000001-documents.jsonl
    parts/000002-chunks.jsonl    one JSON array per line: a row's values in the manifest's column order
    ...
    manifest.json                last member: versions, fingerprints, counts, and every part's rows and sha256

Parts are plain JSON lines unless the export is asked to gzip them (``.jsonl.gz``, level 1: about a third of the
size for text, and slower; vectors are never compressed, base64 of float32 does not shrink). A part holds at most
:data:`PART_ROWS` rows; it is written into a spooled temporary file (memory up to
:data:`SPOOL_BYTES`, then disk) before it goes into the tar, so writing an archive of any size takes bounded memory.
The file is written as ``FILE.partial`` and renamed at the end: a crashed export never leaves a truncated archive
under the requested name. Reading checks every part's sha256 against the manifest before anything is imported.
"""

from __future__ import annotations

import base64
import contextlib
import gzip
import hashlib
import io
import json
import os
import tarfile
import tempfile
from collections.abc import Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import IO, Any

import orjson

from ragindex.errors import ArchiveError

FORMAT = "ragindex-export"
FORMAT_VERSION = 1
SUPPORTED_VERSIONS = (1,)
HEADER = "ragindex-export.json"
MANIFEST = "manifest.json"
PART_ROWS = 10_000
SPOOL_BYTES = 32 * 1024 * 1024
_LINES_PER_WRITE = 500
_READ_BLOCK = 1024 * 1024


@dataclass(frozen=True, slots=True)
class PartInfo:
    """One part of an archive: its member name, table, rows and the sha256 of its (compressed) bytes."""

    name: str
    table: str
    rows: int
    bytes: int
    sha256: str

    def to_dict(self) -> dict[str, Any]:
        """The manifest's entry."""
        return {"name": self.name, "table": self.table, "rows": self.rows, "bytes": self.bytes, "sha256": self.sha256}


def _json_default(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, bytes | bytearray | memoryview):
        return base64.b64encode(bytes(value)).decode("ascii")
    raise TypeError(f"cannot archive a value of type {type(value).__name__}")


def _encode(value: Any) -> bytes:
    """One compact JSON line (orjson: the export's hot loop; timestamps as ISO 8601, bytes as base64)."""
    return orjson.dumps(value, default=_json_default)


class _HashingFile(io.RawIOBase):
    """Writes through to ``target`` and hashes what passes (the part's checksum costs no second read)."""

    def __init__(self, target: IO[bytes]) -> None:
        self._target = target
        self.sha256 = hashlib.sha256()
        self.size = 0

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        view = memoryview(data).cast("B")
        self.sha256.update(view)
        self._target.write(view)
        self.size += len(view)
        return len(view)


class ArchiveWriter:
    """Writes an archive at ``path`` (via ``path.partial``): tables part by part, then the manifest.

    Args:
        path: The archive file.
        gzip_tables: Tables whose parts are gzip'd.
    """

    def __init__(self, path: Path, *, gzip_tables: Collection[str] = ()) -> None:
        self.path = path
        self.gzip_tables = frozenset(gzip_tables)
        self._partial = path.with_name(path.name + ".partial")
        self._partial.parent.mkdir(parents=True, exist_ok=True)
        self._tar = tarfile.open(self._partial, "w", format=tarfile.PAX_FORMAT)  # noqa: SIM115 - closed by finish/abort
        self.parts: list[PartInfo] = []
        self._add_bytes(HEADER, _encode({"format": FORMAT, "format_version": FORMAT_VERSION}))

    def _add_bytes(self, name: str, data: bytes) -> None:
        info = tarfile.TarInfo(name)
        info.size = len(data)
        self._tar.addfile(info, io.BytesIO(data))

    def write_table(self, table: str, rows: Iterable[Sequence[Any]]) -> int:
        """Write ``rows`` (value sequences in the manifest's column order) as parts of ``table``; return the count."""
        total = 0
        iterator = iter(rows)
        while True:
            written = self._write_part(table, iterator)
            total += written
            if written < PART_ROWS:
                return total

    def _write_part(self, table: str, rows: Iterator[Sequence[Any]]) -> int:
        compress = table in self.gzip_tables
        with tempfile.SpooledTemporaryFile(max_size=SPOOL_BYTES) as spool:
            hashing = _HashingFile(spool)
            count = 0
            with (
                gzip.GzipFile(fileobj=hashing, mode="wb", compresslevel=1, mtime=0)
                if compress
                else contextlib.nullcontext(hashing)
            ) as out:
                lines: list[bytes] = []
                for row in rows:
                    lines.append(_encode(tuple(row)))
                    count += 1
                    if len(lines) >= _LINES_PER_WRITE:
                        lines.append(b"")
                        out.write(b"\n".join(lines))
                        lines.clear()
                    if count >= PART_ROWS:
                        break
                if lines:
                    lines.append(b"")
                    out.write(b"\n".join(lines))
            if count == 0 and any(p.table == table for p in self.parts):
                return 0  # a table that filled its last part exactly: no empty part after it
            name = f"parts/{len(self.parts) + 1:06d}-{table}.jsonl{'.gz' if compress else ''}"
            info = tarfile.TarInfo(name)
            info.size = hashing.size
            spool.seek(0)
            self._tar.addfile(info, spool)
            self.parts.append(PartInfo(name, table, count, hashing.size, hashing.sha256.hexdigest()))
        return count

    def finish(self, manifest: dict[str, Any]) -> Path:
        """Add the manifest (with the parts' list), close the tar, sync it to disk and give it its name."""
        body = {**manifest, "parts": [p.to_dict() for p in self.parts]}
        self._add_bytes(MANIFEST, json.dumps(body, indent=1, sort_keys=True).encode("utf-8"))
        self._tar.close()
        with open(self._partial, "rb") as handle:
            os.fsync(handle.fileno())
        os.replace(self._partial, self.path)
        return self.path

    def abort(self) -> None:
        """Drop the partial file (an export that failed leaves nothing behind)."""
        self._tar.close()
        self._partial.unlink(missing_ok=True)


class ArchiveReader:
    """Reads an archive: the manifest, the parts' checksums, and each table's rows in batches.

    Raises:
        ArchiveError: The file is not an archive, has an unknown format version, or lacks its manifest.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        try:
            self._tar = tarfile.open(path, "r:")  # noqa: SIM115 - closed by close()
        except (OSError, tarfile.TarError) as exc:
            raise ArchiveError(
                f"{path} is not a ragindex export archive ({exc}); make one with `ragindex export`"
            ) from exc
        try:
            header = self._json(HEADER)
            if header.get("format") != FORMAT:
                raise ArchiveError(f"{path} is not a ragindex export archive; make one with `ragindex export`")
            self.format_version = header.get("format_version")
            if self.format_version not in SUPPORTED_VERSIONS:
                raise ArchiveError(
                    f"{path} has archive format version {self.format_version!r}; this ragindex reads "
                    f"{', '.join(map(str, SUPPORTED_VERSIONS))}. Import it with the ragindex version that made it "
                    "(its manifest names it) or a newer one"
                )
            self.manifest: dict[str, Any] = self._json(MANIFEST)
            if self.manifest.get("format_version") != self.format_version:
                raise ArchiveError(f"{path}: the manifest's format version differs from the header's; export again")
        except BaseException:
            self._tar.close()
            raise

    def _member(self, name: str) -> tarfile.TarInfo:
        try:
            return self._tar.getmember(name)
        except KeyError:
            raise ArchiveError(
                f"{self.path} has no {name}: the archive is incomplete (an interrupted copy?); export it again"
            ) from None

    def _json(self, name: str) -> dict[str, Any]:
        handle = self._tar.extractfile(self._member(name))
        if handle is None:
            raise ArchiveError(f"{self.path}: {name} is not a file; export again")
        try:
            data = json.loads(handle.read())
        except ValueError as exc:
            raise ArchiveError(f"{self.path}: {name} is not valid JSON ({exc}); export again") from exc
        if not isinstance(data, dict):
            raise ArchiveError(f"{self.path}: {name} is not a JSON object; export again")
        return data

    @property
    def parts(self) -> list[dict[str, Any]]:
        """The manifest's parts, in order."""
        return list(self.manifest.get("parts", []))

    def verify(self) -> None:
        """Check every part's size and sha256 against the manifest (reads the whole file once).

        Raises:
            ArchiveError: A part is missing or its bytes differ from what the export wrote.
        """
        for part in self.parts:
            member = self._member(part["name"])
            digest = hashlib.sha256()
            handle = self._tar.extractfile(member)
            if handle is None:
                raise ArchiveError(f"{self.path}: part {part['name']} is not a file; export again")
            size = 0
            while block := handle.read(_READ_BLOCK):
                digest.update(block)
                size += len(block)
            if size != part["bytes"] or digest.hexdigest() != part["sha256"]:
                raise ArchiveError(
                    f"{self.path}: checksum mismatch in part {part['name']} (the file was damaged or changed after "
                    "the export); nothing was imported. Copy the archive again or export it again"
                )

    def columns(self, table: str) -> list[str]:
        """The column order of ``table``'s rows in this archive."""
        tables: dict[str, Any] = self.manifest.get("tables", {})
        return list(tables.get(table, {}).get("columns", []))

    def batches(self, table: str, size: int) -> Iterator[list[list[Any]]]:
        """``table``'s rows in lists of at most ``size``, part by part, decompressed as they stream."""
        batch: list[list[Any]] = []
        for part in self.parts:
            if part["table"] != table:
                continue
            handle = self._tar.extractfile(self._member(part["name"]))
            if handle is None:
                raise ArchiveError(f"{self.path}: part {part['name']} is not a file; export again")
            stream: Any = gzip.GzipFile(fileobj=handle, mode="rb") if part["name"].endswith(".gz") else handle
            with stream:
                for line in stream:
                    batch.append(orjson.loads(line))
                    if len(batch) >= size:
                        yield batch
                        batch = []
        if batch:
            yield batch

    def close(self) -> None:
        """Close the file."""
        self._tar.close()

    def __enter__(self) -> ArchiveReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
