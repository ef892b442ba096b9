"""Sparse encoders."""
