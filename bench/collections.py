"""Build more BEIR-layout evaluation collections from public data a Debian machine can fetch (issue 28).

Three builders, each writing ``corpus.jsonl``, ``queries.jsonl`` and ``qrels/test.tsv`` (never committed):

* ``debian-en``: **short technical abstracts** -- Debian package descriptions in English (the ``Translation-en``
  index of Debian 12 "bookworm" main, fetched by ``apt-get update`` into a private lists directory). A document
  is one package: title = the package name, text = its long description (the synopsis line removed). The query is
  the package's synopsis (``elegant and simple HTTP library for Python3, built for human beings``); relevant is
  the package, and every kept package with the same synopsis. Packages whose long descriptions open with the same
  paragraph (``0ad-data``, ``0ad-data-common``) are near-copies: only the first name of each such group is kept,
  so a query has one findable answer. ``--documents`` packages (default 4,000) are drawn by a hash of the name
  (stable across runs), and the first ``--queries`` (default 500) of them with a synopsis of at least 4 words
  make the queries. Licence: each description belongs to its package and is distributed by Debian under that
  package's free licence (the index itself is public Debian archive metadata).
* ``debian-zh``: the same construction on the Simplified Chinese translations (``Translation-zh_CN``, the Debian
  Description Translation Project, same terms as the English originals): every translated package kept after
  the same de-duplication, queries from synopses with at least 4 Han characters.
* ``pyfaq``: **Q&A-style passages** -- the Python 3.11 FAQ (``python3.11-doc``'s reST sources,
  ``_sources/faq/*.rst.txt``; licence PSF-2.0). Each question is a query; its answer (the text under the question
  heading, up to the next heading) is the relevant document, titled with its FAQ page (``Programming FAQ``). The
  sections of the HOWTO documents (``_sources/howto/*.rst.txt``, cut at their headings, titled ``<howto> >
  <heading>``) are added as distractors. reST markup is lightly cleaned (roles, link targets, directives).

Usage::

    .venv/bin/python -m bench.collections debian-en /tmp/ragindex-deb-en
    .venv/bin/python -m bench.collections debian-zh /tmp/ragindex-deb-zh
    .venv/bin/python -m bench.collections pyfaq /tmp/ragindex-pyfaq
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import subprocess
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path

APT_LISTS = Path("/tmp/ragindex-apt-lists")
_HAN = re.compile(r"[\u3400-\u9fff]")


def apt_lists(lists: Path) -> Path:
    """A private apt lists directory with the English and Chinese translation indexes (``apt-get update``)."""
    (lists / "partial").mkdir(parents=True, exist_ok=True)
    if not any(lists.glob("*Translation-en*")):
        subprocess.run(
            ["apt-get", f"-oDir::State::Lists={lists}", "-oAcquire::Languages=en,zh_CN", "update"],
            check=True,
            capture_output=True,
        )
    return lists


def translations(lists: Path, language: str) -> str:
    """The text of bookworm main's ``Translation-<language>`` index."""
    (path,) = [p for p in lists.glob(f"*bookworm_main_i18n_Translation-{language}*") if "security" not in p.name]
    return subprocess.run(
        ["/usr/lib/apt/apt-helper", "cat-file", str(path)], check=True, capture_output=True, text=True
    ).stdout


def descriptions(text: str) -> Iterator[tuple[str, str, str]]:
    """``(package, synopsis, long description)`` of every stanza of a Translation index."""
    for stanza in text.split("\n\n"):
        package, synopsis, body, inside = "", "", [], False
        for line in stanza.splitlines():
            if line.startswith("Package: "):
                package = line.split(": ", 1)[1].strip()
            elif line.startswith("Description-"):
                synopsis, inside = line.split(": ", 1)[1].strip(), True
            elif inside and line.startswith(" "):
                content = line[1:]
                body.append("" if content.strip() == "." else content)
        if package and synopsis and body:
            paragraphs = "\n".join(body).strip()
            yield package, synopsis, re.sub(r"\n{3,}", "\n\n", paragraphs)


def stable_order(name: str) -> str:
    return hashlib.sha256(name.encode()).hexdigest()


def build_debian(out: Path, language: str, documents: int, queries: int, lists: Path) -> dict[str, int]:
    """The package-description collection in ``language`` (``en`` or ``zh_CN``)."""
    seen_openings: set[str] = set()
    seen_packages: set[str] = set()
    kept: list[tuple[str, str, str]] = []
    for package, synopsis, body in sorted(descriptions(translations(apt_lists(lists), language))):
        opening = re.sub(r"\s+", " ", body.split("\n\n", 1)[0]).strip().lower()
        if opening in seen_openings or package in seen_packages:  # a package listed twice: its first description
            continue
        seen_openings.add(opening)
        seen_packages.add(package)
        kept.append((package, synopsis, body))
    kept.sort(key=lambda item: stable_order(item[0]))
    kept = kept[:documents]

    def long_enough(synopsis: str) -> bool:
        if language.startswith("zh"):
            return len(_HAN.findall(synopsis)) >= 4
        return len(synopsis.split()) >= 4

    by_synopsis: dict[str, list[str]] = {}
    for package, synopsis, _ in kept:
        by_synopsis.setdefault(synopsis.lower(), []).append(package)
    chosen = [(p, s) for p, s, _ in kept if long_enough(s)][:queries]
    records = ({"_id": p, "title": p, "text": body, "metadata": {}} for p, _, body in kept)
    qrels = {p: by_synopsis[s.lower()] for p, s in chosen}
    write(out, records, dict(chosen), qrels)
    return {"documents": len(kept), "queries": len(chosen)}


