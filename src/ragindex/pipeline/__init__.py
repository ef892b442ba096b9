"""ragindex.pipeline layer."""
