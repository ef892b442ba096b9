"""How a document's source is shown to an MCP client: as stored locally, relative (or by name) over HTTP.

Over stdio the client runs on the server's machine and may open the file, so the stored path is shown as is.
Over HTTP the server's absolute paths are none of the caller's business: a source under one of the roots
(the service's upload folder of the tenant's set, then each ``--source-root``) is shown relative to it, and
any other by its file name; a record's ``#id`` suffix is kept either way.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True, slots=True)
class SourceView:
    """Turns stored source paths into what a client may see.

    Args:
        local: Show paths as stored (stdio); otherwise relative to a root, or the file name.
        roots: Folders whose files are shown relative to them (``--source-root``).
        blob_root: The HTTP service's upload folder (``<blob_root>/<user_id>/<set_id>/<file>``): an upload is
            shown by its path inside its set's folder.
    """

    local: bool
    roots: Sequence[Path] = ()
    blob_root: Path | None = None
    _root_texts: tuple[str, ...] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        texts = tuple(str(Path(r).expanduser().resolve()).rstrip("/") for r in self.roots)
        object.__setattr__(self, "_root_texts", texts)

    def source(self, stored: str, *, user_id: int, set_id: int) -> str:
        """What the client sees of a stored source (or file) path of a document of (user_id, set_id)."""
        if self.local or not stored:
            return stored
        roots = list(self._root_texts)
        if self.blob_root is not None:
            roots.insert(0, str(Path(self.blob_root).expanduser().resolve() / str(user_id) / str(set_id)))
        for root in roots:
            if stored.startswith(root + "/") and len(stored) > len(root) + 1:
                return stored[len(root) + 1 :]
        return stored.rsplit("/", 1)[-1]

    def scrub(self, text: str | None, stored: str, *, user_id: int, set_id: int) -> str | None:
        """``text`` (an error message) with the stored path replaced by what the client sees of it."""
        if text is None or self.local or not stored:
            return text
        return text.replace(stored, self.source(stored, user_id=user_id, set_id=set_id))
