"""The reconciler's backoff schedule and its settings (pure logic: no database, no index)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from ragindex.config.settings import Settings
from ragindex.pipeline.reconcile import ReconcilePolicy, retry_delay


def test_the_wait_doubles_per_attempt_up_to_the_cap() -> None:
    waits = [retry_delay(a, backoff=30, backoff_max=200) for a in range(1, 6)]
    assert waits == [30, 60, 120, 200, 200]


def test_the_schedule_starts_with_the_stale_timeout_and_has_one_wait_per_allowed_attempt() -> None:
    policy = ReconcilePolicy(backoff_seconds=30, backoff_max_seconds=3600, max_attempts=5, stale_seconds=600)
    assert policy.delays() == [600, 30, 60, 120, 240]
    assert ReconcilePolicy(max_attempts=1, stale_seconds=600).delays() == [600], "one attempt: nothing is retried"


def test_the_default_policy_comes_from_the_settings() -> None:
    settings = Settings(_env_file=None)  # type: ignore[call-arg]
    policy = ReconcilePolicy.from_settings(settings.pipeline)
    assert policy == ReconcilePolicy()
    assert (settings.reconcile_interval_seconds, settings.reconcile_backoff_seconds) == (60.0, 30.0)


def test_settings_refuse_a_cap_below_the_first_wait_and_negative_intervals() -> None:
    with pytest.raises(ValidationError, match="reconcile_backoff_max_seconds"):
        Settings(_env_file=None, reconcile_backoff_seconds=60, reconcile_backoff_max_seconds=10)  # type: ignore[call-arg]
    with pytest.raises(ValidationError):
        Settings(_env_file=None, reconcile_interval_seconds=-1)  # type: ignore[call-arg]
    assert Settings(_env_file=None, reconcile_interval_seconds=0).reconcile_interval_seconds == 0  # type: ignore[call-arg]
