"""Splatting datasets, registered through ``TaskSpec.catalog``; sha256 sums in ``checksums/``.

D-NeRF's canonical download (one ``data.zip`` on Dropbox / Google Drive) cannot be fetched by a script, so there is
no automatic download: the not-found error says where to get it. The catalogue lists the ``standup`` scene.
"""

from __future__ import annotations

from zoo.data.catalog import DatasetSpec

DATASETS = (DatasetSpec("D-NeRF", "https://github.com/albertpumarola/D-NeRF", (), package=__package__),)
