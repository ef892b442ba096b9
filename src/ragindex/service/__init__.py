"""The HTTP service: a FastAPI app over the same Engine the CLI uses (``ragindex serve``).

Nothing here is imported by ``import ragindex``; the ``service`` extra provides FastAPI,
uvicorn, python-multipart and prometheus-client.
"""
