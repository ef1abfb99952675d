"""Datasets of the DyGMoCE task (``TaskSpec.catalog``).

CollegeMsg (SNAP; DyGLib's "UCI") is already registered, with its sha256 in ``zoo_tasks/graphs/checksums/``, by
the graphs package's catalog (``zoo_tasks.graphs.datasets``). This catalog hands out that same spec object: two
plugins registering one name must register it identically, and the graphs files stay untouched. ``checksums/``
here holds the same digest, so the file list travels with this package too (see ``test_dygmoce_data.py``).
"""

from __future__ import annotations

from zoo_tasks.graphs.datasets import DATASETS as _GRAPH_DATASETS

COLLEGEMSG = next(spec for spec in _GRAPH_DATASETS if spec.name == "CollegeMsg")
COLLEGEMSG_FILE = "CollegeMsg.txt"
DATASETS = (COLLEGEMSG,)
