"""Export, import, migrate and back up a deployment (``ragindex export / import / migrate / backup / restore``).

An export archive (:mod:`ragindex.transfer.archive`) holds the truth store's rows and the cached vectors of the
active models; an import rebuilds the index copies from those vectors without embedding anything. See
``docs/moving-to-servers.md``.
"""
