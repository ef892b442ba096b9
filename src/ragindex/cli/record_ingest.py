"""``ragindex ingest --as-records``: a records file upserted under the records' own keys; ``--metadata K=V``.

Records mode reads every given ``.jsonl`` / ``.ndjson`` / ``.json`` file whole before it writes anything: an
object that cannot be a record (a bad line) is listed as a failure and the others are upserted (exit code 8), but a
metadata value whose type disagrees with another record's or with the set's refuses the whole ingest (exit code 2,
naming the file, the line, the record and the field) before anything is written. Then the records are upserted in
batches of :data:`ragindex.records.MAX_BATCH` (``Engine.upsert``): an unchanged record costs nothing.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ragindex.errors import InputError

if TYPE_CHECKING:
    from ragindex.engine import Engine
    from ragindex.loaders.records import RecordFields
    from ragindex.pipeline.sync import IngestReport, ProgressFn


def parse_metadata_options(values: Sequence[str] | None) -> dict[str, Any]:
    """``--metadata KEY=VALUE`` options as a mapping.

    A value that is a JSON string, number or boolean is that value (``year=2024`` a number, ``draft=true`` a
    boolean, ``code='"007"'`` the string ``007``); any other value is the text as given.

    Raises:
        InputError: An option without ``=`` or with an empty key, or a key given twice.
    """
    out: dict[str, Any] = {}
    for value in values or ():
        key, sep, raw = value.partition("=")
        key = key.strip()
        if not sep or not key:
            raise InputError(f"--metadata takes KEY=VALUE (e.g. --metadata team=search); got {value!r}", field=key)
        if key in out:
            raise InputError(f"--metadata {key} is given twice; give each field once", field=key)
        out[key] = _scalar(raw)
    return out


def _scalar(raw: str) -> Any:
    try:
        value = json.loads(raw)
    except ValueError:
        return raw
    return value if isinstance(value, str | int | float | bool) else raw


def record_fields(
    key_field: str | None, text_fields: Sequence[str] | None, title_field: str | None, metadata_fields: str | None
) -> RecordFields:
    """The field mapping of ``--key-field``, ``--text-field``, ``--title-field``, ``--metadata-fields``."""
    from ragindex.loaders.records import RecordFields

    defaults = RecordFields()
    text = tuple(part.strip() for value in text_fields or () for part in value.split(",") if part.strip())
    metadata = None
    if metadata_fields is not None:
        metadata = tuple(part.strip() for part in metadata_fields.split(",") if part.strip())
    if key_field is not None and not key_field.strip():
        raise InputError("--key-field names the field holding each record's key", field="key_field")
    return RecordFields(
        key=key_field.strip() if key_field else defaults.key,
        text=text or defaults.text,
        title=(title_field.strip() or None) if title_field is not None else defaults.title,
        metadata=metadata,
    )


def ingest_records(
    engine: Engine,
    paths: Sequence[str],
    fields: RecordFields,
    *,
    metadata: Mapping[str, Any],
    user_id: int,
    set_id: int,
    progress: ProgressFn,
    checkpoint: Callable[[], None],
) -> IngestReport:
    """Upsert the records of ``paths`` into the set; one report for all of them (see the module docstring).

    Raises:
        InputError: A path that is not a readable records file, a file in which no object can be read, or a
            metadata type clash (nothing is written then).
    """
    from ragindex.loaders.records import read_record_file
    from ragindex.pipeline.record_sync import check_records
    from ragindex.pipeline.report import IngestReport
    from ragindex.records import MAX_BATCH, Record, RecordError
    from ragindex.retrieval.search import validate_ids

    started = time.perf_counter()
    validate_ids(user_id=user_id, set_id=set_id)
    report = IngestReport()
    records: list[Record] = []
    origin: dict[str, tuple[Path, str]] = {}  # key -> (file, where)
    for given in paths:
        path = _records_file(given)
        read = read_record_file(path, _read(path), fields, metadata=metadata)
        report.notes += [f"{path}: {note}" for note in read.notes]
        report.documents["skipped"] += len(read.skipped)
        failures = list(read.failures)
        for record in read.records:
            where = read.where[record.key]
            if record.key in origin:
                first, at = origin[record.key]
                problem = f"{where}: duplicate record key {record.key!r} (first in {first.name} at {at})"
                failures.append((where, f"{path.name}: {problem}"))
                continue
            origin[record.key] = (path, where)
            records.append(record)
        for where, error in failures:
            report.failures.append(
                {"path": str(path), "source": f"{path}#{where}", "stage": "LOADING", "error": error, "doc_id": None}
            )
        report.documents["failed"] += len(failures)
    try:  # the types of the whole ingest, against each other and the set's, before anything is written
        check_records(records, engine.store.field_types(user_id, set_id))
    except RecordError as exc:
        key = exc.context.get("key")
        if key in origin:
            path, where = origin[key]
            raise RecordError(f"{path}: {where}: {exc.message}; nothing was written", **exc.context) from exc
        raise
    for start in range(0, len(records), MAX_BATCH):
        checkpoint()
        batch = engine.upsert(records[start : start + MAX_BATCH], user_id=user_id, set_id=set_id, progress=progress)
        _add(report, batch)
    report.duration_ms = (time.perf_counter() - started) * 1000
    return report


def _records_file(given: str) -> Path:
    from ragindex.loaders.records import RECORD_SUFFIXES

    path = Path(given).expanduser().resolve()
    if path.is_dir():
        raise InputError(
            f"{path} is a folder; --as-records reads record files ({', '.join(RECORD_SUFFIXES)}): name them, or "
            "ingest the folder without the record options to sync its files",
            path=str(path),
        )
    if path.suffix.lower() not in RECORD_SUFFIXES:
        raise InputError(
            f"{path.name}: --as-records reads {', '.join(RECORD_SUFFIXES)} files, not {path.suffix or 'no suffix'}",
            path=str(path),
        )
    return path


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror or exc}", path=str(path)) from exc


def _add(total: IngestReport, batch: IngestReport) -> None:
    for name, n in batch.documents.items():
        total.documents[name] = total.documents.get(name, 0) + n
    for name, n in batch.chunks.items():
        total.chunks[name] = total.chunks.get(name, 0) + n
    total.failures += batch.failures
    total.notes += batch.notes
    for stage, ms in batch.stage_ms.items():
        total.stage_ms[stage] = total.stage_ms.get(stage, 0.0) + ms
