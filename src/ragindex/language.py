"""Writing systems: the dominant script of a text, and the scripts a dense model covers (pure, stdlib only).

The hybrid search uses both halves as its language guard: a query whose dominant script the dense model does not
cover (Chinese with the English-only default model) skips the dense source, so hybrid ranks as BM25 alone would
instead of mixing in near-random dense neighbours. Scripts, not languages, are detected: they follow from Unicode
ranges alone (no model, no dictionary, a few microseconds per query), and they are what decides whether a
tokenizer and an encoder trained on one alphabet can read a text at all.

Every layer may import this module (like :mod:`ragindex.types`): the encoders report their coverage with it,
the settings validate ``RAGINDEX_DENSE_LANGUAGES`` with it, the retrieval detects a query's script with it.
"""

from __future__ import annotations

import re
from enum import StrEnum

__all__ = [
    "ALL_SCRIPTS",
    "LANGUAGE_SCRIPTS",
    "Script",
    "dominant_script",
    "model_scripts",
    "parse_languages",
    "script_counts",
]


class Script(StrEnum):
    """A writing system (Unicode script, Han and kana apart; lower-case names are the setting's values)."""

    LATIN = "latin"
    GREEK = "greek"
    CYRILLIC = "cyrillic"
    ARMENIAN = "armenian"
    HEBREW = "hebrew"
    ARABIC = "arabic"
    DEVANAGARI = "devanagari"
    BENGALI = "bengali"
    GURMUKHI = "gurmukhi"
    GUJARATI = "gujarati"
    ORIYA = "oriya"
    TAMIL = "tamil"
    TELUGU = "telugu"
    KANNADA = "kannada"
    MALAYALAM = "malayalam"
    SINHALA = "sinhala"
    THAI = "thai"
    LAO = "lao"
    TIBETAN = "tibetan"
    MYANMAR = "myanmar"
    GEORGIAN = "georgian"
    HANGUL = "hangul"
    ETHIOPIC = "ethiopic"
    KHMER = "khmer"
    KANA = "kana"
    HAN = "han"
    OTHER = "other"


ALL_SCRIPTS: frozenset[Script] = frozenset(Script)
"""The coverage of a multilingual (or unknown) model."""

_S = Script
_BLOCKS: tuple[tuple[int, int, Script], ...] = (
    (0x0041, 0x005A, _S.LATIN), (0x0061, 0x007A, _S.LATIN), (0x00AA, 0x00AA, _S.LATIN), (0x00BA, 0x00BA, _S.LATIN),
    (0x00C0, 0x02AF, _S.LATIN), (0x0370, 0x03FF, _S.GREEK), (0x0400, 0x052F, _S.CYRILLIC),
    (0x0530, 0x058F, _S.ARMENIAN), (0x0590, 0x05FF, _S.HEBREW), (0x0600, 0x06FF, _S.ARABIC),
    (0x0750, 0x077F, _S.ARABIC), (0x0870, 0x08FF, _S.ARABIC), (0x0900, 0x097F, _S.DEVANAGARI),
    (0x0980, 0x09FF, _S.BENGALI), (0x0A00, 0x0A7F, _S.GURMUKHI), (0x0A80, 0x0AFF, _S.GUJARATI),
    (0x0B00, 0x0B7F, _S.ORIYA), (0x0B80, 0x0BFF, _S.TAMIL), (0x0C00, 0x0C7F, _S.TELUGU), (0x0C80, 0x0CFF, _S.KANNADA),
    (0x0D00, 0x0D7F, _S.MALAYALAM), (0x0D80, 0x0DFF, _S.SINHALA), (0x0E00, 0x0E7F, _S.THAI), (0x0E80, 0x0EFF, _S.LAO),
    (0x0F00, 0x0FFF, _S.TIBETAN), (0x1000, 0x109F, _S.MYANMAR), (0x10A0, 0x10FF, _S.GEORGIAN),
    (0x1100, 0x11FF, _S.HANGUL), (0x1200, 0x139F, _S.ETHIOPIC), (0x1780, 0x17FF, _S.KHMER), (0x19E0, 0x19FF, _S.KHMER),
    (0x1C80, 0x1C8F, _S.CYRILLIC), (0x1C90, 0x1CBF, _S.GEORGIAN), (0x1D00, 0x1DBF, _S.LATIN),
    (0x1E00, 0x1EFF, _S.LATIN), (0x1F00, 0x1FFF, _S.GREEK), (0x2C60, 0x2C7F, _S.LATIN), (0x2D00, 0x2D2F, _S.GEORGIAN),
    (0x2D80, 0x2DDF, _S.ETHIOPIC), (0x2DE0, 0x2DFF, _S.CYRILLIC), (0x2E80, 0x2FDF, _S.HAN), (0x3005, 0x3007, _S.HAN),
    (0x3021, 0x3029, _S.HAN), (0x3038, 0x303B, _S.HAN), (0x3040, 0x30FF, _S.KANA), (0x3100, 0x312F, _S.HAN),
    (0x3130, 0x318F, _S.HANGUL), (0x31A0, 0x31BF, _S.HAN), (0x31F0, 0x31FF, _S.KANA), (0x3400, 0x4DBF, _S.HAN),
    (0x4E00, 0x9FFF, _S.HAN), (0xA640, 0xA69F, _S.CYRILLIC), (0xA720, 0xA7FF, _S.LATIN),
    (0xA8E0, 0xA8FF, _S.DEVANAGARI), (0xA960, 0xA97F, _S.HANGUL), (0xAB30, 0xAB6F, _S.LATIN),
    (0xAC00, 0xD7FF, _S.HANGUL), (0xF900, 0xFAFF, _S.HAN), (0xFB00, 0xFB06, _S.LATIN), (0xFB13, 0xFB17, _S.ARMENIAN),
    (0xFB1D, 0xFB4F, _S.HEBREW), (0xFB50, 0xFDFF, _S.ARABIC),
    (0xFE70, 0xFEFF, _S.ARABIC), (0xFF21, 0xFF3A, _S.LATIN), (0xFF41, 0xFF5A, _S.LATIN), (0xFF66, 0xFF9F, _S.KANA),
    (0xFFA0, 0xFFDC, _S.HANGUL), (0x1B000, 0x1B16F, _S.KANA), (0x20000, 0x323AF, _S.HAN),
)  # fmt: skip
"""Unicode blocks by script, sorted by first code point (a block's marks and digits count as its letters)."""


