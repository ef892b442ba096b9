"""ragindex.testing layer."""
