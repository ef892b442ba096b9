"""ragindex.chunking layer."""
