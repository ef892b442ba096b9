"""Kill a real ``ragindex ingest`` at random moments, repair, and check that nothing was lost, every time.

A corpus of 15 small files; before each run a few files change (and now and then one is
deleted and one added), so every run has real work: new chunks to encode with the model, old
ones to remove and purge. One uninterrupted run measures how long an ingest takes; then each
of the seeded iterations starts the CLI, SIGKILLs it after a random delay within that duration
(half of them in its first fifth), repairs in this process and asserts
:func:`faultkit.assert_converged` against every version of every file ever written. At the end
a plain ingest finishes the corpus and finds every file.
"""

from __future__ import annotations

import random
import signal
import subprocess
import time
from pathlib import Path

import pytest
from faultkit import CLI, assert_converged, cli_env, settings, warm_cache, write_corpus

from ragindex.engine import Engine

pytestmark = pytest.mark.integration

SEED = 20261129
ITERATIONS = 8
WORDS = [
    "river",
    "stone",
    "lantern",
    "harbor",
    "meadow",
    "copper",
    "violin",
    "orchard",
    "glacier",
    "compass",
    "thunder",
    "pepper",
    "marble",
    "falcon",
    "canyon",
    "ember",
    "willow",
    "saddle",
    "quartz",
    "timber",
    "beacon",
    "prism",
    "saffron",
    "tundra",
    "walnut",
    "cobalt",
    "anchor",
    "basil",
    "cedar",
    "dune",
    "fjord",
    "garnet",
    "heron",
    "ivory",
    "jasper",
    "kelp",
    "lagoon",
    "mango",
    "nectar",
    "opal",
    "pigeon",
    "quill",
    "reef",
    "sierra",
    "tulip",
    "umber",
    "velvet",
    "wharf",
    "yarrow",
    "zephyr",
    "almond",
    "bramble",
    "cinder",
]
TOPICS = [
    "aurora",
    "bakelite",
    "cormorant",
    "dirigible",
    "escarpment",
    "filigree",
    "gondolier",
    "hieroglyph",
    "isotope",
    "jacquard",
    "kaleidoscope",
    "labyrinth",
    "monsoon",
    "nautilus",
    "obsidian",
    "palimpsest",
    "quasar",
]


def _text(rng: random.Random, topic: str, version: int) -> str:
    sentences = [f"The {topic} record, revision {version}, opens with its own name."]
    for n in range(5):
        body = " ".join(rng.choice(WORDS) for _ in range(rng.randint(9, 13)))
        sentences.append(f"Line {n} of {topic}: {body}.")
    return " ".join(sentences)


class Corpus:
    """The files on disk and every version ever written (content hash -> text)."""

    def __init__(self, folder: Path, rng: random.Random) -> None:
        self.folder, self.rng = folder, rng
        self.topics = {f"{t}.txt": t for t in TOPICS[:15]}
        self.spare = list(TOPICS[15:])
        self.version = 0
        self.versions = write_corpus(folder, {name: _text(rng, t, 0) for name, t in self.topics.items()})

    def mutate(self) -> None:
        """Rewrite three files; every third call also delete one file and add a new one."""
        self.version += 1
        names = self.rng.sample(sorted(self.topics), 3)
        if self.version % 3 == 0 and self.spare:
            gone = names.pop()
            (self.folder / gone).unlink()
            del self.topics[gone]
            topic = self.spare.pop()
            self.topics[f"{topic}.txt"] = topic
            names.append(f"{topic}.txt")
        self.versions |= write_corpus(self.folder, {n: _text(self.rng, self.topics[n], self.version) for n in names})

    @property
    def phrases(self) -> dict[str, str]:
        return {name: f"{topic} record" for name, topic in self.topics.items()}


def _ingest(data: Path, folder: Path) -> subprocess.Popen[str]:
    # batches of 4: a kill in the index stages finds some batches done, one claimed, others pending
    return subprocess.Popen(
        [CLI, "ingest", str(folder), "--json"],
        env=cli_env(data, extra_env={"RAGINDEX_EMBED_BATCH_SIZE": "4"}),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_random_sigkills_during_ingest_always_converge(tmp_path: Path) -> None:
    rng = random.Random(SEED)
    data = tmp_path / "data"
    corpus = Corpus(tmp_path / "corpus", rng)
    with Engine(settings(data)) as engine:  # the first ingest here: real vectors, computed once
        warm_cache(engine, sorted(corpus.folder.iterdir()))
        engine.ingest([corpus.folder])
        assert_converged(engine, corpus.versions, files=corpus.topics, phrases=corpus.phrases)

    corpus.mutate()
    started = time.monotonic()
    proc = _ingest(data, corpus.folder)
    _, stderr = proc.communicate(timeout=180)
    duration = time.monotonic() - started
    assert proc.returncode == 0, stderr[-2000:]

    outcomes: list[tuple[float, int | None, dict[str, int]]] = []
    for _ in range(ITERATIONS):
        corpus.mutate()
        # half of the kills early (start-up, loading, chunking, purging), half in the index stages
        delay = rng.uniform(0.0, 0.2) * duration if rng.random() < 0.5 else rng.uniform(0.2, 1.0) * duration
        proc = _ingest(data, corpus.folder)
        try:
            proc.wait(timeout=delay)
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGKILL)
        _, stderr = proc.communicate(timeout=60)
        assert proc.returncode in (0, -signal.SIGKILL), stderr[-2000:]
        with Engine(settings(data)) as engine:
            left = engine.repair(dry_run=True)  # what the kill left behind (pytest -s shows it)
            found = {"stale": sum(left.stale.values()), "pending": sum(left.pending.values())}
            found |= {"failed": sum(left.failed_retried.values()), "unpurged": left.unpurged}
            outcomes.append((round(delay, 2), proc.returncode, found))
            report = engine.repair()
            assert report.ok, (outcomes, report.to_dict())
            assert_converged(engine, corpus.versions, phrases=corpus.phrases)

    print(f"ingest takes {duration:.1f} s; (delay, exit code, left behind): {outcomes}")
    killed = sum(1 for _, rc, _ in outcomes if rc == -signal.SIGKILL)
    assert killed >= ITERATIONS // 2, f"too few runs were interrupted: {outcomes} (a run takes {duration:.1f} s)"

    with Engine(settings(data)) as engine:
        report = engine.ingest([corpus.folder])
        assert not report.failures
        assert_converged(engine, corpus.versions, files=corpus.topics, phrases=corpus.phrases)
        for name, doc in ((d.filename, d) for d in engine.store.list_documents()):
            text = (corpus.folder / name).read_text(encoding="utf-8")
            assert corpus.versions.get(doc.content_hash) == text  # the final state is the files on disk
