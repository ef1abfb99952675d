"""The named datasets that built-in tasks read: where each comes from and the sha256 of every file.

Checksums live in ``checksums/<name>.sha256`` (``sha256sum`` format, paths relative to the dataset folder),
taken from each dataset's SOURCE.md in the team's offline mirror. Plugins register their own datasets with
:func:`register_dataset`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from zoo.errors import ConfigError

CHECKSUM_DIR = Path(__file__).parent / "checksums"


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
    """

    name: str
    url: str
    downloads: tuple[Download, ...] = ()
    checksum_file: str = ""
    extra_checksums: dict[str, str] = field(default_factory=dict)

    @property
    def checksums(self) -> dict[str, str]:
        """Relative path -> sha256 for every file of the dataset."""
        sums = dict(_read_checksums(self.checksum_file or f"{self.name}.sha256"))
        sums.update(self.extra_checksums)
        return sums


@cache
def _read_checksums(file_name: str) -> tuple[tuple[str, str], ...]:
    path = CHECKSUM_DIR / file_name
    if not path.exists():
        return ()
    rows = []
    for line in path.read_text().splitlines():
        if line.strip():
            digest, rel = line.split(maxsplit=1)
            rows.append((rel.strip().lstrip("*"), digest))
    return tuple(rows)


_GH = "https://raw.githubusercontent.com"
_TU = "https://www.chrsmrrs.com/graphkerneldatasets"
_REGISTRY: dict[str, DatasetSpec] = {}


def register_dataset(spec: DatasetSpec) -> DatasetSpec:
    """Add (or replace) a dataset in the catalog; plugins call this at import time."""
    _REGISTRY[spec.name] = spec
    return spec


def get_dataset_spec(name: str) -> DatasetSpec:
    try:
        return _REGISTRY[name]
    except KeyError:
        raise ConfigError(f"unknown dataset {name!r}; known datasets: {', '.join(sorted(_REGISTRY))}") from None


def dataset_names() -> list[str]:
    return sorted(_REGISTRY)


for _spec in (
    DatasetSpec(
        "ETT-small",
        "https://github.com/zhouhaoyi/ETDataset/tree/main/ETT-small",
        tuple(
            Download(f"{n}.csv", f"{_GH}/zhouhaoyi/ETDataset/main/ETT-small/{n}.csv")
            for n in ("ETTh1", "ETTh2", "ETTm1", "ETTm2")
        ),
    ),
    DatasetSpec("weather", "https://github.com/thuml/Time-Series-Library (Google-Drive bundle: dataset/weather)"),
    DatasetSpec(
        "Planetoid",
        "https://github.com/kimiyoung/planetoid/tree/master/data",
        tuple(
            Download(
                f"Cora/raw/ind.cora.{ext}", f"https://github.com/kimiyoung/planetoid/raw/master/data/ind.cora.{ext}"
            )
            for ext in ("x", "tx", "allx", "y", "ty", "ally", "graph", "test.index")
        ),
    ),
    DatasetSpec(
        "TUDataset",
        _TU,
        tuple(
            Download(f"{n}/raw", f"{_TU}/{n}.zip", archive="zip", strip=f"{n}/")
            for n in ("MUTAG", "PROTEINS", "ENZYMES", "PTC_MR")
        ),
    ),
    DatasetSpec(
        "CollegeMsg",
        "https://snap.stanford.edu/data/CollegeMsg.html",
        (Download("CollegeMsg.txt", "https://snap.stanford.edu/data/CollegeMsg.txt.gz", archive="gz"),),
    ),
    DatasetSpec(
        "MIL",
        "https://archive.ics.uci.edu/dataset/74/musk+version+1 ; http://www.cs.columbia.edu/~andrews/mil/datasets.html",
    ),
    DatasetSpec("D-NeRF", "https://github.com/albertpumarola/D-NeRF (data.zip on Dropbox / Google Drive)"),
    DatasetSpec("HIT-UAV", "https://github.com/suojiashun/HIT-UAV-Infrared-Thermal-Dataset"),
):
    register_dataset(_spec)
