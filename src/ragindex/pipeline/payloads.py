"""The metadata an index copy carries in its payload (``meta``): what filters select points by.

A copy's metadata is its document's filterable fields, with its chunk's own fields (given with pre-cut chunks, kept
under the chunk row's ``fields``) over them. A field is filterable when the set records a type for it and the value
has that type (:mod:`ragindex.metadata`); other values (a nested object a records file holds) stay in the truth
store for display and are left out of the payload.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ragindex.errors import InputError
from ragindex.metadata import FieldType, payload_value, value_type
from ragindex.store.protocol import TruthStore
from ragindex.store.records import ChunkRow
from ragindex.types import CHUNK_FIELDS


def conforms(value: Any, kind: FieldType) -> bool:
    """Whether ``value`` is a value of a field of type ``kind`` (a date-looking string is a string's value too)."""
    try:
        found = value_type(value)
    except InputError:
        return False
    return found == kind or (kind == FieldType.STRING and found == FieldType.DATE and isinstance(value, str))


def filterable(metadata: Mapping[str, Any], types: Mapping[str, str]) -> dict[str, Any]:
    """The fields of ``metadata`` that the set's ``types`` make filterable, as the truth store keeps them."""
    return {k: v for k, v in metadata.items() if k in types and conforms(v, FieldType(types[k]))}


def row_metadata(doc_metadata: Mapping[str, Any], row: ChunkRow) -> dict[str, Any]:
    """A copy's metadata as filters read it in the truth store: the document's, its chunk's own fields over them."""
    own = row.metadata.get(CHUNK_FIELDS)
    return {**doc_metadata, **own} if isinstance(own, Mapping) and own else dict(doc_metadata)


class PayloadMetadata:
    """Builds the ``meta`` payload of a batch of rows: one read of their documents and of their sets' field types."""

    def __init__(self, store: TruthStore, rows: Sequence[ChunkRow]) -> None:
        self._docs = store.document_metadata([r.doc_id for r in rows])
        self._types = {tenant: store.field_types(*tenant) for tenant in {(r.user_id, r.set_id) for r in rows}}

    def types_of(self, row: ChunkRow) -> Mapping[str, str]:
        """The field types of ``row``'s set."""
        return self._types[(row.user_id, row.set_id)]

    def of(self, row: ChunkRow) -> dict[str, Any]:
        """The payload ``meta`` of ``row``: its filterable fields, dates as epoch seconds."""
        types = self._types[(row.user_id, row.set_id)]
        if not types:
            return {}
        fields = filterable(row_metadata(self._docs.get(row.doc_id, {}), row), types)
        return {k: payload_value(v, FieldType(types[k])) for k, v in fields.items()}
