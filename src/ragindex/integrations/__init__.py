"""Retrievers for RAG frameworks over ragindex, embedded or over HTTP.

``ragindex.integrations.langchain.RagindexRetriever`` (``pip install 'ragindex[langchain]'``) and
``ragindex.integrations.llamaindex.RagindexRetriever`` (``pip install 'ragindex[llamaindex]'``). Importing one
without its extra raises :class:`~ragindex.errors.MissingExtraError` (an ``ImportError``) naming the command.
"""
