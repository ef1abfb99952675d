"""Named datasets: resolution (explicit path, ``$ZOO_DATA_DIR``, ``$ZOO_DATA_MIRROR``, download), sha256
verification and writable copies (:mod:`zoo.data.resolve`); each task plugin registers its datasets and their
checksums (:mod:`zoo.data.catalog`)."""

from zoo.data.catalog import DatasetSpec, Download, dataset_names, get_dataset_spec, register_dataset
from zoo.data.resolve import cache_dir, resolve, sha256_of, verify, writable_copy

__all__ = [
    "DatasetSpec",
    "Download",
    "cache_dir",
    "dataset_names",
    "get_dataset_spec",
    "register_dataset",
    "resolve",
    "sha256_of",
    "verify",
    "writable_copy",
]
