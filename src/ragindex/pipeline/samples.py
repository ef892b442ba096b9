"""Example ids in the pipeline's reports: a few per category, while the counts stay complete."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field

SAMPLE = 10
"""Example ids kept per category."""


@dataclass
class Sampled:
    """Base of a report dataclass that keeps a few example ids per category in ``samples``."""

    samples: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list), kw_only=True)

    def sample(self, key: str, ids: Sequence[str]) -> None:
        """Keep a few example ids per category."""
        room = SAMPLE - len(self.samples[key])
        if room > 0:
            self.samples[key].extend(ids[:room])

    def kept_samples(self) -> dict[str, list[str]]:
        """The categories that have examples (the JSON form of ``samples``)."""
        return {key: ids for key, ids in self.samples.items() if ids}
