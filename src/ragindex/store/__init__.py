"""ragindex.store layer."""
