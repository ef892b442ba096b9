"""Route modules: documents (uploads), jobs, search, chunks, admin, health."""