def _class(script: Script) -> str:
    return "".join(
        re.escape(chr(start)) + ("" if end == start else "-" + re.escape(chr(end)))
        for start, end, owner in _BLOCKS
        if owner is script
    )


_RUNS = re.compile(
    "|".join(f"(?P<{script.value}>[{_class(script)}]+)" for script in Script if script is not Script.OTHER)
    + r"|(?P<other>[^\W\d_])"
)
"""One alternative per script: a run of its characters; then any other letter, one at a time."""
_ASCII_LETTERS = re.compile(r"[A-Za-z]")
_BY_NAME = {script.value: script for script in Script}
_ORDER = {script: position for position, script in enumerate(Script)}

_WEIGHTS = {Script.HAN: 3.0, Script.KANA: 2.0, Script.HANGUL: 2.0}
"""What one letter of a script weighs against one Latin letter: about the letters per word of English (4.7)
over those of Chinese (1.5 characters), Japanese kana and Korean syllables (2-3). Other scripts weigh 1."""

_SAMPLE = 512
"""Characters of a text looked at (a query's script is settled long before; keeps long texts cheap)."""


def script_counts(text: str) -> dict[Script, float]:
    """Per script, the weighted count of the letters of ``text`` (its first 512 characters) written in it.

    Spaces, punctuation and the digits shared by all scripts count for none. A Han character weighs 3 Latin
    letters, a kana or Hangul syllable 2, so that a mixed query is judged by its words rather than its characters.
    """
    sample = text[:_SAMPLE]
    if sample.isascii():
        letters = len(_ASCII_LETTERS.findall(sample))
        return {Script.LATIN: float(letters)} if letters else {}
    counts: dict[Script, float] = {}
    for run in _RUNS.finditer(sample):
        name = run.lastgroup
        if name is None:
            continue
        script = _BY_NAME[name]
        counts[script] = counts.get(script, 0.0) + (run.end() - run.start()) * _WEIGHTS.get(script, 1.0)
    return counts


def dominant_script(text: str) -> Script | None:
    """The script with the largest weighted letter count in ``text``; None when it has no letters.

    Ties go to the script listed first in :class:`Script` (Latin first). ``"什么是 Python"`` is Han (3 Han
    characters weigh 9, 6 Latin letters 6); ``"pip install 失败"`` is Latin (10 against 6).
    """
    sample = text[:_SAMPLE]
    if sample.isascii():  # the common case, without counting
        return Script.LATIN if _ASCII_LETTERS.search(sample) else None
    counts = script_counts(sample)
    return max(counts, key=lambda script: (counts[script], -_ORDER[script])) if counts else None


