"""What the CLI does with an unexpected error: the traceback goes to a log file, the terminal gets one line.

The log is ``<data_dir>/logs/crash-<UTC time>-<pid>.log`` when the data directory exists, else the
same name under the system's temporary directory; it is readable by its owner only (it holds the
command line, whose secret-looking option values are masked).
"""

from __future__ import annotations

import os
import platform
import sys
import tempfile
import traceback
from datetime import UTC, datetime
from pathlib import Path

from ragindex.cli.app import package_version

_SECRET_OPTIONS = ("key", "password", "secret", "token")


def _command_line(argv: list[str]) -> str:
    out: list[str] = []
    mask_next = False
    for arg in argv:
        name, eq, value = arg.partition("=")
        secret = arg.startswith("--") and any(word in name.lower() for word in _SECRET_OPTIONS)
        if mask_next:
            out.append("***")
        elif secret and eq:
            out.append(f"{name}=***")
        else:
            out.append(arg)
        mask_next = secret and not eq
    return " ".join(out)


def write_crash_log(exc: BaseException, data_dir: Path | None) -> Path | None:
    """Write ``exc``'s traceback and the context to a new log file; return its path (None: nowhere writable)."""
    now = datetime.now(UTC)
    text = (
        f"ragindex {package_version()} crashed at {now.isoformat(timespec='seconds')}\n"
        f"command: {_command_line(sys.argv)}\n"
        f"python {platform.python_version()} on {platform.platform()}, pid {os.getpid()}\n\n"
        + "".join(traceback.format_exception(exc))
    )
    name = f"crash-{now:%Y%m%dT%H%M%SZ}-{os.getpid()}.log"
    folders = [data_dir.resolve() / "logs"] if data_dir is not None and data_dir.is_dir() else []
    for folder in [*folders, Path(tempfile.gettempdir())]:
        path = folder / (name if folder.name == "logs" else f"ragindex-{name}")
        try:
            folder.mkdir(exist_ok=True)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(text)
        except OSError:
            continue
        return path
    return None


def crash_line(exc: BaseException, log: Path | None) -> str:
    """The one line printed on stderr for an unexpected error."""
    what = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    if len(what) > 300:
        what = what[:300] + "…"
    if log is None:
        return f"error: unexpected {what} (no log file could be written: the traceback is above; please report it)"
    return f"error: unexpected {what} (a bug in ragindex: please report it with {log}, which holds the traceback)"
