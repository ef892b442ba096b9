"""The fusion-calibration role of the SQL truth store: one row per set, replaced by each new calibration."""

from __future__ import annotations

from sqlalchemy import delete, insert, select

from ragindex.store import schema
from ragindex.store.records import FusionCalibration
from ragindex.store.sql.core import SqlCore

C = schema.fusion_calibrations.c


class SqlFusionCalibrations(SqlCore):
    """Each set's fusion calibration (:class:`~ragindex.store.protocol.CalibrationStore`)."""

    def fusion_calibration(self, user_id: int, set_id: int) -> FusionCalibration | None:
        """The set's calibration, or None when it has none."""
        query = select(schema.fusion_calibrations).where(C.user_id == user_id, C.set_id == set_id)
        with self._tx() as conn:
            row = conn.execute(query).first()
        if row is None:
            return None
        m = row._mapping
        return FusionCalibration(
            user_id=int(m["user_id"]),
            set_id=int(m["set_id"]),
            fusion=str(m["fusion"]),
            weights={str(k): float(v) for k, v in (m["weights"] or {}).items()},
            documents=int(m["documents"]),
            report=dict(m["report"] or {}),
            created_at=m["created_at"],
        )

    def save_fusion_calibration(self, calibration: FusionCalibration) -> None:
        """Record ``calibration`` as its set's (replacing the one before)."""
        key = (C.user_id == calibration.user_id, C.set_id == calibration.set_id)
        with self._tx() as conn:
            conn.execute(delete(schema.fusion_calibrations).where(*key))
            conn.execute(
                insert(schema.fusion_calibrations).values(
                    user_id=calibration.user_id,
                    set_id=calibration.set_id,
                    fusion=calibration.fusion,
                    weights=dict(calibration.weights),
                    documents=calibration.documents,
                    report=dict(calibration.report),
                    created_at=calibration.created_at,
                )
            )
