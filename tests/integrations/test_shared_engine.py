"""ragindex.shared: one reference-counted Engine per data dir per process, safe across threads."""

from __future__ import annotations

import threading
from pathlib import Path

from ragindex.config.settings import Settings
from ragindex.engine import Engine
from ragindex.shared import SharedEngine, shared_count, shared_engine


def test_threads_share_one_engine_and_the_last_lease_closes_it(tmp_path: Path, onnx_cache_dir: Path) -> None:
    settings = Settings(_env_file=None, data_dir=tmp_path / "data", onnx_cache_dir=onnx_cache_dir)
    leases: list[SharedEngine] = []
    lock = threading.Lock()
    start = threading.Barrier(8)

    def take() -> None:
        start.wait()
        lease = shared_engine(settings)
        with lock:
            leases.append(lease)

    threads = [threading.Thread(target=take) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len({id(lease.engine) for lease in leases}) == 1 and shared_count(tmp_path / "data") == 8
    engine = leases[0].engine
    engine.index  # noqa: B018  (the shared engine holds the index lock)
    for lease in leases[:-1]:
        lease.close()
        lease.close()  # a lease closes once
    assert shared_count(tmp_path / "data") == 1 and engine.index is not None
    leases[-1].close()
    assert shared_count(tmp_path / "data") == 0 and all(lease.closed for lease in leases)
    with Engine(settings) as fresh:  # the lock was given up with the last lease
        fresh.index  # noqa: B018
    with shared_engine(data_dir=tmp_path / "other") as other:
        assert other is not engine and shared_count(tmp_path / "other") == 1
