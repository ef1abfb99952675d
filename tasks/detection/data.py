"""The DroneDINO datamodule: task-homogeneous batches of RGB, IR and RGB-IR drone images (no mmdet needed).

Tasks and their data (``tasks`` chooses; see ``readers`` for the formats, ``splits`` for the splits):
- ``ir``: HIT-UAV (thermal, 640x512 grey, read as 3 equal channels), split by image-id ranges;
- ``rgb``: DroneViewVehicle-RGB (640x640, ``car``), split by frame order;
- ``rgbir``: DroneVehicle when ``dronevehicle_dir`` is given (its own train/val/test folders), else a
  SYNTHETIC paired set (``synthetic_pairs`` images, split by order): the two-stream path's training test, no benchmark.

Every class name maps into one label space, ``CLASSES``, so one detector serves all tasks (``num_classes = 8``).
Images are resized to ``image_size`` x ``image_size`` (aspect not kept; boxes scaled per axis; predictions are
mapped back with ``scale``). Training images are flipped left-right with probability 0.5 (mmdet's DINO recipe) and,
with ``train_crop``, cut to a random ``train_crop`` square of the resized image (small objects keep their size at a
fraction of the step's cost; evaluation sees whole images). A batch holds one task (the sampler interleaves tasks
by ``mix``):

    {"images": (B, 3, S, S) uint8, "ir": (B, 3, S, S) uint8 or None (rgbir only), "boxes": [(N_i, 4) float32 xyxy
     in resized pixels], "labels": [(N_i,) long], "task": str, "task_id": int, "image_ids": [int],
     "orig_sizes": [(h, w)], "scale": [(sx, sy)]}
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytorch_lightning as pl
import torch
from PIL import Image
from torch.utils.data import DataLoader, Dataset
from torchdata.stateful_dataloader import StatefulDataLoader

from zoo.data import resolve
from zoo.data.epoch_order import EpochSampler
from zoo.data.resolve import sha256_of
from zoo.errors import ConfigError
from zoo_tasks.detection import readers
from zoo_tasks.detection.samples import TASKS, Sample
from zoo_tasks.detection.splits import by_id_range, by_order, check_split

CLASSES = ("person", "car", "bicycle", "other_vehicle", "truck", "bus", "van", "freight_car")
_CANONICAL = {"Person": "person", "Car": "car", "Bicycle": "bicycle", "OtherVehicle": "other_vehicle"}
TASK_DATASETS = {"ir": "HIT-UAV", "rgb": "DroneViewVehicle-RGB", "rgbir": "synthetic RGB-IR pairs (SYNTHETIC)"}


def class_index(name: str) -> int:
    return CLASSES.index(_CANONICAL.get(name, name))


def check_tasks(tasks: list[str]) -> list[str]:
    if not tasks:
        raise ConfigError(f"data.tasks is empty; valid tasks: {', '.join(TASKS)}")
    for t in tasks:
        if t not in TASKS:
            raise ConfigError(f"data.tasks: unknown task {t!r}; valid: {', '.join(TASKS)}")
    if len(set(tasks)) != len(tasks):
        raise ConfigError(f"data.tasks lists a task twice: {tasks}")
    return list(tasks)


def load_image(image: Path | np.ndarray, crop: tuple[int, int, int, int] | None = None) -> np.ndarray:
    """(H, W, 3) uint8; grey images are replicated to 3 channels."""
    if isinstance(image, np.ndarray):
        return image
    with Image.open(image) as im:
        im = im.convert("RGB")
        if crop is not None:
            im = im.crop(crop)
        return np.asarray(im)


def _resize(pixels: np.ndarray, size: int) -> torch.Tensor:
    if pixels.shape[0] != size or pixels.shape[1] != size:
        pixels = np.asarray(Image.fromarray(pixels).resize((size, size), Image.BILINEAR))
    return torch.from_numpy(np.array(pixels, dtype=np.uint8)).permute(2, 0, 1)  # a writable copy


def random_crop(item: dict, side: int, generator: torch.Generator | None = None, tries: int = 10) -> dict:
    """Cut a random ``side`` x ``side`` window out of a resized item (``image``, ``ir``, ``boxes``, ``labels``).

    Boxes are shifted and clipped to the window; a box left with no width or height is dropped with its label. As
    mmdet's ``RandomCrop(allow_negative_crop=False)``, a window is redrawn (up to ``tries`` times) while it holds
    none of the image's boxes; the last draw is kept. Evaluation never crops, so ``scale`` stays the resize's.
    """
    _, h, w = item["image"].shape
    if side > min(h, w):
        raise ConfigError(f"data.train_crop={side} is larger than data.image_size={min(h, w)}")
    boxes = item["boxes"]
    for _ in range(tries):
        x0 = int(torch.randint(0, w - side + 1, (1,), generator=generator))
        y0 = int(torch.randint(0, h - side + 1, (1,), generator=generator))
        moved = (boxes - boxes.new_tensor([x0, y0, x0, y0])).clamp(0, side)
        keep = (moved[:, 2] > moved[:, 0]) & (moved[:, 3] > moved[:, 1])
        if keep.any() or len(boxes) == 0:
            break
    window = (slice(None), slice(y0, y0 + side), slice(x0, x0 + side))
    return {
        **item,
        "image": item["image"][window].contiguous(),
        "ir": None if item["ir"] is None else item["ir"][window].contiguous(),
        "boxes": moved[keep],
        "labels": item["labels"][keep],
    }


def horizontal_flip(item: dict) -> dict:
    """Mirror an item left-right: images along their width, boxes as ``x -> W - x`` (x1 and x2 swap)."""
    w = item["image"].shape[-1]
    boxes = item["boxes"][:, [2, 1, 0, 3]] * item["boxes"].new_tensor([-1, 1, -1, 1]) + item["boxes"].new_tensor(
        [w, 0, w, 0]
    )
    return {
        **item,
        "image": item["image"].flip(-1),
        "ir": None if item["ir"] is None else item["ir"].flip(-1),
        "boxes": boxes,
    }


class DetectionImages(Dataset):
    """Samples of several tasks, resized to ``size``; item = one image's dict (see the module docstring).

    ``flip`` and ``crop`` are the training augmentations (a left-right flip with probability 0.5, a random ``crop``
    square). Indexed by ``(i, augment_seed)`` (the training sampler's items) they draw from a generator seeded with
    ``augment_seed``, so an image's augmentation is a function of that seed alone; indexed by ``i`` they draw from
    torch's global generator.
    """

    def __init__(self, samples: list[Sample], size: int, flip: bool = False, crop: int | None = None):
        self.samples, self.size, self.flip, self.crop = samples, size, flip, crop

    def __len__(self) -> int:
        return len(self.samples)

    def __getitem__(self, key: int | tuple[int, int]) -> dict:
        i, generator = (key, None) if isinstance(key, int) else (key[0], torch.Generator().manual_seed(key[1]))
        s = self.samples[i]
        sx, sy = self.size / s.width, self.size / s.height
        boxes = torch.from_numpy(s.boxes * np.float32([sx, sy, sx, sy])).reshape(-1, 4)
        item = {
            "image": _resize(load_image(s.image, s.crop), self.size),
            "ir": None if s.ir_image is None else _resize(load_image(s.ir_image, s.crop), self.size),
            "boxes": boxes,
            "labels": torch.tensor([class_index(n) for n in s.labels], dtype=torch.long),
            "task": s.task,
            "image_id": s.image_id,
            "orig_size": (s.height, s.width),
            "scale": (sx, sy),
        }
        if self.crop is not None:
            item = random_crop(item, self.crop, generator)
        if self.flip and bool(torch.rand((), generator=generator) < 0.5):
            item = horizontal_flip(item)
        return item


def collate(items: list[dict]) -> dict:
    tasks = {it["task"] for it in items}
    if len(tasks) != 1:
        raise ValueError(f"a detection batch holds one task, got {sorted(tasks)}")
    task = tasks.pop()
    return {
        "images": torch.stack([it["image"] for it in items]),
        "ir": torch.stack([it["ir"] for it in items]) if items[0]["ir"] is not None else None,
        "boxes": [it["boxes"] for it in items],
        "labels": [it["labels"] for it in items],
        "task": task,
        "task_id": TASKS.index(task),
        "image_ids": [it["image_id"] for it in items],
        "orig_sizes": [it["orig_size"] for it in items],
        "scale": [it["scale"] for it in items],
    }


class TaskBatchSampler(EpochSampler):
    """Batches of one task each. ``groups``: task -> dataset indices.

    Training (``shuffle``): each epoch has as many batches as the groups' natural total; task t gets the share
    ``mix[t] / sum(mix)`` of them (drawn with replacement where a task needs more images than it has: the
    imbalanced mixes), in a random order drawn from ``seed + epoch`` alone. Each image comes as ``(index,
    augment_seed)``, the seed of its flip and crop, so an epoch's batches, augmentations included, are the same
    whether or not the run was stopped and resumed inside it (``zoo.data.epoch_order``).
    Evaluation: every image once as a plain index, in order within each task, tasks taken in turn, no batch dropped.
    """

    def __init__(
        self, groups: dict[str, list[int]], batch_size: int, shuffle: bool, mix: dict[str, float] | None, seed: int = 0
    ):
        super().__init__()
        self.groups, self.batch_size, self.shuffle, self.seed = groups, batch_size, shuffle, seed
        self.mix = {t: float((mix or {}).get(t, len(ix))) for t, ix in groups.items()}
        if any(w < 0 for w in self.mix.values()) or sum(self.mix.values()) <= 0:
            raise ConfigError(f"data.mix weights must be >= 0 with a positive sum, got {mix}")

    def _counts(self) -> dict[str, int]:
        total = sum(math.ceil(len(ix) / self.batch_size) for ix in self.groups.values())
        norm = sum(self.mix.values())
        return {t: round(total * w / norm) for t, w in self.mix.items()}

    def __len__(self) -> int:
        if not self.shuffle:
            return sum(math.ceil(len(ix) / self.batch_size) for ix in self.groups.values())
        return sum(self._counts().values())

    def order(self, epoch: int) -> list[list[int]] | list[list[tuple[int, int]]]:
        if not self.shuffle:  # round robin over the tasks, so a truncated evaluation still sees every task
            per_task = [
                [ix[k : k + self.batch_size] for k in range(0, len(ix), self.batch_size)] for ix in self.groups.values()
            ]
            return [b[i] for i in range(max(len(b) for b in per_task)) for b in per_task if i < len(b)]
        rng = np.random.default_rng(self.seed + epoch)
        batches = []
        for t, n_batches in self._counts().items():
            ix = np.asarray(self.groups[t])
            need = n_batches * self.batch_size
            order = np.concatenate([rng.permutation(ix) for _ in range(max(1, math.ceil(need / len(ix))))])[:need]
            batches += [order[k : k + self.batch_size].tolist() for k in range(0, need, self.batch_size)]
        augment_seeds = rng.integers(0, 2**63, size=(len(batches), self.batch_size)).tolist()
        return [list(zip(batches[b], augment_seeds[b])) for b in rng.permutation(len(batches))]


class DroneDetectionDataModule(pl.LightningDataModule):
    """RGB / IR / RGB-IR drone detection (see the module docstring).

    Args:
        tasks: subset of ``("rgb", "ir", "rgbir")``.
        image_size: square input side in pixels.
        batch_size: images per (single-task) batch.
        mix: task -> relative share of the training batches (e.g. ``{"ir": 4, "rgb": 1}``); default: the
            tasks' image counts.
        max_images: cap per task and split (the first images of the split: quick runs and tests).
        flip: flip training images left-right with probability 0.5.
        train_crop: side of a random square cut from each resized training image (None: the whole image).
        hit_uav_dir, rgb_dir: your own folders in those formats (HIT-UAV's json layout; ``images/`` + ``labels/``
            YOLO), read without the catalogue's checksums (``data_sha256()`` lists their annotation files); default:
            the catalogued datasets through ``zoo.data.resolve`` (sha256-verified).
        dronevehicle_dir: a DroneVehicle folder (``train/``, ``val/``, ``test/``) for the ``rgbir`` task; without
            it ``rgbir`` uses ``synthetic_pairs`` SYNTHETIC pairs of side ``image_size``.
        seed: the training batch order and augmentations; default: the run's seed (``torch.initial_seed()``, which
            ``seed_everything`` sets), so each benchmark seed sees its own order.
    """

    def __init__(
        self,
        tasks: list[str] | None = None,
        image_size: int = 320,
        batch_size: int = 4,
        mix: dict[str, float] | None = None,
        max_images: int | None = None,
        hit_uav_dir: str | None = None,
        rgb_dir: str | None = None,
        dronevehicle_dir: str | None = None,
        synthetic_pairs: int = 64,
        num_workers: int = 0,
        seed: int | None = None,
        flip: bool = True,
        train_crop: int | None = None,
    ):
        super().__init__()
        self.tasks = check_tasks(tasks or ["ir", "rgb"])
        for t in mix or {}:
            if t not in self.tasks:
                raise ConfigError(f"data.mix names task {t!r}, which is not in data.tasks={self.tasks}")
        self.image_size, self.batch_size, self.mix, self.max_images = image_size, batch_size, mix, max_images
        self.hit_uav_dir, self.rgb_dir, self.dronevehicle_dir = hit_uav_dir, rgb_dir, dronevehicle_dir
        self.synthetic_pairs, self.num_workers, self.seed = synthetic_pairs, num_workers, seed
        if train_crop is not None and not 0 < train_crop <= image_size:
            raise ConfigError(f"data.train_crop must be in (0, image_size={image_size}], got {train_crop}")
        self.flip, self.train_crop = flip, train_crop
        self._cache: dict[tuple[str, str], list[Sample]] = {}

    def model_shapes(self) -> dict[str, int]:
        return {"num_classes": len(CLASSES)}

    def data_sha256(self) -> dict[str, str]:
        """sha256 of the annotation files of user folders (catalogued datasets are verified by ``resolve``)."""
        out = {}
        if self.hit_uav_dir:
            ann = Path(self.hit_uav_dir) / "normal_json" / "annotations" / "test.json"
            if ann.is_file():
                out["hit_uav/test.json"] = sha256_of(ann)
        if self.rgb_dir:
            for f in sorted((Path(self.rgb_dir) / "labels").glob("*.txt")):
                out[f"rgb/labels/{f.name}"] = sha256_of(f)
        return out

    def dataset_name(self, task: str) -> str:
        if task == "rgbir" and self.dronevehicle_dir is not None:
            return "DroneVehicle"
        return TASK_DATASETS[task]

    def samples(self, task: str, split: str) -> list[Sample]:
        """The checked samples of ``task`` in ``split`` (cached)."""
        key = (task, check_split(split))
        if key not in self._cache:
            if task == "ir":
                root = Path(self.hit_uav_dir) if self.hit_uav_dir else resolve("HIT-UAV")
                found = by_id_range(readers.read_hit_uav(root), split)
            elif task == "rgb":
                root = Path(self.rgb_dir) if self.rgb_dir else resolve("DroneViewVehicle-RGB")
                listed = root / "selected_stems.txt"  # the mirror's frame order; a user folder: natural order
                stems = listed.read_text().split() if listed.is_file() else None
                found = by_order(readers.read_yolo_folder(root, ("car",), "rgb", stems=stems), split)
            elif self.dronevehicle_dir is not None:
                found = readers.read_dronevehicle(Path(self.dronevehicle_dir), split)
            else:
                found = by_order(readers.synthetic_pairs(self.synthetic_pairs, self.image_size, seed=1234), split)
            self._cache[key] = found[: self.max_images] if self.max_images else found
        return self._cache[key]

    def _loader(self, split: str, shuffle: bool) -> DataLoader:
        samples, groups = [], {}
        for t in self.tasks:
            part = self.samples(t, split)
            if not part:
                raise ConfigError(f"task {t!r} has no images in split {split!r}")
            groups[t] = list(range(len(samples), len(samples) + len(part)))
            samples += part
        seed = torch.initial_seed() if self.seed is None else self.seed
        sampler = TaskBatchSampler(groups, self.batch_size, shuffle, self.mix if shuffle else None, seed)
        if not shuffle:
            return DataLoader(
                DetectionImages(samples, self.image_size),
                batch_sampler=sampler,
                collate_fn=collate,
                num_workers=self.num_workers,
            )
        # the training loader's place goes into checkpoints; its own generator (worker base seeds) keeps it off the
        # global RNG, which the model's noise (DINO's denoising queries) draws from
        return StatefulDataLoader(
            DetectionImages(samples, self.image_size, flip=self.flip, crop=self.train_crop),
            batch_sampler=sampler,
            collate_fn=collate,
            num_workers=self.num_workers,
            generator=torch.Generator().manual_seed(seed),
        )

    def train_dataloader(self) -> DataLoader:
        return self._loader("train", shuffle=True)

    def val_dataloader(self) -> DataLoader:
        return self._loader("val", shuffle=False)

    def test_dataloader(self) -> DataLoader:
        return self._loader("test", shuffle=False)


class LLVIPPairs(Dataset):
    """The 45 unlabelled aligned LLVIP RGB + IR pairs resized to ``size`` (inference path of the two-stream model)."""

    def __init__(self, size: int = 320, data_dir: str | None = None):
        self.images = DetectionImages(readers.read_llvip_pairs(resolve("LLVIP-pairs", path=data_dir)), size)

    def __len__(self) -> int:
        return len(self.images)

    def __getitem__(self, i: int) -> dict:
        return self.images[i]
