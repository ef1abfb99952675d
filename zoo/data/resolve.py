"""Find a named dataset on disk (or download it), verify every file's sha256, and hand out writable copies.

Resolution order: explicit ``path`` -> ``$ZOO_DATA_DIR/<name>`` -> ``<mirror>/<name>`` (read-only; see
:func:`data_mirror`: ``$ZOO_DATA_MIRROR``, else ``shared/datasets`` beside the checkout) -> the installed package
that ships it (``DatasetSpec.bundled``) -> ``$ZOO_CACHE_DIR/data/<name>`` -> download from the canonical URL into
that cache folder. :func:`locate` is that lookup without hashing or fetching (``zoo list``, the tests' skips); the
test suite finds its mirror through the same :func:`data_mirror`.
"""

from __future__ import annotations

import gzip
import hashlib
import importlib.util
import os
import shutil
import tempfile
import urllib.parse
import urllib.request
import zipfile
from collections.abc import Iterable
from dataclasses import dataclass
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
    if missing, so that a wrong value shows up in the places tried; set and empty: no mirror at all), else
    ``shared/datasets`` beside the checkout (``<repo>/../shared/datasets``) when that folder exists, else None."""
    value = os.environ.get("ZOO_DATA_MIRROR")
    if value is not None:
        return Path(value).expanduser().absolute() if value else None
    beside = repository_root().parent / "shared" / "datasets"
    return beside if beside.is_dir() else None


@dataclass(frozen=True)
class Place:
    """One folder where a dataset is looked for: ``kind`` ("explicit path", "data dir", "mirror", "package" or
    "cache"), ``label`` as the user would write it (``$ZOO_DATA_DIR/<name>``) and the folder itself."""

    kind: str
    label: str
    root: Path


def _bundled_place(spec: DatasetSpec) -> Place | None:
    """The folder inside the installed package that ships ``spec``'s files, or None (not bundled, not installed).
    Found without importing the package: importing scikit-learn alone takes seconds, too slow for ``zoo list``."""
    package = _bundled_package(spec)
    if not package:
        return None
    top, *subpackages = package.split(".")
    found = importlib.util.find_spec(top)
    if found is None or not found.submodule_search_locations:
        return None
    folder = spec.bundled.partition(":")[2]
    parts = [*subpackages, *(folder.split("/") if folder else [])]
    root = Path(next(iter(found.submodule_search_locations))).joinpath(*parts)
    return Place("package", f"inside package {package}", root)


def _candidates(spec: DatasetSpec, path: str | os.PathLike | None) -> list[Place]:
    name = spec.name
    found = []
    if path is not None:
        found.append(Place("explicit path", "explicit path", Path(path).expanduser().absolute()))
    if os.environ.get("ZOO_DATA_DIR"):
        root = Path(os.environ["ZOO_DATA_DIR"]).expanduser().absolute() / name
        found.append(Place("data dir", f"$ZOO_DATA_DIR/{name}", root))
    mirror = data_mirror()
    if mirror is not None:
        label = "$ZOO_DATA_MIRROR" if os.environ.get("ZOO_DATA_MIRROR") else "mirror beside the checkout"
        found.append(Place("mirror", f"{label}/{name}", mirror / name))
    bundled = _bundled_place(spec)
    if bundled is not None:
        found.append(bundled)
    found.append(Place("cache", "download cache", cache_dir() / "data" / name))
    return found


def _has_files(root: Path, wanted: dict[str, str]) -> bool:
    return root.is_dir() and all((root / rel).is_file() for rel in wanted)


def _remedy(spec: DatasetSpec) -> str:
    """What a user does to get dataset ``spec`` by hand."""
    if spec.bundled:
        return f"It ships inside the Python package {_bundled_package(spec)!r}: install that package."
    return (
        f"Source: {spec.url}. Put it at $ZOO_DATA_DIR/{spec.name} (or pass its path), or set ZOO_DATA_MIRROR to "
        f"a folder holding {spec.name}/."
    )


def _bundled_package(spec: DatasetSpec) -> str:
    """The package that ships ``spec``'s files, or "" when it is not bundled."""
    return spec.bundled.partition(":")[0]


_PRESENT = {
    "explicit path": "present at the given path",
    "data dir": "present in $ZOO_DATA_DIR",
    "mirror": "present in the mirror",
    "cache": "present in the download cache",
}


