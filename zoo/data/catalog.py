"""Datasets known by name: where each comes from and the sha256 of every file.

The core names no dataset. Each task plugin registers its own: its :class:`~zoo.registry.TaskSpec` points
``catalog`` at a sequence of :class:`DatasetSpec` (e.g. ``"my_package.datasets:DATASETS"``), and each spec's
checksums live in ``<package>/checksums/<name>.sha256`` (``sha256sum`` format, paths relative to the dataset
folder), shipped as package data. :func:`get_dataset_spec` finds a name among the installed plugins' catalogs;
:func:`register_dataset` adds one by hand (a notebook, a test).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache
from importlib import resources

from zoo.errors import ConfigError


@dataclass(frozen=True)
class Download:
    """How to fetch part of a dataset: ``url`` saved as ``target`` (a file), or an archive unpacked there.

    ``archive`` is None (plain file), ``"gz"`` (gunzip to ``target``) or ``"zip"`` (extract; members under
    ``strip`` are re-rooted at ``target``).
    """

    target: str
    url: str
    archive: str | None = None
    strip: str = ""


@dataclass(frozen=True)
class DatasetSpec:
    """A dataset known by name: its homepage/canonical URL, checksummed files and automatic downloads.

    ``downloads`` is empty when the canonical host cannot be fetched by a script (Google Drive, Dropbox);
    the not-found error then tells the user where to get it and where to put it.

    Attributes:
        package: importable package whose ``checksums/`` folder holds ``checksum_file`` (package data);
            a plugin's ``datasets.py`` passes its own ``__package__``.
        checksum_file: file name in that folder; default ``<name>.sha256``.
        extra_checksums: relative path -> sha256 added to (or replacing) the file's entries.
        bundled: ``"package:folder"`` when the files ship inside an installed Python package (scikit-learn's
            digits): looked for there after the data dir and the mirror, never downloaded; "" otherwise.
    """

    name: str
    url: str
    downloads: tuple[Download, ...] = ()
    package: str = ""
    checksum_file: str = ""
    extra_checksums: dict[str, str] = field(default_factory=dict)
    bundled: str = ""

    @property
    def checksums(self) -> dict[str, str]:
        """Relative path -> sha256 for every file of the dataset.

        Raises:
            ConfigError: the checksum file is missing, or the dataset lists no file at all (nothing could be
                verified, so nothing is trusted).
        """
        sums = dict(_read_checksums(self.package, self.checksum_file or f"{self.name}.sha256")) if self.package else {}
        sums.update(self.extra_checksums)
        if not sums:
            raise ConfigError(
                f"dataset {self.name!r} lists no files: give DatasetSpec.package (with "
                f"checksums/{self.checksum_file or self.name + '.sha256'} as package data) or extra_checksums"
            )
        return sums


@cache
def _read_checksums(package: str, file_name: str) -> tuple[tuple[str, str], ...]:
    try:
        source = resources.files(package) / "checksums" / file_name
    except ModuleNotFoundError as exc:
        raise ConfigError(f"checksums of {file_name!r}: package {package!r} is not importable ({exc})") from None
    if not source.is_file():
        raise ConfigError(f"checksum file {source} is missing: list 'checksums/*.sha256' in {package!r}'s package data")
    rows = []
    for line in source.read_text().splitlines():
        if line.strip():
            digest, rel = line.split(maxsplit=1)
            rows.append((rel.strip().lstrip("*"), digest))
    return tuple(rows)


_REGISTERED: dict[str, DatasetSpec] = {}


def register_dataset(spec: DatasetSpec) -> DatasetSpec:
    """Add (or replace) a dataset by hand; it takes precedence over the plugins' catalogs."""
    _REGISTERED[spec.name] = spec
    return spec


@dataclass(frozen=True)
class _PluginCatalog:
    specs: dict[str, DatasetSpec]
    owners: dict[str, str]  # dataset name -> the task that registered it first
    problems: dict[str, str]  # dataset name ("" for a whole catalog) -> why it is unusable


@cache
def plugin_catalog() -> _PluginCatalog:
    """The datasets every installed task plugin registers (``TaskSpec.catalog``), read once per process.

    A catalog that fails to import, or two tasks registering different specs under one name, is recorded in
    ``problems`` instead of hiding the other plugins' datasets.
    """
    from zoo.registry import discover, load_object

    specs: dict[str, DatasetSpec] = {}
    owners: dict[str, str] = {}
    problems: dict[str, str] = {}
    for load in discover():
        if load.spec is None or not load.spec.catalog:
            continue
        try:
            entries = tuple(load_object(load.spec.catalog))
            bad = [type(e).__name__ for e in entries if not isinstance(e, DatasetSpec)]
            if bad:
                raise TypeError(f"catalog must hold zoo.data.DatasetSpec objects, got {', '.join(bad)}")
        except Exception as exc:  # noqa: BLE001 - one broken plugin must not hide the other catalogs
            problems[f"(catalog of task {load.name!r})"] = f"{load.spec.catalog}: {type(exc).__name__}: {exc}"
            continue
        for spec in entries:
            if spec.name in specs and specs[spec.name] != spec:
                problems[spec.name] = (
                    f"dataset {spec.name!r} is registered differently by tasks {owners[spec.name]!r} and "
                    f"{load.name!r}; give one of them another name"
                )
                continue
            specs.setdefault(spec.name, spec)
            owners.setdefault(spec.name, load.name)
    return _PluginCatalog(specs, owners, problems)


def get_dataset_spec(name: str) -> DatasetSpec:
    """The spec of dataset ``name``: registered by hand, else found in an installed plugin's catalog.

    Raises:
        ConfigError: the name is unknown (the message lists the known ones and any catalog that failed to
            load), or two plugins register it differently.
    """
    if name in _REGISTERED:
        return _REGISTERED[name]
    catalog = plugin_catalog()
    if name in catalog.problems:
        raise ConfigError(catalog.problems[name])
    if name in catalog.specs:
        return catalog.specs[name]
    broken = "".join(f"; {where} failed: {why}" for where, why in catalog.problems.items() if where.startswith("("))
    raise ConfigError(f"unknown dataset {name!r}; known datasets: {', '.join(dataset_names()) or '(none)'}{broken}")


def dataset_names() -> list[str]:
    """Every dataset name that :func:`get_dataset_spec` knows."""
    return sorted({*_REGISTERED, *plugin_catalog().specs})
