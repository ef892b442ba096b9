"""ragindex.encoders.sparse layer."""