@dataclass(frozen=True)
class Location:
    """Where dataset ``name`` would come from, found by existence checks only (no file is hashed).

    Attributes:
        status: "present" (``place`` holds every wanted file), "download" (nowhere on this machine, and every
            wanted file has an automatic download, into ``place``, the cache) or "missing".
        place: the folder it is read from (present) or downloaded into (download); None when missing.
        urls: the download URLs (download).
        tried: every place looked at, in the resolution order.
        incomplete: ``(place, files there, files wanted)`` of the fullest folder holding some but not all files.
        source: where the files come from: the catalogue's URL, or the package that ships them.
        remedy: what to do to get it by hand.
        bundled: the Python package that ships the files, or "".
    """

    name: str
    status: str
    place: Place | None
    urls: tuple[str, ...]
    tried: tuple[Place, ...]
    incomplete: tuple[Place, int, int] | None
    source: str
    remedy: str
    bundled: str = ""

    @property
    def present(self) -> bool:
        """Whether every wanted file is on this machine."""
        return self.status == "present"

    def _gap(self) -> str:
        if self.incomplete is None:
            return ""
        place, have, want = self.incomplete
        return f" ({place.root} holds only {have} of its {want} files)"

    def describe(self) -> str:
        """One line for ``zoo list``: where it is, where it would be downloaded from, or what to do."""
        if self.status == "present":
            if self.place.kind == "package":
                return f"ships inside the installed package {self.bundled} ({self.place.root})"
            where = _PRESENT[self.place.kind]
            return f"{where} ({self.place.root}); files not verified (sha256 checked when a run reads them)"
        if self.status == "download":
            hosts = sorted({"{0.scheme}://{0.netloc}".format(urllib.parse.urlsplit(url)) for url in self.urls})
            count = f"{len(self.urls)} download{'s' if len(self.urls) > 1 else ''} from {', '.join(hosts)}"
            into = self.place.root
            return f"not on this machine{self._gap()}: would be downloaded on first use ({count}) into {into}"
        return f"not on this machine{self._gap()} and cannot be downloaded automatically. {self.remedy}"

    def skip_reason(self) -> str:
        """Why a test that needs this dataset does not run, and what to do about it."""
        if self.bundled:
            return f"dataset {self.name!r} is not on this machine: {self.remedy}"
        return (
            f"dataset {self.name!r} is not on this machine{self._gap()}: set ZOO_DATA_MIRROR to a mirror that has "
            f"{self.name}/, or put it in $ZOO_DATA_DIR/{self.name} (source: {self.source})"
        )


def _download_urls(spec: DatasetSpec, wanted: dict[str, str]) -> tuple[str, ...] | None:
    """The URLs that fetch every wanted file, or None when some file has no automatic download."""
    urls = []
    for rel in wanted:
        item = next((d for d in spec.downloads if rel == d.target or rel.startswith(d.target + "/")), None)
        if item is None:
            return None
        if item.url not in urls:
            urls.append(item.url)
    return tuple(urls)


def _fullest_partial(tried: list[Place], wanted: dict[str, str]) -> tuple[Place, int, int] | None:
    best = None
    for place in tried:
        if place.root.is_dir():
            have = sum((place.root / rel).is_file() for rel in wanted)
            if have and (best is None or have > best[1]):
                best = (place, have, len(wanted))
    return best


def locate(name: str, path: str | os.PathLike | None = None, files: Iterable[str] | None = None) -> Location:
    """Where dataset ``name`` (``files`` of it, default all) would come from, in :func:`resolve`'s order:
    ``path``, ``$ZOO_DATA_DIR/<name>``, the mirror, the package that ships it, the download cache; else a
    download, else nowhere. Existence checks only: cheap, and nothing is verified or fetched.

    Raises:
        ConfigError: ``name`` is not a registered dataset.
        DatasetNotFoundError: ``files`` names a file the dataset does not have.
    """
    spec = get_dataset_spec(name)
    wanted = _wanted(spec, list(files) if files is not None else None)
    tried = _candidates(spec, path)
    package = _bundled_package(spec)
    source = f"Python package {package}" if package else spec.url
    about = dict(tried=tuple(tried), source=source, remedy=_remedy(spec), bundled=package)
    found = next((place for place in tried if _has_files(place.root, wanted)), None)
    if found is not None:
        return Location(name, "present", found, (), incomplete=None, **about)
    partial = _fullest_partial(tried, wanted)
    urls = None if package else _download_urls(spec, wanted)
    if urls:
        return Location(name, "download", tried[-1], urls, incomplete=partial, **about)
    return Location(name, "missing", None, (), incomplete=partial, **about)


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
    found = locate(name, path, files)
    if found.present:
        verify(found.place.root, name, files)
        return found.place.root
    download_error = "no automatic download for this dataset"
    if download and spec.downloads and not spec.bundled:
        try:
            root = _download(spec, wanted)
            verify(root, name, files)
            return root
        except ChecksumError:
            raise
        except Exception as exc:  # noqa: BLE001 - offline machines fail here; the message below says what to do
            download_error = f"download failed: {type(exc).__name__}: {exc}"
    places = "; ".join(f"{place.label} {place.root}" for place in found.tried)
    raise DatasetNotFoundError(f"dataset {name!r} not found (tried: {places}; {download_error}). {found.remedy}")


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
