"""ragindex.index layer."""
