"""Build known-item retrieval sets in BEIR layout from Debian's manual pages, in Chinese or in English.

Sources (Debian packages, fetched by ``apt-get download`` unless ``--source`` names .debs or extracted trees):

* ``--lang zh``: ``manpages-zh`` (upstream https://github.com/man-pages-zh/manpages-zh), the Simplified Chinese
  translations under ``usr/share/man/zh_CN``. Licence: GFDL-1.2+ (a few pages carry their upstream licence,
  e.g. GPL-2.0 for ``kill.1``; see the package's ``copyright`` file).
* ``--lang en``: ``manpages`` and ``manpages-dev`` (the Linux man-pages project, https://www.kernel.org/doc/man-pages/),
  sections 1-8 under ``usr/share/man``. Licence: the per-page licences listed in the packages' ``copyright``
  files (mostly "verbatim" and GPL variants), which allow this use.

The data is generated on demand and never committed. Every manual page (symbolic links skipped) becomes one
corpus record:

* ``_id``: ``man<section>/<file name>`` (e.g. ``man1/ls.1``);
* ``title``: the names of the ``NAME`` line, e.g. ``ls`` or ``at, batch, atq, atrm``;
* ``text``: the page rendered to plain text (roff requests and font escapes removed, section headings kept)
  **without** its ``NAME`` section, cut at a paragraph boundary after ``--max-chars`` characters.

Each page whose ``NAME`` line has a description long enough (zh: at least ``--min-han`` Han characters; en: at
least ``--min-words`` words) gives a query: that description, e.g. ``列出目录内容`` or ``get file status``. The
``NAME`` line is removed from the page, so the answer has to be found through the words the page explains itself
with, as a question about what a command or function does would be. Pages sharing a description (``dir``,
``vdir`` and ``ls``) are all relevant to it (grade 1). Spaces that older Chinese translations put between words
(``以 特定 根 目录``) are removed in queries and pages alike.

The English set is a second collection of a different genre than SciFact (long technical pages with headings,
short queries) for choosing retrieval defaults on more than one dataset; the Chinese one checks the language guard.

Usage::

    .venv/bin/python -m bench.manpages zh [OUT_DIR]          # default /tmp/ragindex-zh
    .venv/bin/python -m bench.manpages en [OUT_DIR]          # default /tmp/ragindex-man-en
    .venv/bin/python -m bench.manpages en OUT_DIR --markdown # the same pages with "## SYNOPSIS" heading lines
    .venv/bin/python -m bench.manpages zh OUT_DIR --source manpages-zh_1.6.4.0-1_all.deb   # or an extracted tree
    .venv/bin/ragindex --data-dir /tmp/zh-eval eval OUT_DIR --modes dense,bm25,hybrid,hybrid:dbsf --json
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True, slots=True)
class Language:
    """Where a language's pages come from and which descriptions make queries."""

    packages: tuple[str, ...]
    man_dir: str  # below the package root
    default_out: Path


LANGUAGES = {
    "zh": Language(("manpages-zh",), "usr/share/man/zh_CN", Path("/tmp/ragindex-zh")),
    "en": Language(("manpages", "manpages-dev"), "usr/share/man", Path("/tmp/ragindex-man-en")),
}
NAME_HEADINGS = ("名称", "名字", "名 称", "命令名", "NAME")

_FONT = re.compile(r"\\f(?:\(..|\[[^]]*]|.)")
_SIZE = re.compile(r"\\s[+-]?\d")
_STRING = re.compile(r"\\\*(?:\(..|\[[^]]*]|.)")
_SPECIAL = {
    "lq": "“",
    "rq": "”",
    "oq": "‘",
    "cq": "’",
    "em": "—",
    "en": "–",
    "hy": "-",
    "bu": "·",
    "co": "©",
    "aq": "'",
    "dq": '"',
    "ti": "~",
    "ha": "^",
    "mi": "-",
    "pl": "+",
    "mu": "×",
}
_CHAR = re.compile(r"\\\((..)|\\\[([^]]*)]")
_HAN = r"\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_HAN_PUNCT = _HAN + r"\u3000-\u303f\uff00-\uffef"
_HAN_GAP = re.compile(rf"(?<=[{_HAN_PUNCT}]) +(?=[{_HAN_PUNCT}])")
_HAN_CHAR = re.compile(rf"[{_HAN}]")
_STAMP = re.compile(r"\s*\(\d{4}/\d\d/\d\d [\d:]+\)")
_DASH = re.compile(r"\s+[-–—]+\s*|\s*[-–—]+\s+")
_SKIP_REQUESTS = {
    "TH", "br", "sp", "RS", "RE", "nf", "fi", "in", "ti", "ad", "na", "hy", "nh", "ne", "ft", "ps", "vs", "ll",
    "ta", "ds", "nr", "so", "ig", "if", "ie", "el", "de", "tr", "ce", "bp", "UC", "Dd", "Os", "Dt", "PD", "ns",
    "rs", "ev", "mk", "rt", "cs", "bd", "ss", "ul", "cu", "pc", "lf", "eo", "ec", "EX", "EE", "ME", "UE", "MT",
    "UR", "SY", "YS", "OP", "HP",
}  # fmt: skip
_PARAGRAPH = {"PP", "P", "LP", "TP", "TQ", "IP", "SH", "SS"}


