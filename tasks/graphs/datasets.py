"""Graph datasets, registered through ``TaskSpec.catalog``; sha256 sums in ``checksums/``.

CollegeMsg (a temporal message graph) is read by no task yet; it is catalogued for the dynamic-graph task.
"""

from __future__ import annotations

from zoo.data.catalog import DatasetSpec, Download

_PLANETOID = "https://github.com/kimiyoung/planetoid/raw/master/data"
_TU = "https://www.chrsmrrs.com/graphkerneldatasets"

DATASETS = (
    DatasetSpec(
        "Planetoid",
        "https://github.com/kimiyoung/planetoid/tree/master/data",
        tuple(
            Download(f"Cora/raw/ind.cora.{ext}", f"{_PLANETOID}/ind.cora.{ext}")
            for ext in ("x", "tx", "allx", "y", "ty", "ally", "graph", "test.index")
        ),
        package=__package__,
    ),
    DatasetSpec(
        "TUDataset",
        _TU,
        tuple(
            Download(f"{n}/raw", f"{_TU}/{n}.zip", archive="zip", strip=f"{n}/")
            for n in ("MUTAG", "PROTEINS", "ENZYMES", "PTC_MR")
        ),
        package=__package__,
    ),
    DatasetSpec(
        "CollegeMsg",
        "https://snap.stanford.edu/data/CollegeMsg.html",
        (Download("CollegeMsg.txt", "https://snap.stanford.edu/data/CollegeMsg.txt.gz", archive="gz"),),
        package=__package__,
    ),
)
