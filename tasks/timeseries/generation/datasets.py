"""The multi-domain generation corpus, registered through ``TaskSpec.catalog``; sha256 sums in ``checksums/``.

``ts-corpus`` is the mirror's folder of real series from many domains (see its README and each folder's
SOURCE.md); only the files the domain recipes of :mod:`zoo_tasks.timeseries.generation.corpus` read are listed.
ETT-small and weather are SEER's catalog entries (``zoo_tasks.timeseries.datasets``), read under their names.
"""

from __future__ import annotations

from zoo.data.catalog import DatasetSpec

DATASETS = (
    DatasetSpec(
        "ts-corpus",
        # the not-found text reads "Source: <url>." / "fetch it again from <url>": a place, not a description
        "the upstream repositories listed in docs/tasks/timemode.md, section 'The ts-corpus folders' (one per "
        "folder, no single download)",
        package=__package__,
    ),
)
