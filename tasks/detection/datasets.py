"""Detection datasets, registered through ``TaskSpec.catalog``; sha256 sums in ``checksums/``.

None of them can be fetched by a script (hundreds of files in GitHub repositories), so ``downloads`` is empty
and a missing dataset names its repository; the offline mirror (``ZOO_DATA_MIRROR``) holds all three.
Only the files the loaders read are listed (images and the annotations they use).
"""

from __future__ import annotations

from zoo.data.catalog import DatasetSpec

DATASETS = (
    DatasetSpec(
        "HIT-UAV",
        "https://github.com/suojiashun/HIT-UAV-Infrared-Thermal-Dataset (normal_json/test, commit f8100db)",
        package=__package__,
    ),
    DatasetSpec(
        "DroneViewVehicle-RGB",
        "https://github.com/CATS-Lab/Field-data-Drone-View-Vehicle-Image-Set (every 4th frame, commit 77ff67e)",
        package=__package__,
    ),
    DatasetSpec(
        "LLVIP-pairs",
        "https://github.com/bupt-ai-cz/LLVIP (FusionGAN/ pairs, commit 60cdc80)",
        package=__package__,
    ),
)
