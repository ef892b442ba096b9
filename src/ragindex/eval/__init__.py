"""ragindex.eval layer."""
