"""Tenant routing shared by writes and reads: bucket = crc32(user_id) % bucket_count (seed section 9.2)."""

from __future__ import annotations

import zlib


def bucket_of(user_id: int, bucket_count: int) -> int:
    """The bucket (shard) that holds every chunk of ``user_id``."""
    return zlib.crc32(str(user_id).encode("ascii")) % bucket_count


def physical_name(collection: str, bucket: int) -> str:
    """Name of one bucket's physical collection / shard directory: ``{collection}_{bucket}``."""
    return f"{collection}_{bucket}"
