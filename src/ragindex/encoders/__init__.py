"""ragindex.encoders layer."""