_LATIN = frozenset({Script.LATIN})
LANGUAGE_SCRIPTS: dict[str, frozenset[Script]] = {
    **dict.fromkeys(
        (
            "en",
            "de",
            "fr",
            "es",
            "it",
            "pt",
            "nl",
            "sv",
            "da",
            "no",
            "nb",
            "nn",
            "fi",
            "is",
            "pl",
            "cs",
            "sk",
            "sl",
            "hr",
            "bs",
            "hu",
            "ro",
            "tr",
            "az",
            "id",
            "ms",
            "vi",
            "tl",
            "ca",
            "eu",
            "gl",
            "et",
            "lv",
            "lt",
            "sq",
            "mt",
            "ga",
            "cy",
            "sw",
            "af",
            "eo",
            "la",
        ),
        _LATIN,
    ),  # fmt: skip
    **dict.fromkeys(("ru", "uk", "be", "bg", "sr", "mk", "kk", "ky", "tg", "mn"), frozenset({Script.CYRILLIC})),
    **dict.fromkeys(("ar", "fa", "ur", "ps"), frozenset({Script.ARABIC})),
    **dict.fromkeys(("hi", "mr", "ne", "sa"), frozenset({Script.DEVANAGARI})),
    **dict.fromkeys(("he", "yi"), frozenset({Script.HEBREW})),
    "el": frozenset({Script.GREEK}),
    "hy": frozenset({Script.ARMENIAN}),
    "bn": frozenset({Script.BENGALI}),
    "pa": frozenset({Script.GURMUKHI}),
    "gu": frozenset({Script.GUJARATI}),
    "or": frozenset({Script.ORIYA}),
    "ta": frozenset({Script.TAMIL}),
    "te": frozenset({Script.TELUGU}),
    "kn": frozenset({Script.KANNADA}),
    "ml": frozenset({Script.MALAYALAM}),
    "si": frozenset({Script.SINHALA}),
    "th": frozenset({Script.THAI}),
    "lo": frozenset({Script.LAO}),
    "bo": frozenset({Script.TIBETAN}),
    "my": frozenset({Script.MYANMAR}),
    "ka": frozenset({Script.GEORGIAN}),
    "am": frozenset({Script.ETHIOPIC}),
    "km": frozenset({Script.KHMER}),
    "zh": frozenset({Script.HAN}),
    "ja": frozenset({Script.HAN, Script.KANA}),
    "ko": frozenset({Script.HANGUL, Script.HAN}),
}
"""ISO 639-1 codes accepted by ``RAGINDEX_DENSE_LANGUAGES``, by the scripts they are written in."""


_SCRIPT_NAMES = frozenset(script.value for script in Script)


def parse_languages(spec: str) -> frozenset[Script] | None:
    """``RAGINDEX_DENSE_LANGUAGES``: None for ``auto``, every script for ``all``, else the scripts of a list.

    The list is comma-separated script names (``latin``, ``cyrillic``, ``han`` ...) and ISO 639-1 language codes
    (``en``, ``ru``, ``zh`` ...), in any case, e.g. ``en,ru`` or ``latin,cyrillic``.

    Raises:
        ValueError: An empty list, or an entry that is neither a script nor a known language code (the message
            lists the scripts).
    """
    value = spec.strip().lower()
    if value == "auto":
        return None
    if value == "all":
        return ALL_SCRIPTS
    scripts: set[Script] = set()
    for entry in (part.strip() for part in value.split(",")):
        if entry in _SCRIPT_NAMES:
            scripts.add(Script(entry))
        elif entry in LANGUAGE_SCRIPTS:
            scripts |= LANGUAGE_SCRIPTS[entry]
        else:
            valid = ", ".join(s.value for s in Script if s is not Script.OTHER)
            raise ValueError(
                f"unknown script or language {entry!r}: use auto, all, or a comma list of scripts ({valid}) "
                "or ISO 639-1 codes (en, zh, ja, ko, ru, ar, ...)"
            )
    return frozenset(scripts)


_MULTILINGUAL = re.compile(r"multilingual|bge-m3|labse|xlm|m3e", re.IGNORECASE)
_LATIN_ONLY = re.compile(
    r"^(all-|msmarco-|multi-qa-|e5-|gte-(small|base|large)$|bge-[a-z]+-en\b|nomic-embed-text-v1)", re.IGNORECASE
)


def model_scripts(model: str) -> frozenset[Script]:
    """The scripts a dense model covers, from its name or path (no model load).

    * names with a multilingual marker (``multilingual``, ``bge-m3``, ``LaBSE``, ``xlm``, ``m3e`` ...) cover
      every script;
    * English-only families, matched on the last path component: sentence-transformers ``all-*``,
      ``msmarco-*`` and ``multi-qa-*`` (so the default ``all-MiniLM-L6-v2``, shipped or by path), ``e5-*``
      (not ``multilingual-e5-*``), ``gte-small/base/large``, ``bge-*-en*`` and ``nomic-embed-text-v1*``, cover Latin;
    * any other model (a local fine-tune, a remote API model such as ``text-embedding-3-small``) is assumed to
      cover every script: the guard only acts on models known not to. ``RAGINDEX_DENSE_LANGUAGES`` overrides.
    """
    if _MULTILINGUAL.search(model):
        return ALL_SCRIPTS
    name = model.rstrip("/\\").replace("\\", "/").rsplit("/", 1)[-1]
    return _LATIN if _LATIN_ONLY.search(name) else ALL_SCRIPTS