_TITLE_RULE = re.compile(r"^([=\-~^\"'`#*+])\1{3,}\s*$")
_ROLE = re.compile(r":[a-z:]+:`(?:[^`<]*<)?([^`>]*)>?`")
_LINK = re.compile(r"`([^`<]+?)\s*<[^>]+>`_+")
_LITERAL = re.compile(r"``([^`]+)``")


def clean_rst(text: str) -> str:
    """Light reST clean-up: roles and links to their text, directives and labels dropped, literals unquoted."""
    lines = []
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith((".. ", ":tocdepth:")):
            continue
        line = _ROLE.sub(r"\1", line)
        line = _LINK.sub(r"\1", line)
        line = _LITERAL.sub(r"\1", line)
        lines.append(line.rstrip())
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()


def rst_sections(text: str) -> list[tuple[int, str, str]]:
    """``(level, heading, body)`` per heading of a reST file (level = the order its underline style appeared)."""
    lines = text.splitlines()
    styles: list[str] = []
    heads: list[tuple[int, int, str]] = []  # (line index of the heading, level, heading)
    i = 0
    while i < len(lines) - 1:
        line, under = lines[i], lines[i + 1]
        overline = i > 0 and _TITLE_RULE.match(lines[i - 1]) is not None
        if line.strip() and _TITLE_RULE.match(under) and len(under.strip()) >= len(line.strip()) - 1:
            style = under.strip()[0] + ("o" if overline else "")
            if style not in styles:
                styles.append(style)
            heads.append((i, styles.index(style), line.strip()))
            i += 2
            continue
        i += 1
    out = []
    for n, (start, level, heading) in enumerate(heads):
        end = heads[n + 1][0] if n + 1 < len(heads) else len(lines)
        body = [ln for ln in lines[start + 2 : end] if not _TITLE_RULE.match(ln)]
        out.append((level, heading, clean_rst("\n".join(body))))
    return out


def build_pyfaq(out: Path, source: Path | None) -> dict[str, int]:
    """The Python FAQ collection (questions -> answers) with the HOWTO sections as distractors."""
    with tempfile.TemporaryDirectory(prefix="pyfaq-") as tmp:
        root = source
        if root is None:
            subprocess.run(["apt-get", "download", "python3.11-doc"], cwd=tmp, check=True, capture_output=True)
            (deb,) = Path(tmp).glob("*.deb")
            subprocess.run(["dpkg", "-x", str(deb), tmp], check=True)
            root = Path(tmp)
        sources = next(root.rglob("html/_sources"))
        records: list[dict[str, object]] = []
        queries: dict[str, str] = {}
        qrels: dict[str, list[str]] = {}
        for path in sorted((sources / "faq").glob("*.rst.txt")):
            sections = rst_sections(path.read_text(encoding="utf-8"))
            page = next((h for lvl, h, _ in sections if lvl == 0), path.stem)
            for n, (_level, heading, body) in enumerate(sections):
                if not heading.endswith("?") or len(body) < 40:
                    continue
                did = f"faq/{path.name.split('.')[0]}/{n}"
                records.append({"_id": did, "title": page, "text": body, "metadata": {}})
                queries[did] = _ROLE.sub(r"\1", _LITERAL.sub(r"\1", heading))
                qrels[did] = [did]
        for path in sorted((sources / "howto").glob("*.rst.txt")):
            sections = rst_sections(path.read_text(encoding="utf-8"))
            page = next((h for lvl, h, _ in sections if lvl == 0), path.stem)
            for n, (_level, heading, body) in enumerate(sections):
                if len(body) >= 200:
                    records.append(
                        {"_id": f"howto/{path.name.split('.')[0]}/{n}", "title": f"{page} > {heading}",
                         "text": body, "metadata": {}}
                    )  # fmt: skip
        write(out, records, queries, qrels)
        return {"documents": len(records), "queries": len(queries)}


def write(
    out: Path, records: Iterable[dict[str, object]], queries: dict[str, str], qrels: dict[str, list[str]]
) -> None:
    """The BEIR files: query ``q<n>`` per query in order, every listed document relevant with grade 1."""
    (out / "qrels").mkdir(parents=True, exist_ok=True)
    with (out / "corpus.jsonl").open("w", encoding="utf-8") as handle:
        for record in records:
            handle.write(json.dumps(record, ensure_ascii=False) + "\n")
    lines = ["query-id\tcorpus-id\tscore"]
    with (out / "queries.jsonl").open("w", encoding="utf-8") as handle:
        for n, (key, text) in enumerate(queries.items()):
            qid = f"q{n}"
            handle.write(json.dumps({"_id": qid, "text": text}, ensure_ascii=False) + "\n")
            lines += [f"{qid}\t{doc}\t1" for doc in qrels[key]]
    (out / "qrels" / "test.tsv").write_text("\n".join(lines) + "\n", encoding="utf-8")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("collection", choices=("debian-en", "debian-zh", "pyfaq"))
    parser.add_argument("out", type=Path)
    parser.add_argument("--documents", type=int, default=4000, help="debian-en: packages kept")
    parser.add_argument("--queries", type=int, default=500, help="debian-*: queries kept")
    parser.add_argument("--lists", type=Path, default=APT_LISTS, help="the private apt lists directory")
    parser.add_argument("--source", type=Path, help="pyfaq: an extracted python3.11-doc tree")
    args = parser.parse_args(argv)
    if args.collection == "pyfaq":
        summary = build_pyfaq(args.out, args.source)
    else:
        language = "en" if args.collection == "debian-en" else "zh%5fCN"
        documents = args.documents if args.collection == "debian-en" else 100_000
        summary = build_debian(args.out, language, documents, args.queries, args.lists)
    print(json.dumps({"out": str(args.out), **summary}))


if __name__ == "__main__":
    main()
