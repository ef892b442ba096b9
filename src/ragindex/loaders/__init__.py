"""ragindex.loaders layer."""