@dataclass(frozen=True, slots=True)
class Page:
    """One manual page: its id, the names and description of its NAME line, and its other sections."""

    page_id: str
    names: str
    description: str
    body: str


def unescape(text: str) -> str:
    """Inline roff to text: font and size escapes dropped, special characters named, spaces normalised."""
    text = text.replace("\\-", "-").replace("\\e", "\\").replace("\\ ", " ").replace("\\~", " ")
    text = _FONT.sub("", text)
    text = _SIZE.sub("", text)
    text = _STRING.sub("", text)
    text = _CHAR.sub(lambda m: _SPECIAL.get(m.group(1) or m.group(2), ""), text)
    for escape in ("\\{", "\\}", "\\&", "\\,", "\\/", "\\|", "\\^", "\\c", "\\:", "\\%", "\\0"):
        text = text.replace(escape, "")
    text = text.replace("``", "“").replace("''", "”")
    return _HAN_GAP.sub("", re.sub(r"[ \t]+", " ", text)).strip()


def _request_text(arguments: str) -> str:
    """The text of ``.B foo "bar baz"`` style requests: their arguments, quotes removed."""
    parts = re.findall(r'"([^"]*)"|(\S+)', arguments)
    return " ".join(quoted or bare for quoted, bare in parts)


def _live_lines(source: str) -> Iterator[str]:
    """The lines of a roff source, without comments, macro definitions (.de) and ignored blocks (.ig)."""
    skipping = False
    for raw in source.splitlines():
        line = raw.rstrip()
        if skipping:
            skipping = line != ".."
        elif line.startswith((".", "'")) and line[1:].strip().partition(" ")[0] in {"de", "ig", "am"}:
            skipping = True
        elif not line.startswith(('.\\"', "'\\\"")) and line not in {".", "'"}:
            yield line


def render(source: str) -> list[tuple[str, list[str]]]:
    """A roff manual page as ``(section heading, paragraphs)`` pairs, in page order."""
    sections: list[tuple[str, list[str]]] = [("", [])]
    current: list[str] = []

    def flush() -> None:
        if current:
            paragraph = unescape(" ".join(current))
            if paragraph:
                sections[-1][1].append(paragraph)
            current.clear()

    for line in _live_lines(source):
        if not line.startswith((".", "'")):
            current.append(line)
            continue
        request, _, arguments = line[1:].strip().partition(" ")
        if request in {"SH", "SS"}:
            flush()
            heading = unescape(_request_text(arguments))
            if request == "SH":
                sections.append((heading, []))
            elif heading:
                sections[-1][1].append(heading)
        elif request in _PARAGRAPH:
            flush()
            if request == "IP" and arguments:
                current.append(_request_text(arguments).split(" ")[0])
        elif request in _SKIP_REQUESTS or not request[:1].isalpha():
            continue
        else:  # .B .I .BR .IR .BI .RB .SM ...: font requests whose arguments are text
            current.append(_request_text(arguments))
    flush()
    return [(heading, paragraphs) for heading, paragraphs in sections if heading or paragraphs]


def parse_page(page_id: str, source: str, *, markdown: bool = False) -> Page | None:
    """A page's NAME line split into names and description, and the rest of the page; None without NAME.

    ``markdown``: each section heading becomes a ``## HEADING`` line and paragraphs are separated by blank lines.
    """
    sections = render(source)
    for position, (heading, paragraphs) in enumerate(sections):
        if any(heading.startswith(name) for name in NAME_HEADINGS):
            name_line = " ".join(paragraphs)
            parts = _DASH.split(name_line, maxsplit=1)
            names, description = parts[0].strip(), parts[1].strip().rstrip("。.") if len(parts) == 2 else ""
            description = _STAMP.sub("", description)
            rest = [s for i, s in enumerate(sections) if i != position]
            joint, mark = ("\n\n", "## ") if markdown else ("\n", "")
            body = "\n\n".join(
                joint.join(([mark + heading] if heading else []) + paragraphs) for heading, paragraphs in rest
            ).strip()
            return Page(page_id=page_id, names=names, description=description, body=body)
    return None


