"""Discovery (hidden entries and ragindex's own directories are never walked) and the mass-deletion guard's rule."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ragindex.errors import InputError, MassDeleteError
from ragindex.loaders.registry import LoaderRegistry
from ragindex.pipeline.discovery import RemovalGuard, discover


def tree(root: Path, files: list[str]) -> Path:
    for name in files:
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("x")
    return root


def names(files: list[Path], root: Path) -> list[str]:
    return [str(p.relative_to(root)) for p in files]


def test_discovery_skips_hidden_unsupported_and_excluded_directories(tmp_path: Path) -> None:
    root = tree(
        tmp_path / "src",
        ["b.txt", "a.md", "sub/c.json", ".hidden.txt", ".git/x.txt", "data/index/seg.txt", "blobs/1/1/up.txt", "x.bin"],
    )
    (root / "loop").symlink_to(root)  # a directory link is not followed (no loop)
    supports = LoaderRegistry().supports
    files, folders = discover([root], supports, exclude=[root / "data", root / "blobs"])
    assert names(files, root) == ["a.md", "b.txt", "sub/c.json"]
    assert folders == [root.resolve()]
    everything, _ = discover([root], supports)
    assert "data/index/seg.txt" in names(everything, root)


def test_a_file_given_by_name_is_taken_and_a_folder_inside_an_excluded_one_is_refused(tmp_path: Path) -> None:
    root = tree(tmp_path / "src", ["data/blob.txt", "odd.xyz"])
    supports = LoaderRegistry().supports
    files, folders = discover([root / "data" / "blob.txt", root / "odd.xyz"], supports, exclude=[root / "data"])
    assert names(files, root) == ["data/blob.txt", "odd.xyz"] and folders == []
    with pytest.raises(InputError, match="a directory of ragindex itself"):
        discover([root / "data"], supports, exclude=[root / "data"])
    with pytest.raises(InputError, match="path does not exist"):
        discover([root / "missing"], supports)


def test_discovery_order_is_sorted_and_each_file_once(tmp_path: Path) -> None:
    root = tree(tmp_path / "src", ["z.txt", "a/y.txt", "a/b/x.txt"])
    files, _ = discover([root, root / "z.txt", root / "a"], LoaderRegistry().supports)
    assert names(files, root) == ["a/b/x.txt", "a/y.txt", "z.txt"]
    assert os.path.isfile(files[0])


@pytest.mark.parametrize(
    ("held", "gone", "refused"),
    [
        (1, 1, False),  # a one-document folder can be emptied
        (9, 9, False),  # below min_documents: not guarded
        (10, 5, False),  # exactly the fraction is allowed
        (10, 6, True),
        (1000, 501, True),
        (1000, 0, False),
    ],
)
def test_the_guard_refuses_more_than_the_fraction_of_a_guarded_folder(held: int, gone: int, refused: bool) -> None:
    guard = RemovalGuard(max_fraction=0.5, min_documents=10)
    if not refused:
        guard.check(Path("/src"), held, gone)
        return
    with pytest.raises(MassDeleteError, match="RAGINDEX_MAX_REMOVE_FRACTION=0.5.*--allow-mass-delete") as caught:
        guard.check(Path("/src"), held, gone)
    assert caught.value.exit_code == 2


def test_fraction_one_never_refuses() -> None:
    RemovalGuard(max_fraction=1.0, min_documents=1).check(Path("/src"), 100, 100)
