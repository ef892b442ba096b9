"""Record batches as jobs: a batch over the synchronous threshold is saved, recorded as a job, and upserted later.

The batch is written (atomically) as JSON under the upload root's ``.records`` folder, one file per job, the
records in their API form (``data_base64`` stays base64). The job row (kind ``records``) names that file, so a
restarted service, or a broker worker that shares the upload root, runs it like any queued upload: the job thread
calls :meth:`Engine.upsert` with the file's records, and the file is removed once the job has finished.
"""

from __future__ import annotations

import base64
import json
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ragindex.engine import Engine
from ragindex.pipeline.report import IngestReport

RECORDS_JOB = "records"
"""The ``kind`` of a job that upserts a saved batch of records (uploads are ``ingest``)."""
FOLDER = ".records"


def save_batch(blob_root: Path, job_id: str, records: Sequence[dict[str, Any]]) -> Path:
    """Write a batch (records in their API form, key included) to ``<blob_root>/.records/<job_id>.json``."""
    folder = blob_root / FOLDER
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / f"{job_id}.json"
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".batch-")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump({"records": list(records)}, out, ensure_ascii=False)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return target


def load_batch(path: Path) -> list[dict[str, Any]]:
    """The records of a saved batch in :meth:`Engine.upsert`'s form (``data_base64`` decoded to ``data``)."""
    with path.open(encoding="utf-8") as src:
        records: list[dict[str, Any]] = json.load(src)["records"]
    out = []
    for record in records:
        item = {k: v for k, v in record.items() if v is not None and k != "data_base64"}
        if record.get("data_base64") is not None:
            item["data"] = base64.b64decode(record["data_base64"], validate=True)
        out.append(item)
    return out


def run_job(
    engine: Engine, *, kind: str, files: Sequence[str], user_id: int, set_id: int, job_id: str, progress: Any
) -> IngestReport:
    """Run one job's work: an upload's ingest, or a saved batch's upsert."""
    if kind == RECORDS_JOB:
        return engine.upsert(
            load_batch(Path(files[0])), user_id=user_id, set_id=set_id, job_id=job_id, progress=progress
        )
    return engine.ingest(
        [Path(f) for f in files],
        user_id=user_id,
        set_id=set_id,
        keep_missing=True,
        per_file=True,
        job_id=job_id,
        progress=progress,
    )


def discard_batch(kind: str, files: Sequence[str]) -> None:
    """Remove a finished records job's saved batch (nothing for an upload: its files are the documents)."""
    if kind == RECORDS_JOB:
        for name in files:
            Path(name).unlink(missing_ok=True)