def cut(text: str, max_chars: int) -> str:
    """``text`` up to the first paragraph boundary after ``max_chars`` characters."""
    if len(text) <= max_chars:
        return text
    end = text.find("\n", max_chars)
    return text if end < 0 else text[:end]


def man_pages(root: Path, man_dir: str) -> Iterator[tuple[str, str]]:
    """``(page id, roff source)`` of every regular page under an extracted package tree's ``man_dir``."""
    base = next((p for p in (root / man_dir, root) if p.is_dir()), root)
    for path in sorted(base.glob("man[1-8]/*.gz")):
        if path.is_symlink():
            continue
        yield (
            f"{path.parent.name}/{path.name.removesuffix('.gz')}",
            gzip.decompress(path.read_bytes()).decode("utf-8", errors="replace"),
        )


def extract(language: Language, sources: list[Path], scratch: Path) -> Path:
    """One tree holding the language's packages: ``sources`` (.debs or one extracted tree) or `apt-get download`."""
    if len(sources) == 1 and sources[0].is_dir():
        return sources[0]
    if not sources:
        subprocess.run(["apt-get", "download", *language.packages], cwd=scratch, check=True, capture_output=True)
        sources = [next(scratch.glob(f"{package}_*.deb")) for package in language.packages]
    tree = scratch / "tree"
    for deb in sources:
        subprocess.run(["dpkg-deb", "-x", str(deb), str(tree)], check=True)
    return tree


def is_query(description: str, *, lang: str, min_han: int, min_words: int) -> bool:
    """Whether a NAME description is specific enough to be a query (short ones like ``ls`` are not)."""
    if lang == "zh":
        return len(_HAN_CHAR.findall(description)) >= min_han
    return len(description.split()) >= min_words


def build(
    tree: Path, out: Path, *, lang: str, max_chars: int, min_han: int, min_words: int, markdown: bool = False
) -> dict[str, int]:
    """Write ``corpus.jsonl``, ``queries.jsonl`` and ``qrels/test.tsv`` under ``out``; return counts."""
    sources = man_pages(tree, LANGUAGES[lang].man_dir)
    pages = [p for page_id, source in sources if (p := parse_page(page_id, source, markdown=markdown)) and p.body]
    by_description: dict[str, list[str]] = {}
    for page in pages:
        if is_query(page.description, lang=lang, min_han=min_han, min_words=min_words):
            by_description.setdefault(page.description, []).append(page.page_id)
    out.mkdir(parents=True, exist_ok=True)
    (out / "qrels").mkdir(exist_ok=True)
    with (out / "corpus.jsonl").open("w", encoding="utf-8") as corpus:
        for page in pages:
            record = {"_id": page.page_id, "title": page.names, "text": cut(page.body, max_chars)}
            corpus.write(json.dumps(record, ensure_ascii=False) + "\n")
    with (
        (out / "queries.jsonl").open("w", encoding="utf-8") as queries,
        (out / "qrels/test.tsv").open("w", encoding="utf-8") as qrels,
    ):
        qrels.write("query-id\tcorpus-id\tscore\n")
        for number, (description, page_ids) in enumerate(sorted(by_description.items()), start=1):
            qid = f"q{number:04d}"
            queries.write(json.dumps({"_id": qid, "text": description}, ensure_ascii=False) + "\n")
            qrels.writelines(f"{qid}\t{page_id}\t1\n" for page_id in page_ids)
    return {"documents": len(pages), "queries": len(by_description)}


def main() -> None:
    """Command line: ``python -m bench.manpages {zh,en} [OUT_DIR] [--source DEB_OR_DIR ...]``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("lang", choices=sorted(LANGUAGES), help="zh: manpages-zh; en: manpages + manpages-dev")
    parser.add_argument("out", nargs="?", type=Path, help="output directory (default /tmp/ragindex-<set>)")
    parser.add_argument("--source", type=Path, action="append", default=[], help=".deb(s) or one extracted tree")
    parser.add_argument("--max-chars", type=int, default=4000, help="cut each page after this many characters")
    parser.add_argument("--min-han", type=int, default=4, help="zh: Han characters a description needs")
    parser.add_argument("--min-words", type=int, default=3, help="en: words a description needs")
    parser.add_argument(
        "--markdown", action="store_true", help="section headings as '## HEADING' lines (chunks get headings)"
    )
    args = parser.parse_args()
    language = LANGUAGES[args.lang]
    out = args.out or language.default_out
    with tempfile.TemporaryDirectory() as scratch:
        tree = extract(language, args.source, Path(scratch))
        counts = build(
            tree,
            out,
            lang=args.lang,
            max_chars=args.max_chars,
            min_han=args.min_han,
            min_words=args.min_words,
            markdown=args.markdown,
        )
    print(json.dumps({"out": str(out), **counts}))


if __name__ == "__main__":
    main()
