"""Query and document prompts of asymmetric dense models (seed 000 section 9.7): which text each side prepends.

An asymmetric model is trained with a marker in front of each side (e5: ``query: `` / ``passage: ``; BGE v1.5:
an instruction before queries only). Encoding without them does not fail, it silently loses recall, so the
prompts are resolved once per encoder, applied by every runtime of a model (torch, ONNX, a remote API) and
recorded in the dense fingerprint.

Resolution, per side (pure, no model load; reading one JSON file at most):

1. an explicit setting (``RAGINDEX_DENSE_QUERY_PROMPT`` / ``RAGINDEX_DENSE_DOCUMENT_PROMPT``; ``""`` means none);
2. the prompts the model itself declares in ``config_sentence_transformers.json`` (``query``; ``document``,
   ``passage`` or ``corpus`` for documents, as sentence-transformers' ``encode_document`` looks them up), when
   the model is a local directory or in the local Hugging Face cache;
3. the known default of the model's family, matched on the last component of its name (:data:`FAMILIES`);
4. none: the model is symmetric (``all-MiniLM-L6-v2``, ``bge-m3``, gte).

A side resolved at one step does not look further: a model that declares only a query prompt has no document
prompt, even if its family has one.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

log = logging.getLogger(__name__)

__all__ = ["FAMILIES", "NO_PROMPTS", "Family", "Prompts", "family_prompts", "model_config_prompts", "resolve_prompts"]

E5_INSTRUCT_QUERY = "Instruct: Given a web search query, retrieve relevant passages that answer the query\nQuery: "
BGE_EN_QUERY = "Represent this sentence for searching relevant passages: "
BGE_ZH_QUERY = "为这个句子生成表示以用于检索相关文章："

DOCUMENT_PROMPT_NAMES = ("document", "passage", "corpus")
"""The names sentence-transformers' ``encode_document`` tries, in its order."""


@dataclass(frozen=True)
class Prompts:
    """The text prepended to queries and to documents before a dense model reads them.

    Attributes:
        query: Prepended to every query ("" for none).
        document: Prepended to every document chunk ("" for none).
        source: Where they come from (``settings``, ``model config``, ``family <name>``, ``none``): for logs and
            ``repr``; not part of the identity.
    """

    query: str = ""
    document: str = ""
    source: str = field(default="none", compare=False)

    def __bool__(self) -> bool:
        return bool(self.query or self.document)

    @property
    def fingerprint_suffix(self) -> str:
        """``""`` without prompts (so a symmetric model keeps its fingerprint), else ``|prompts=<12 hex>``.

        A hash, not the text: instructions are long, and the embedding cache key (``<fingerprint>|<precision>``)
        must fit its 255-character column.
        """
        if not self:
            return ""
        digest = hashlib.sha256(json.dumps([self.query, self.document], ensure_ascii=False).encode("utf-8"))
        return f"|prompts={digest.hexdigest()[:12]}"

    def queries(self, texts: Sequence[str]) -> list[str]:
        """``texts`` with the query prompt in front."""
        return [self.query + t for t in texts] if self.query else list(texts)

    def documents(self, texts: Sequence[str]) -> list[str]:
        """``texts`` with the document prompt in front."""
        return [self.document + t for t in texts] if self.document else list(texts)

    def describe(self) -> str:
        """One line for logs and messages: both prompts (repr) and their source."""
        return f"query prompt {self.query!r}, document prompt {self.document!r} ({self.source})"


NO_PROMPTS = Prompts()


@dataclass(frozen=True)
class Family:
    """A model family whose prompts are known: ``pattern`` is matched on the lower-cased last name component."""

    name: str
    pattern: re.Pattern[str]
    query: str
    document: str


FAMILIES: tuple[Family, ...] = (
    # the instruct variants first: they share the e5 name but take an instruction on the query side only
    Family("e5-instruct", re.compile(r"^(multilingual-)?e5-.*instruct"), E5_INSTRUCT_QUERY, ""),
    Family("e5", re.compile(r"^(multilingual-)?e5-"), "query: ", "passage: "),
    Family("bge-en", re.compile(r"^bge-(small|base|large)-en(-v1\.5)?$"), BGE_EN_QUERY, ""),
    Family("bge-zh", re.compile(r"^bge-(small|base|large)-zh(-v1\.5)?$"), BGE_ZH_QUERY, ""),
    Family("nomic", re.compile(r"^nomic-embed-text-v1(\.5)?$"), "search_query: ", "search_document: "),
)
"""Families with known prompts (from their model cards). gte (``thenlper/gte-*``, ``gte-multilingual-base``),
``bge-m3`` and the sentence-transformers ``all-*`` models need none; a model not listed here is symmetric unless
it declares prompts in its own config or the settings give them."""


def _last_component(model: str) -> str:
    return model.rstrip("/\\").replace("\\", "/").rsplit("/", 1)[-1].lower()


def family_prompts(model: str) -> Prompts | None:
    """The prompts of ``model``'s family (by the last component of its name or path), or None if not known."""
    name = _last_component(model)
    for family in FAMILIES:
        if family.pattern.search(name):
            return Prompts(family.query, family.document, f"family {family.name}")
    return None


def model_config_prompts(model_dir: Path | None) -> tuple[str | None, str | None]:
    """The (query, document) prompts ``model_dir/config_sentence_transformers.json`` declares; None where it does not.

    A declared empty prompt is ``""`` (the model says: none), not None (the model says nothing).
    """
    if model_dir is None:
        return None, None
    try:
        config = json.loads((model_dir / "config_sentence_transformers.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None, None
    prompts = config.get("prompts") if isinstance(config, dict) else None
    if not isinstance(prompts, dict):
        return None, None
    query = prompts.get("query")
    document = next((prompts[name] for name in DOCUMENT_PROMPT_NAMES if name in prompts), None)
    return (
        query if isinstance(query, str) else None,
        document if isinstance(document, str) else None,
    )


def resolve_prompts(
    model: str,
    *,
    query: str | None = None,
    document: str | None = None,
    model_dir: Path | None = None,
) -> Prompts:
    """The prompts of ``model``: explicit ones, else its own config's, else its family's, else none (per side).

    Args:
        model: The model name or path (its last component picks the family).
        query: Explicit query prompt (``""``: none); None resolves it.
        document: Explicit document prompt (``""``: none); None resolves it.
        model_dir: The model's local directory, whose ``config_sentence_transformers.json`` is read (None: a
            remote model, whose config cannot be read).
    """
    sides: list[str | None] = [query, document]
    sources: list[str] = ["settings" if query is not None else "", "settings" if document is not None else ""]
    declared = model_config_prompts(model_dir) if None in sides else (None, None)
    family = family_prompts(model) if None in sides else None
    for i in range(2):
        if sides[i] is not None:
            continue
        if declared[i] is not None:
            sides[i], sources[i] = declared[i], "model config"
        elif family is not None:
            sides[i], sources[i] = (family.query, family.document)[i], family.source
        else:
            sides[i], sources[i] = "", "none"
    source = sources[0] if sources[0] == sources[1] else f"query: {sources[0]}, document: {sources[1]}"
    prompts = Prompts(sides[0] or "", sides[1] or "", source)
    if prompts:
        log.info("dense model %s: %s", model, prompts.describe())
    return prompts
