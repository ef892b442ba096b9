"""Settings: one validated model read from the environment and ``.env``."""

from ragindex.config.settings import Settings

__all__ = ["Settings"]
