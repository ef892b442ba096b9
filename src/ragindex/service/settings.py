"""Settings of the HTTP service (environment prefix ``RAGINDEX_``, like the engine's settings)."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class ServiceSettings(BaseSettings):
    """What only the HTTP service reads; the engine's settings stay in :class:`ragindex.config.Settings`."""

    model_config = SettingsConfigDict(
        env_prefix="RAGINDEX_", env_file=".env", env_file_encoding="utf-8", extra="ignore", validate_default=True
    )

    blob_dir: Path | None = Field(
        None, description="Where uploads are kept: `<blob_dir>/<user_id>/<set_id>/`; default `<data_dir>/blobs`."
    )
    max_upload_bytes: int = Field(50 * 1024 * 1024, ge=1, description="Largest uploaded file (413 above it).")
    max_upload_files: int = Field(100, ge=1, description="Most files in one upload request.")
    job_torch_threads: int = Field(
        1, ge=1, description="torch threads of the ingest job thread (leave a core to the query encoder)."
    )
    query_torch_threads: int = Field(1, ge=1, description="torch threads of the query encoder thread.")
    query_batch_max: int = Field(64, ge=1, description="Most concurrent queries encoded in one forward pass.")
    warm_up: bool = Field(True, description="Load the dense model at start-up (the first search is not slow).")
    job_shutdown_seconds: float = Field(
        60.0, ge=0, description="On shutdown, wait this long for a running job (an unfinished job is re-queued)."
    )
