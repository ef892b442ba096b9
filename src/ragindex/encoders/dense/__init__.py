"""ragindex.encoders.dense layer."""
