"""``with`` support for the objects of ragindex that own a resource and release it in ``close()``."""

from __future__ import annotations

from typing import Self


class Closing:
    """A context manager whose exit calls :meth:`close` (the subclass defines what closing releases)."""

    def close(self) -> None:
        """Release what the object holds."""
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
