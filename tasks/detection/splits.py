"""Train/val/test splits that never mix near-duplicate frames at random.

- HIT-UAV (the mirror holds only its official *test* split, ids 2319-2897): contiguous image-id ranges, train
  2319-2723 (405 images), val 2724-2781 (58), test 2782-2897 (116): about 70/10/20. Ids are not ordered by
  scene (day/night images occur throughout each range).
- Frame sequences (DroneViewVehicle-RGB, DroneVehicle): by frame order, the first 70 % train, the next 10 %
  val, the last 20 % test, so consecutive near-duplicate frames stay on one side of every boundary but one.
"""

from __future__ import annotations

from zoo.errors import ConfigError
from zoo_tasks.detection.samples import Sample

SPLITS = ("train", "val", "test")
HIT_UAV_RANGES = {"train": (2319, 2723), "val": (2724, 2781), "test": (2782, 2897)}
ORDER_FRACTIONS = (0.7, 0.1, 0.2)


def check_split(split: str) -> str:
    if split not in SPLITS:
        raise ConfigError(f"unknown split {split!r}; valid: {', '.join(SPLITS)}")
    return split


def by_id_range(samples: list[Sample], split: str, ranges: dict[str, tuple[int, int]] = HIT_UAV_RANGES) -> list[Sample]:
    """The samples whose ``image_id`` lies in ``ranges[split]`` (inclusive)."""
    lo, hi = ranges[check_split(split)]
    return [s for s in samples if lo <= s.image_id <= hi]


def by_order(
    samples: list[Sample], split: str, fractions: tuple[float, float, float] = ORDER_FRACTIONS
) -> list[Sample]:
    """Contiguous blocks of ``samples`` in their given (frame) order."""
    n = len(samples)
    cut1, cut2 = round(n * fractions[0]), round(n * (fractions[0] + fractions[1]))
    return {"train": samples[:cut1], "val": samples[cut1:cut2], "test": samples[cut2:]}[check_split(split)]
