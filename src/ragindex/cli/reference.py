"""Render the CLI reference page (docs/reference/cli.md) from the Typer application, so it cannot drift.

``python -m scripts.gen_reference`` writes it; a test checks that the committed page equals :func:`render_page`.
"""

from __future__ import annotations

import inspect
from typing import Any

import typer

from ragindex.cli.app import COMMAND_MODULES, app, register_commands

HEADER = """# CLI reference

Generated from the `ragindex` command itself (`python scripts/gen_reference.py`; a test keeps this page equal to the
code). `ragindex COMMAND --help` prints the same. What each command prints and how it behaves, with its `--json`
shape: [What each command prints](commands.md); exit codes: [Exit codes](exit-codes.md).
"""


def _text(text: str) -> str:
    """Help text as markdown: a ``<`` outside code spans is a character, not the start of an HTML tag."""
    pieces = text.split("`")
    return "`".join(piece if i % 2 else piece.replace("<", "&lt;") for i, piece in enumerate(pieces))


def _cell(text: str) -> str:
    return _text(" ".join(text.split())).replace("|", "\\|")


def _help(command: Any) -> str:
    return _text(inspect.cleandoc(command.help or "").split("\f")[0].strip())


def _is_argument(param: Any) -> bool:
    return bool(param.param_type_name == "argument")


def _type(param: Any, ctx: Any) -> str:
    if getattr(param, "is_flag", False):
        return "flag"
    return str(param.display_type(ctx)).strip("<>")


def _argument(param: Any, ctx: Any) -> str:
    name = (param.name or "").upper()
    return f"{name}..." if _type(param, ctx).startswith("list[") else name


def _names(param: Any, ctx: Any) -> str:
    if _is_argument(param):
        return f"`{_argument(param, ctx)}`"
    return ", ".join(f"`{opt}`" for opt in [*param.opts, *param.secondary_opts])


def _default(param: Any) -> str:
    if param.required:
        return "required"
    value = param.default
    if value is None or value == () or value == [] or (getattr(param, "is_flag", False) and value is False):
        return ""
    if isinstance(value, list | tuple):
        return ", ".join(f"`{item}`" for item in value)
    return f"`{getattr(value, 'value', value)}`"


def _params_table(command: Any, ctx: Any) -> str:
    rows = ["| Argument or option | Type | Default | Meaning |", "|---|---|---|---|"]
    for param in command.params:
        if getattr(param, "hidden", False) or param.name == "help":
            continue
        help_text = getattr(param, "help", None) or ""
        rows.append(f"| {_names(param, ctx)} | {_type(param, ctx)} | {_default(param)} | {_cell(help_text)} |")
    return "\n".join(rows) if len(rows) > 2 else ""


def _usage(path: list[str], command: Any, ctx: Any) -> str:
    pieces = [*path]
    if any(not _is_argument(param) for param in command.params):
        pieces.append("[OPTIONS]")
    pieces += [_argument(param, ctx) for param in command.params if _is_argument(param)]
    if hasattr(command, "list_commands"):
        pieces.append("COMMAND [ARGS]...")
    return " ".join(pieces)


def _section(path: list[str], command: Any, level: int) -> list[str]:
    ctx = command.context_class(command, info_name=path[-1])
    parts = [f"{'#' * level} `{' '.join(path)}`", "", f"```text\n{_usage(path, command, ctx)}\n```"]
    if help_text := _help(command):
        parts += ["", help_text]
    if table := _params_table(command, ctx):
        parts += ["", table]
    if hasattr(command, "list_commands"):
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            if sub is not None and not sub.hidden:
                parts += ["", *_section([*path, name], sub, min(level + 1, 3))]
    return parts


def render_page() -> str:
    """The whole page: the global options, then every command and sub-command.

    Commands come in :data:`~ragindex.cli.app.COMMAND_MODULES` order: Typer lists them in the order their modules
    were imported, which depends on what the process imported before.
    """
    register_commands()
    root = typer.main.get_command(app)
    ctx = root.context_class(root, info_name="ragindex")
    parts = [HEADER, "## Global options", "", "```text\nragindex [OPTIONS] COMMAND [ARGS]...\n```", ""]
    parts += [_params_table(root, ctx), ""]
    order = {name: at for at, name in enumerate(COMMAND_MODULES)}
    names = sorted(root.list_commands(ctx), key=lambda name: (order.get(name, len(order)), name))  # type: ignore[attr-defined]
    for name in names:
        command = root.get_command(ctx, name)  # type: ignore[attr-defined]
        if command is not None and not command.hidden:
            parts += [*_section(["ragindex", name], command, 2), ""]
    return "\n".join(parts).rstrip() + "\n"
