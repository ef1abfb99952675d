"""Multiple-instance datasets, registered through ``TaskSpec.catalog``; sha256 sums in ``checksums/``.

The digit bags are built from scikit-learn's digits, which ship inside scikit-learn (``bundled``): the entry lets
``zoo list`` say so; the datamodule reads them with ``sklearn.datasets.load_digits``.
"""

from __future__ import annotations

from zoo.data.catalog import DatasetSpec

DATASETS = (
    DatasetSpec(
        "MIL",
        "https://archive.ics.uci.edu/dataset/74/musk+version+1 ; http://www.cs.columbia.edu/~andrews/mil/datasets.html",
        package=__package__,
    ),
    DatasetSpec(
        "digits",
        "https://scikit-learn.org/stable/datasets/toy_dataset.html#optical-recognition-of-handwritten-digits-dataset",
        bundled="sklearn.datasets:data",
        extra_checksums={"digits.csv.gz": "09f66e6debdee2cd2b5ae59e0d6abbb73fc2b0e0185d2e1957e9ebb51e23aa22"},
    ),
)
