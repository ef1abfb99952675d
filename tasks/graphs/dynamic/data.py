"""Datamodule of the DyGLib link-prediction protocol on CollegeMsg (DyGLib's UCI) or a user's temporal edge CSV
(``src,dst,timestamp[,features]`` or DyGLib's own ``ml_<name>.csv`` + ``.npy`` features).

Batches are built in the loader (numpy, main process), so the model only sees tensors:
``{"ids": {...}, "pos": pair, "neg": pair}``: ``ids`` the raw (B,) src / dst / neg_src / neg_dst / edge_ids / ts;
a pair holds, for its source and destination side, ``ids`` (B, L) node ids, ``node_feat`` (B, L, F_n),
``edge_feat`` (B, L, F_e), ``dt`` (B, L), ``pad`` (B, L) bool and ``counts`` (B, L, 2) (see ``neighbors.py``).

- training: chronological batches of the (inductive-reduced) training edges, neighbours from the training graph,
  negatives ``neg_src = src`` and random destinations among the training destinations (DyGLib's unseeded train
  sampler; here a ``RandomState`` seeded from the run's torch seed);
- validation: loader 0 transductive val, loader 1 new-node val, random NS (DyGLib seeds 0 / 1);
- test: for each strategy in ``eval_strategies``, the transductive then the new-node test set (seeds 2 / 3),
  neighbours from the full graph. Negatives are drawn once, as DyGLib's reset samplers draw them every time.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytorch_lightning as pl
import torch
from torch.utils.data import DataLoader

from zoo.data import resolve, sha256_of
from zoo.errors import ConfigError
from zoo_tasks.graphs.dynamic.datasets import COLLEGEMSG_FILE
from zoo_tasks.graphs.dynamic.dyglib import dyglib_index_column, feature_files, read_user_edges
from zoo_tasks.graphs.dynamic.events import DYGLIB_FEATURE_WIDTH, TemporalGraph, read_collegemsg
from zoo_tasks.graphs.dynamic.negatives import STRATEGIES, eval_sampler, evaluation_negatives
from zoo_tasks.graphs.dynamic.neighbors import NeighborFinder, Sequences, pair_sequences, recent_neighbors
from zoo_tasks.graphs.dynamic.split import Interactions, link_prediction_split

DATASETS = ("uci",)
LAYOUTS = ("dygformer", "recent")
EVAL_SETS = ("test", "new_node_test")


def metric_prefix(strategy: str, part: str) -> str:
    """Metric-name prefix of one evaluation: ``""`` (random, transductive), ``"ind_"`` (random, new nodes),
    ``"hist_"``/``"hist_ind_"`` (historical NS), ``"indns_"``/``"indns_ind_"`` (inductive NS)."""
    head = {"random": "", "historical": "hist_", "inductive": "indns_"}[strategy]
    return head + ("ind_" if part.startswith("new_node") else "")


class _Batches(torch.utils.data.Dataset):
    """Index ranges of consecutive batches; the collate function builds the tensors."""

    def __init__(self, count: int, batch_size: int):
        self.starts = list(range(0, count, batch_size))
        self.count, self.batch_size = count, batch_size

    def __len__(self) -> int:
        return len(self.starts)

    def __getitem__(self, i: int) -> slice:
        return slice(self.starts[i], min(self.starts[i] + self.batch_size, self.count))


class DynamicLinkDataModule(pl.LightningDataModule):
    """DyGLib link prediction (Yu et al., NeurIPS 2023) on ``name="uci"`` (CollegeMsg from the catalogue) or
    ``path``: a user's CSV ``src,dst,timestamp[,edge features...]`` (optional header; see ``events.py``) or
    DyGLib's own ``ml_<name>.csv`` with its ``.npy`` features beside it (see ``dyglib.py``).

    ``neighbors``: the batch layout, ``"dygformer"`` (padded first-hop sequences with co-occurrence counts) or
    ``"recent"`` (GraphMixer: the ``num_neighbors`` most recent neighbours). ``train_stride`` k > 1 trains on
    every k-th training batch only (still chronological and spread over the whole training period: a
    reduced-compute epoch); ``eval_strategies``: the negative-sampling strategies tested."""

    catalogue_fields = {"name": "stem"}  # with `path`: the file's name (zoo.cli.dataset_name)

    def __init__(
        self,
        name: str = "uci",
        path: str | None = None,
        data_dir: str | None = None,
        batch_size: int = 200,
        eval_batch_size: int = 200,
        max_sequence_length: int = 32,
        patch_size: int = 1,
        val_ratio: float = 0.15,
        test_ratio: float = 0.15,
        eval_strategies: list[str] | None = None,
        train_stride: int = 1,
        feature_width: int = DYGLIB_FEATURE_WIDTH,
        sequences: bool = True,
        neighbors: str = "dygformer",
        num_neighbors: int = 20,
    ):
        super().__init__()
        if path is None and name not in DATASETS:
            raise ConfigError(f"data name={name!r}; valid: {', '.join(DATASETS)} (or give path= a CSV)")
        strategies = list(eval_strategies) if eval_strategies is not None else list(STRATEGIES)
        bad = [s for s in strategies if s not in STRATEGIES]
        if bad or not strategies:
            raise ConfigError(f"eval_strategies={strategies!r}; valid: {', '.join(STRATEGIES)}")
        if max_sequence_length % patch_size or max_sequence_length < 2:
            raise ConfigError(f"max_sequence_length={max_sequence_length} must be >= 2 and a multiple of patch_size")
        if neighbors not in LAYOUTS:
            raise ConfigError(f"neighbors={neighbors!r}; valid: {', '.join(LAYOUTS)}")
        if train_stride < 1:
            raise ConfigError(f"train_stride={train_stride} must be >= 1")
        self.save_hyperparameters()
        self.name, self.path, self.data_dir = name, path, data_dir
        self.batch_size, self.eval_batch_size = batch_size, eval_batch_size
        self.max_length, self.patch_size = max_sequence_length, patch_size
        self.strategies = strategies
        self.train_stride = train_stride
        self.feature_width = feature_width
        self.sequences = sequences  # False: ids only (EdgeBank needs no neighbour sequences)
        self.layout, self.num_neighbors = neighbors, num_neighbors
        self.graph: TemporalGraph | None = None

    # -- data ------------------------------------------------------------------------------------------------
    def _file(self) -> Path:
        if self.path is not None:
            return Path(self.path).expanduser()
        return resolve("CollegeMsg", path=self.data_dir, files=[COLLEGEMSG_FILE]) / COLLEGEMSG_FILE

    def load(self) -> TemporalGraph:
        if self.graph is None:
            f = self._file()
            self.graph = read_user_edges(f, feature_width=self.feature_width) if self.path else read_collegemsg(f)
        return self.graph

    def data_sha256(self) -> dict[str, str]:
        """File name -> sha256 of each file read (DyGLib's ``.npy`` features too)."""
        f = self._file()
        read = [f, *feature_files(f).values()] if self.path and dyglib_index_column(f) is not None else [f]
        return {g.name: sha256_of(g) for g in read}

    def model_shapes(self) -> dict[str, int]:
        return {"node_dim": self.feature_width, "edge_dim": self.feature_width}

    def setup(self, stage: str | None = None) -> None:
        if getattr(self, "split", None) is not None:
            return
        graph = self.load()
        self.split = link_prediction_split(graph, self.hparams.val_ratio, self.hparams.test_ratio)
        n = int(graph.node_features.shape[0] - 1)
        self.train_finder = NeighborFinder(self.split.train, n)
        self.full_finder = NeighborFinder(self.split.full, n)
        self.node_features = torch.from_numpy(graph.node_features)
        self.edge_features = torch.from_numpy(graph.edge_features)
        self.train_dst = np.unique(self.split.train.dst)
        self.eval_negatives: dict[tuple[str, str], tuple[np.ndarray, np.ndarray]] = {}

    def _check_split_sizes(self, parts: tuple[str, ...]) -> None:
        """Refuse, in one line, a graph whose chronological split leaves one of ``parts`` (those a loader is about
        to serve) without events: a small graph, or one whose nodes all appear in the training period (no
        inductive, new-node events to evaluate on)."""
        empty = [part for part in parts if len(getattr(self.split, part)) == 0]
        if empty:
            sizes = ", ".join(f"{k} {v}" for k, v in self.split.sizes().items())
            raise ConfigError(
                f"{self._file()}: DyGLib's chronological split (val_ratio {self.hparams.val_ratio}, test_ratio "
                f"{self.hparams.test_ratio}) leaves no {' / '.join(empty)} events ({sizes}); the inductive parts need "
                "nodes first seen after the training period: use a larger graph"
            )

    def negatives(self, part: str, strategy: str) -> tuple[np.ndarray, np.ndarray]:
        key = (part, strategy)
        if key not in self.eval_negatives:
            data = getattr(self.split, part)
            self.eval_negatives[key] = evaluation_negatives(
                data, eval_sampler(self.split, part, strategy), self.eval_batch_size
            )
        return self.eval_negatives[key]

    def summary(self) -> dict:
        """Counts for the run record: the split sizes and what reading the file cleaned."""
        graph = self.load()
        return {"nodes": graph.num_nodes, "interactions": graph.num_interactions, "cleaning": graph.cleaning,
                "split": self.split.sizes()}  # fmt: skip

    # -- batches ---------------------------------------------------------------------------------------------
    def _side(self, seq: Sequences) -> dict[str, torch.Tensor]:
        ids = torch.from_numpy(seq.ids)
        return {
            "ids": ids,
            "node_feat": self.node_features[ids],
            "edge_feat": self.edge_features[torch.from_numpy(seq.edge_ids)],
            "dt": torch.from_numpy(seq.dt),
            "pad": ids == 0,
            "counts": torch.from_numpy(seq.counts),
        }

    def _recent(self, finder: NeighborFinder, nodes, ts) -> dict[str, torch.Tensor]:
        seq = recent_neighbors(finder, nodes, ts, self.num_neighbors)
        return {
            "edge_feat": self.edge_features[torch.from_numpy(seq.edge_ids)],
            "dt": torch.from_numpy(seq.dt),
            "pad": torch.from_numpy(seq.ids == 0),
            "node_self": self.node_features[torch.from_numpy(np.ascontiguousarray(nodes))],
        }

    def _pair(self, finder: NeighborFinder, src, dst, ts) -> dict:
        if self.layout == "recent":
            return {"layout": "recent", "src": self._recent(finder, src, ts), "dst": self._recent(finder, dst, ts)}
        a, b = pair_sequences(finder, src, dst, ts, self.max_length, self.patch_size)
        return {"layout": "dygformer", "src": self._side(a), "dst": self._side(b)}

    def _collate(self, data: Interactions, finder: NeighborFinder, negatives, rng):
        def collate(items: list[slice]) -> dict:
            sl = items[0]
            src, dst, ts = data.src[sl], data.dst[sl], data.ts[sl]
            if negatives is None:
                neg_src, neg_dst = src, self.train_dst[rng.randint(0, len(self.train_dst), len(src))]
            else:
                neg_src, neg_dst = negatives[0][sl], negatives[1][sl]
            ids = {"src": src, "dst": dst, "neg_src": neg_src, "neg_dst": neg_dst, "edge_ids": data.edge_ids[sl],
                   "ts": ts}  # fmt: skip
            batch = {"ids": {k: torch.from_numpy(np.ascontiguousarray(v)) for k, v in ids.items()}}
            if self.sequences:
                batch["pos"] = self._pair(finder, src, dst, ts)
                batch["neg"] = self._pair(finder, neg_src, neg_dst, ts)
            return batch

        return collate

    def _loader(self, data: Interactions, batch_size: int, finder: NeighborFinder, negatives=None, rng=None):
        return DataLoader(_Batches(len(data), batch_size), batch_size=1, shuffle=False,
                          collate_fn=self._collate(data, finder, negatives, rng))  # fmt: skip

    def train_dataloader(self):
        self._check_split_sizes(("train",))
        data = self.split.train
        if self.train_stride > 1:
            batch = np.arange(len(data)) // self.batch_size
            keep = batch % self.train_stride == 0
            data = Interactions(data.src[keep], data.dst[keep], data.ts[keep], data.edge_ids[keep])
        rng = np.random.RandomState(torch.initial_seed() % 2**32)
        return self._loader(data, self.batch_size, self.train_finder, None, rng)

    def val_dataloader(self):
        self._check_split_sizes(("val", "new_node_val"))
        loaders = []
        for part in ("val", "new_node_val"):
            negatives = self.negatives(part, "random")
            loaders.append(self._loader(getattr(self.split, part), self.eval_batch_size, self.full_finder, negatives))
        return loaders

    def test_names(self) -> list[str]:
        """Metric prefix of each test loader, in loader order."""
        return [metric_prefix(s, p) for s in self.strategies for p in EVAL_SETS]

    def test_dataloader(self):
        self._check_split_sizes(EVAL_SETS)
        return [
            self._loader(getattr(self.split, p), self.eval_batch_size, self.full_finder, self.negatives(p, s))
            for s in self.strategies
            for p in EVAL_SETS
        ]
