"""Multiple-instance datasets, registered through ``TaskSpec.catalog``; sha256 sums in ``checksums/``.

The digit bags are built from scikit-learn's bundled digits and need no entry here.
"""

from __future__ import annotations

from zoo.data.catalog import DatasetSpec

DATASETS = (
    DatasetSpec(
        "MIL",
        "https://archive.ics.uci.edu/dataset/74/musk+version+1 ; http://www.cs.columbia.edu/~andrews/mil/datasets.html",
        package=__package__,
    ),
)
