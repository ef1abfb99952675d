"""Datasets of the forecasting tasks, registered through ``TaskSpec.catalog``; sha256 sums in ``checksums/``."""

from __future__ import annotations

from zoo.data.catalog import DatasetSpec, Download

_ETT = "https://raw.githubusercontent.com/zhouhaoyi/ETDataset/main/ETT-small"

DATASETS = (
    DatasetSpec(
        "ETT-small",
        "https://github.com/zhouhaoyi/ETDataset/tree/main/ETT-small",
        tuple(Download(f"{n}.csv", f"{_ETT}/{n}.csv") for n in ("ETTh1", "ETTh2", "ETTm1", "ETTm2")),
        package=__package__,
    ),
    DatasetSpec(
        "weather",
        "https://github.com/thuml/Time-Series-Library (Google-Drive bundle: dataset/weather)",
        package=__package__,
    ),
)
