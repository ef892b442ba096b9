"""Shared helpers of the benchmark suite: settings from env vars, subprocess timing with peak RSS, reports."""

from __future__ import annotations

import json
import os
import platform
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
RAGINDEX = str(BIN / "ragindex")
OUT = Path(os.environ.get("BENCH_OUT", ROOT / "docs"))
RESULTS = OUT / "benchmarks.json"
REPORT = OUT / "benchmarks.md"

SCIFACT = Path(os.environ.get("BENCH_SCIFACT", "/work/shared/data/beir/scifact"))
"""The BEIR SciFact directory (read only; copies go to BENCH_DIR)."""
BENCH_DIR = Path(os.environ.get("BENCH_DIR", "/tmp/ragindex-bench"))
"""Scratch directory: corpus copies and data dirs (kept between runs so subsets can reuse the cold ingest)."""


def env_int(name: str, default: int) -> int:
    """An integer setting of the suite, e.g. ``BENCH_INGEST_DOCS=1000``."""
    return int(os.environ.get(name, default))


@dataclass
class Proc:
    """A finished child process: wall time, exit status, output and peak resident memory."""

    args: list[str]
    wall_s: float
    rc: int
    stdout: str
    stderr: str
    peak_rss_mb: float
    cpu_s: float = 0.0
    """User + system CPU time of the child (``wait4``'s rusage), every thread: robust to a loaded machine."""

    def json(self) -> Any:
        if self.rc != 0:
            raise RuntimeError(f"{' '.join(self.args)} exited {self.rc}: {self.stderr[-2000:]}")
        return json.loads(self.stdout)


def run_proc(args: list[str], env: dict[str, str] | None = None, cwd: Path | None = None) -> Proc:
    """Run a child to completion; wall time includes process start, peak RSS from ``wait4``'s rusage."""
    kept = {"RAGINDEX_TORCH_THREADS"}  # the one setting the suite passes through (see torch_threads())
    child_env = {k: v for k, v in os.environ.items() if not k.startswith("RAGINDEX_") or k in kept}
    child_env.update(env or {})
    out_path, err_path = BENCH_DIR / ".stdout", BENCH_DIR / ".stderr"
    BENCH_DIR.mkdir(parents=True, exist_ok=True)
    with out_path.open("w") as out, err_path.open("w") as err:
        started = time.perf_counter()
        proc = subprocess.Popen(args, stdout=out, stderr=err, env=child_env, cwd=cwd or BENCH_DIR)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - started
        proc.returncode = os.waitstatus_to_exitcode(status)
    return Proc(
        args=args,
        wall_s=wall,
        rc=proc.returncode,
        stdout=out_path.read_text(),
        stderr=err_path.read_text(),
        peak_rss_mb=usage.ru_maxrss / 1024.0,  # Linux: KiB
        cpu_s=usage.ru_utime + usage.ru_stime,
    )


def ragindex(data_dir: Path, *args: str, env: dict[str, str] | None = None) -> Proc:
    """The real CLI as a child process."""
    return run_proc([RAGINDEX, "--data-dir", str(data_dir), *args], env=env)


def python_module(module: str, *args: str, env: dict[str, str] | None = None) -> Proc:
    """``python -m bench.<module>`` as a child process (run from the repo root)."""
    return run_proc([sys.executable, "-m", module, *args], env=env, cwd=ROOT)


def torch_threads() -> int | None:
    """``RAGINDEX_TORCH_THREADS`` when set: every child (CLI, raw encode, query) then uses that many torch threads.

    On an oversubscribed machine, torch's default (one thread per core, spinning OpenMP workers) can be 20x
    slower than one thread; the figures say which was used.
    """
    value = os.environ.get("RAGINDEX_TORCH_THREADS")
    return int(value) if value else None


def vm_hwm_mb() -> float:
    """Peak resident memory of this process (``VmHWM``), in MiB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024.0
    return 0.0


def percentile(values: list[float], q: float) -> float:
    """Linear-interpolation percentile (numpy's default)."""
    from ragindex.eval.runner import percentile as pct

    return pct(values, q)


def machine() -> dict[str, Any]:
    """CPU model, cores, RAM, OS and the load at the time of the run."""
    model, cores = platform.processor() or "unknown", os.cpu_count() or 0
    if shutil.which("lscpu"):
        text = subprocess.run(["lscpu"], capture_output=True, text=True, check=False).stdout
        found = re.search(r"^Model name:\s*(.+)$", text, re.M)
        model = found.group(1).strip() if found else model
        flags = re.search(r"^Flags:\s*(.+)$", text, re.M)
        bf16 = bool(flags and re.search(r"\b(avx512_bf16|amx_bf16)\b", flags.group(1)))
    else:
        bf16 = False
    ram = 0.0
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemTotal:"):
            ram = int(line.split()[1]) / 1024 / 1024
    return {
        "cpu": model,
        "cores": cores,
        "native_bf16": bf16,
        "ram_gib": round(ram, 1),
        "os": platform.platform(),
        "python": platform.python_version(),
        "loadavg_at_start": [round(x, 2) for x in os.getloadavg()],
        "torch_threads": torch_threads() or "torch default",
    }


def versions() -> dict[str, str]:
    """Versions of the packages that shape the figures."""
    out: dict[str, str] = {}
    for name in ("ragindex", "torch", "sentence-transformers", "transformers", "qdrant-edge-py", "SQLAlchemy", "numpy"):
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return out


def now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")


def load_results() -> dict[str, Any]:
    if RESULTS.is_file():
        return dict(json.loads(RESULTS.read_text()))
    return {}


_START_LOAD: list[float] = []


def mark_start() -> None:
    """Remember the load average as a benchmark starts (reported next to its figures)."""
    _START_LOAD[:] = [round(x, 2) for x in os.getloadavg()]


def save_section(name: str, payload: dict[str, Any]) -> None:
    """Store one benchmark's results (a subset run keeps the other sections' earlier figures)."""
    results = load_results()
    info = machine()
    info["loadavg_at_end"] = info.pop("loadavg_at_start")
    info["loadavg_at_start"] = list(_START_LOAD) or info["loadavg_at_end"]
    results.setdefault("sections", {})[name] = {"date": now(), "machine": info, **payload}
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(results, indent=2, sort_keys=False) + "\n")


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process (Linux /proc), in seconds; OSError once it has ended."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
