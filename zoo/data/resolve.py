"""Find a named dataset on disk (or download it), verify every file's sha256, and hand out writable copies.

Resolution order: explicit ``path`` -> ``$ZOO_DATA_DIR/<name>`` -> ``<mirror>/<name>`` (read-only; see
:func:`data_mirror`: ``$ZOO_DATA_MIRROR``, else ``shared/datasets`` beside the checkout) -> download from the
canonical URL into ``$ZOO_CACHE_DIR/data/<name>``. The test suite finds its mirror through the same function.
"""

from __future__ import annotations

import gzip
import hashlib
import os
import shutil
import tempfile
import urllib.request
import zipfile
from collections.abc import Iterable
from pathlib import Path

from zoo.data.catalog import DatasetSpec, Download, get_dataset_spec
from zoo.errors import ChecksumError, DatasetNotFoundError
from zoo.registry import repository_root

_CHUNK = 1 << 20


def cache_dir() -> Path:
    """``$ZOO_CACHE_DIR`` or ``~/.cache/moe-zoo``: downloads and writable copies of read-only datasets."""
    return Path(os.environ.get("ZOO_CACHE_DIR", Path.home() / ".cache" / "moe-zoo")).expanduser()


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def _wanted(spec: DatasetSpec, files: Iterable[str] | None) -> dict[str, str]:
    sums = spec.checksums
    if files is None:
        return sums
    wanted = {}
    for pattern in files:
        hits = {rel: h for rel, h in sums.items() if rel == pattern or rel.startswith(pattern.rstrip("/") + "/")}
        if not hits:
            raise DatasetNotFoundError(f"dataset {spec.name!r} has no file {pattern!r} in its checksum list")
        wanted.update(hits)
    return wanted


def verify(root: Path, name: str, files: Iterable[str] | None = None) -> None:
    """Check the sha256 of ``files`` (default: all) of dataset ``name`` under ``root``; raise on any mismatch."""
    spec = get_dataset_spec(name)
    for rel, expected in _wanted(spec, files).items():
        path = root / rel
        if not path.is_file():
            raise DatasetNotFoundError(f"dataset {name!r} at {root} is incomplete: {rel} is missing")
        actual = sha256_of(path)
        if actual != expected:
            raise ChecksumError(
                f"dataset {name!r}: {path} has sha256 {actual}, expected {expected}. The file is corrupted or "
                f"a different version; delete it and fetch it again from {spec.url}"
            )


def data_mirror() -> Path | None:
    """The read-only dataset mirror, one rule for the library and the tests: ``$ZOO_DATA_MIRROR`` when set (even
    if missing, so that a wrong value shows up in the "Tried:" list; set and empty: no mirror at all), else
    ``shared/datasets`` beside the checkout (``<repo>/../shared/datasets``) when that folder exists, else None."""
    value = os.environ.get("ZOO_DATA_MIRROR")
    if value is not None:
        return Path(value).expanduser().absolute() if value else None
    beside = repository_root().parent / "shared" / "datasets"
    return beside if beside.is_dir() else None


def _candidates(name: str, path: str | os.PathLike | None) -> list[tuple[str, Path]]:
    found = []
    if path is not None:
        found.append(("explicit path", Path(path).expanduser().absolute()))
    if os.environ.get("ZOO_DATA_DIR"):
        found.append((f"$ZOO_DATA_DIR/{name}", Path(os.environ["ZOO_DATA_DIR"]).expanduser().absolute() / name))
    mirror = data_mirror()
    if mirror is not None:
        label = "$ZOO_DATA_MIRROR" if os.environ.get("ZOO_DATA_MIRROR") else "mirror beside the checkout"
        found.append((f"{label}/{name}", mirror / name))
    found.append(("download cache", cache_dir() / "data" / name))
    return found


def _has_files(root: Path, wanted: dict[str, str]) -> bool:
    return root.is_dir() and all((root / rel).is_file() for rel in wanted)


def resolve(
    name: str, path: str | os.PathLike | None = None, files: Iterable[str] | None = None, download: bool = True
) -> Path:
    """Return the folder of dataset ``name`` with ``files`` (default: all) present and checksum-verified.

    Raises:
        DatasetNotFoundError: nothing found and the download failed or is impossible; the message names the
            dataset, every place tried and the URL.
        ChecksumError: a file exists but its content differs from the recorded sha256.
    """
    spec = get_dataset_spec(name)
    files = list(files) if files is not None else None
    wanted = _wanted(spec, files)
    tried = _candidates(name, path)
    for _, root in tried:
        if _has_files(root, wanted):
            verify(root, name, files)
            return root
    download_error = "no automatic download for this dataset"
    if download and spec.downloads:
        try:
            root = _download(spec, wanted)
            verify(root, name, files)
            return root
        except ChecksumError:
            raise
        except Exception as exc:  # noqa: BLE001 - offline machines fail here; the message below says what to do
            download_error = f"download failed: {type(exc).__name__}: {exc}"
    places = "\n".join(f"  - {label}: {root}" for label, root in tried)
    raise DatasetNotFoundError(
        f"dataset {name!r} not found. Tried:\n{places}\n  - {download_error}\n"
        f"Get it from {spec.url} and put it at $ZOO_DATA_DIR/{name} (or pass its path), or set "
        f"ZOO_DATA_MIRROR to a folder holding {name}/."
    )


def _download(spec: DatasetSpec, wanted: dict[str, str]) -> Path:
    root = cache_dir() / "data" / spec.name
    for item in spec.downloads:
        if any(rel == item.target or rel.startswith(item.target + "/") for rel in wanted):
            _fetch(item, root)
    return root


def _fetch(item: Download, root: Path) -> None:
    target = root / item.target
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=root) as tmp:
        raw = Path(tmp) / "download"
        with urllib.request.urlopen(item.url, timeout=60) as response, open(raw, "wb") as out:
            shutil.copyfileobj(response, out)
        if item.archive is None:
            shutil.move(raw, target)
        elif item.archive == "gz":
            with gzip.open(raw, "rb") as src, open(target, "wb") as out:
                shutil.copyfileobj(src, out)
        elif item.archive == "zip":
            with zipfile.ZipFile(raw) as archive:
                for member in archive.infolist():
                    if member.is_dir() or not member.filename.startswith(item.strip):
                        continue
                    dest = target / member.filename[len(item.strip) :]
                    if not dest.resolve().is_relative_to(target.resolve()):
                        raise DatasetNotFoundError(f"unsafe path {member.filename!r} in {item.url}")
                    dest.parent.mkdir(parents=True, exist_ok=True)
                    with archive.open(member) as src, open(dest, "wb") as out:
                        shutil.copyfileobj(src, out)
        else:
            raise ValueError(f"unknown archive kind {item.archive!r}")


def writable_copy(name: str, path: str | os.PathLike | None = None, files: Iterable[str] | None = None) -> Path:
    """A writable folder mirroring the resolved dataset: files symlinked, so libraries such as PyG can write
    ``processed/`` next to ``raw/`` without touching the (read-only) mirror."""
    files = list(files) if files is not None else None
    source = resolve(name, path, files)
    dest = cache_dir() / "work" / name
    for rel in _wanted(get_dataset_spec(name), files):
        link = dest / rel
        if link.is_symlink() and link.resolve() == (source / rel).resolve():
            continue
        link.parent.mkdir(parents=True, exist_ok=True)
        if link.is_symlink() or link.exists():
            link.unlink()
        link.symlink_to((source / rel).resolve())
    return dest
