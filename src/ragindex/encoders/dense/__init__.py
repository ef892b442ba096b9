"""Dense encoders."""
