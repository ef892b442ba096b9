"""ragindex.retrieval layer."""
