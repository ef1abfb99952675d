"""Multi-domain windows for pre-training a generator, with TimeDP's in-domain and few-shot evaluation sets.

Batches are ``(x, domain)``: x ``(B, L, 1)`` windows normalised with their own domain's normaliser and domain
``(B,)`` long ids (only the diagnostics use them: the model sees a domain through its prompt windows). The
training epoch is domain-balanced (TimeDP's ``reweight``): every domain contributes as many windows as the
largest one, smaller domains cycled through seeded permutations, shuffled by the resumable sampler. Validation
windows are a seeded random 10 % of the training windows (TimeDP's ``val_portion``); the held-out last 10 % of
each series is the in-domain test set. The test loader yields evaluation cases (one per domain, one per
unseen domain and k), which the model's ``test_step`` reads from this module (:meth:`case`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytorch_lightning as pl
import torch
from torch.utils.data import DataLoader, Dataset

from zoo.data.resumable import resumable_train_loader
from zoo.errors import ConfigError
from zoo_tasks.timeseries.generation.corpus import (
    AUTO_ID,
    DOMAINS,
    PRETRAIN_DOMAINS,
    UNSEEN_DOMAINS,
    DomainSource,
    domain_source,
    is_path,
    read_domain,
    user_source,
)
from zoo_tasks.timeseries.generation.fewshot import KS, FewShotSet, fewshot_set
from zoo_tasks.timeseries.generation.windows import HOLDOUT, NORMALIZATIONS, Normalizer, split_windows


@dataclass
class Domain:
    """One pre-training domain: normalised training windows (N, L), raw held-out windows (M, L), its normaliser."""

    name: str
    train: np.ndarray
    heldout: np.ndarray
    normalizer: Normalizer


@dataclass(frozen=True)
class Case:
    """An evaluation case: ``kind`` "indomain" (domain index) or "fewshot" (unseen domain name and k)."""

    kind: str
    name: str
    k: int = 0


class WindowsDataset(Dataset):
    """Items ``(x (L, 1) float32, domain id)`` at positions ``index`` (rows of (domain, window)) of ``domains``."""

    def __init__(self, windows: list[np.ndarray], index: np.ndarray):
        self.windows = [torch.from_numpy(np.ascontiguousarray(w, dtype=np.float32)) for w in windows]
        self.index = index

    def __len__(self) -> int:
        return len(self.index)

    def __getitem__(self, i: int):
        d, j = self.index[i]
        return self.windows[d][j].unsqueeze(-1), int(d)


def balanced_index(sizes: list[int], seed: int) -> np.ndarray:
    """(D * max(sizes), 2) rows (domain, window): each domain cycled through seeded permutations up to the largest."""
    rng = np.random.default_rng(seed)
    longest = max(sizes)
    rows = []
    for d, n in enumerate(sizes):
        reps = -(-longest // n)
        order = np.concatenate([rng.permutation(n) for _ in range(reps)])[:longest]
        rows.append(np.stack([np.full(longest, d), order], axis=1))
    return np.concatenate(rows)


class _Cases(Dataset):
    def __init__(self, n: int):
        self.n = n

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int) -> int:
        return i


class MultiDomainDataModule(pl.LightningDataModule):
    """TimeDP's multi-domain generation data (windows of length ``seq_len``, stride = length).

    Args:
        domains: built-in pre-training domains (``zoo_tasks.timeseries.generation.corpus.PRETRAIN_DOMAINS``).
        user_domains: your own domains, name -> a folder of CSVs or one CSV (docs/tasks/timemode.md), added to
            ``domains`` unless ``unseen`` names them; each CSV has a ``date_column`` and numeric value columns,
            one series each, or is long format (``id_column``). Names of built-in domains are refused.
        unseen: the few-shot domains, never in pre-training: built-in names (TimeDP's ``stock``, ``web``),
            ``user_domains`` names, or paths of a folder or CSV (named after the folder / file stem).
        id_column: the series-id column of long-format CSVs (one row per timestamp and series) in your domains;
            ``"auto"``: a file whose ``date_column`` repeats a timestamp is long format, grouped by its one text
            column; None: every file has one column per series.
        seq_len: window length L (TimeDP: 24, 96, 168, 336).
        normalize: per-domain normaliser, ``centered_pit`` (TimeDP), ``zscore`` or ``none``.
        ks: few-shot prompt counts. val_portion: share of training windows used for validation.
        data_dir: folder holding ``ts-corpus`` files (default: the catalog's search path / ``ZOO_DATA_MIRROR``).
        seed: the split and balancing seed (fixed so that every run sees the same windows).
    """

    def __init__(
        self,
        domains: list[str] | None = None,
        user_domains: dict[str, str] | None = None,
        unseen: list[str] | None = None,
        seq_len: int = 24,
        normalize: str = "centered_pit",
        ks: list[int] | None = None,
        val_portion: float = 0.1,
        batch_size: int = 256,
        num_workers: int = 0,
        data_dir: str | None = None,
        seed: int = 0,
        date_column: str = "date",
        id_column: str | None = AUTO_ID,
    ):
        super().__init__()
        domains = list(PRETRAIN_DOMAINS) if domains is None else list(domains)
        unseen = list(UNSEEN_DOMAINS) if unseen is None else list(unseen)
        user_domains = dict(user_domains or {})
        if normalize not in NORMALIZATIONS:
            raise ConfigError(f"data.init_args.normalize {normalize!r}; choose one of {', '.join(NORMALIZATIONS)}")
        for key, value in (("seq_len", seq_len), ("batch_size", batch_size)):
            if value <= 0:
                raise ConfigError(f"data.init_args.{key} must be > 0, got {value}")
        if not 0 < val_portion < 1:
            raise ConfigError(f"data.init_args.val_portion must be in (0, 1), got {val_portion}")
        for name in domains:
            domain_source(name)
        clash = sorted(set(user_domains) & set(DOMAINS))
        if clash:
            raise ConfigError(f"data.init_args.user_domains {clash} repeat built-in domain names: rename them")
        self._user_paths = dict(user_domains)  # name -> folder or CSV, for user domains and unseen paths
        unseen_names = [self._unseen_name(entry) for entry in unseen]
        twice = sorted({n for n in unseen_names if unseen_names.count(n) > 1})
        if twice:
            raise ConfigError(f"data.init_args.unseen names the domain(s) {twice} more than once")
        leaked = sorted(set(unseen_names) & set(domains))
        if leaked:
            raise ConfigError(f"data.init_args.unseen {leaked} are also pre-training domains: remove them from one")
        pretrain_users = [n for n in user_domains if n not in unseen_names]
        if not domains and not pretrain_users:
            raise ConfigError("data.init_args.domains is empty: give at least one pre-training domain")
        self.save_hyperparameters()
        self.domain_names = domains + pretrain_users
        self.unseen_names = unseen_names
        self.ks = tuple(ks) if ks is not None else KS
        self.domains: list[Domain] = []
        self.fewshot: dict[str, FewShotSet] = {}
        self.cases: list[Case] = []
        self._val: np.ndarray | None = None
        self._train_index: np.ndarray | None = None

    def model_shapes(self) -> dict[str, int]:
        return {"seq_len": self.hparams.seq_len}

    def _unseen_name(self, entry: str) -> str:
        """The domain an ``unseen`` entry names: a user domain, a built-in one, or a path (then named after its
        stem and added to the user paths).

        Raises:
            ConfigError: the entry is none of these, or a path whose stem repeats another domain's name.
        """
        if entry in self._user_paths or entry in DOMAINS:
            return entry
        if not is_path(entry):
            users = f", a data.init_args.user_domains name ({', '.join(self._user_paths)})" if self._user_paths else ""
            raise ConfigError(
                f"data.init_args.unseen: unknown domain {entry!r}; give a built-in domain ({', '.join(DOMAINS)})"
                f"{users} or the path of a folder of CSVs or of one CSV"
            )
        name = Path(entry).expanduser().stem
        if self._user_paths.get(name) == entry:  # the same path twice: refused below as a repeat
            return name
        if name in DOMAINS or name in self._user_paths:
            raise ConfigError(
                f"data.init_args.unseen: {entry} would be named {name!r}, which is already a domain: add it to "
                f"data.init_args.user_domains under another name and list that name in unseen"
            )
        self._user_paths[name] = entry
        return name

    def _source(self, name: str) -> tuple[DomainSource, str | Path | None]:
        path = self._user_paths.get(name)
        if path is not None:
            return user_source(name, path, time_column=self.hparams.date_column, id_column=self.hparams.id_column)
        source = domain_source(name)
        return source, (self.hparams.data_dir if source.dataset == "ts-corpus" else None)

    def setup(self, stage: str | None = None) -> None:
        if self.domains:
            return
        hp = self.hparams
        for name in self.domain_names:
            source, folder = self._source(name)
            train, heldout = split_windows(read_domain(source, folder), hp.seq_len, HOLDOUT)
            if len(train) < 2 or len(heldout) < 1:
                raise ConfigError(
                    f"domain {name!r} gives {len(train)} training and {len(heldout)} held-out windows of length "
                    f"{hp.seq_len}: it needs series of at least {2 * hp.seq_len} steps without gaps"
                )
            normalizer = Normalizer.fit(train, hp.normalize)
            self.domains.append(Domain(name, normalizer.transform(train), heldout, normalizer))
        for name in self.unseen_names:
            source, folder = self._source(name)
            self.fewshot[name] = fewshot_set(name, read_domain(source, folder), hp.seq_len, self.ks)
        rng = np.random.default_rng(hp.seed)
        val_rows, train_sizes, self._train_rows = [], [], []
        for d, domain in enumerate(self.domains):
            order = rng.permutation(len(domain.train))
            n_val = max(1, int(len(order) * hp.val_portion))
            val_rows.append(np.stack([np.full(n_val, d), order[:n_val]], axis=1))
            self._train_rows.append(order[n_val:])
            train_sizes.append(len(order) - n_val)
        self._val = np.concatenate(val_rows)
        index = balanced_index(train_sizes, hp.seed)
        index[:, 1] = np.concatenate([self._train_rows[d][index[index[:, 0] == d, 1]] for d in range(len(train_sizes))])
        self._train_index = index
        self.cases = [Case("indomain", d.name) for d in self.domains]
        self.cases += [Case("fewshot", name, k) for name in self.unseen_names for k in self.ks]

    def train_windows(self, d: int) -> np.ndarray:
        """Normalised training windows of domain ``d`` that are not validation windows (the prompt pool)."""
        return self.domains[d].train[self._train_rows[d]]

    def case(self, i: int) -> Case:
        self.setup()
        return self.cases[i]

    def _windows(self) -> list[np.ndarray]:
        return [d.train for d in self.domains]

    def train_dataloader(self) -> DataLoader:
        self.setup()
        common = dict(num_workers=self.hparams.num_workers, persistent_workers=self.hparams.num_workers > 0)
        return resumable_train_loader(
            WindowsDataset(self._windows(), self._train_index), batch_size=self.hparams.batch_size, **common
        )

    def val_dataloader(self) -> DataLoader:
        self.setup()
        data = WindowsDataset(self._windows(), self._val)
        return DataLoader(data, batch_size=self.hparams.batch_size, shuffle=False, drop_last=False)

    def test_dataloader(self) -> DataLoader:
        self.setup()
        return DataLoader(_Cases(len(self.cases)), batch_size=1, shuffle=False, collate_fn=lambda items: items[0])

    def summary(self) -> dict[str, dict[str, int]]:
        """Per domain: training / held-out window counts (and unseen: candidate prompt and test counts)."""
        self.setup()
        out = {d.name: {"train": len(d.train), "heldout": len(d.heldout)} for d in self.domains}
        for name, fs in self.fewshot.items():
            out[name] = {"test": len(fs.test), **{f"k{k}": len(p) for k, p in fs.prompts.items()}}
        return out
