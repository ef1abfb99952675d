"""zoo_tasks.graphs.data: TU stratified folds (the same split as before the move to zoo.utils.folds), config errors."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.model_selection import StratifiedKFold

from zoo.errors import ConfigError, DatasetNotFoundError
from zoo_tasks.graphs.data import PlanetoidDataModule, TUDataModule, pyg_root


def test_tu_folds_partition_the_dataset_as_before(data_mirror):
    dm = TUDataModule("MUTAG", num_folds=5)
    dm.setup()
    tests = []
    for fold in range(5):
        dm.fold = fold
        train, val, test = dm.fold_indices()
        assert not set(train) & set(val) and not set(train) & set(test) and not set(val) & set(test)
        assert len(train) + len(val) + len(test) == len(dm.dataset)
        assert abs(dm.labels[test].mean() - dm.labels.mean()) < 0.1  # stratified
        # the split the records were made with: sklearn's shuffled StratifiedKFold with split_seed
        before = list(StratifiedKFold(5, shuffle=True, random_state=12345).split(np.zeros(len(dm.labels)), dm.labels))
        assert np.array_equal(np.sort(test), np.sort(before[fold][1]))
        tests.append(test)
    assert sorted(i for t in tests for i in t) == list(range(len(dm.dataset)))  # test folds partition the data
    batch = next(iter(dm.test_dataloader()))
    assert batch.x.shape[1] == dm.num_features and batch.edge_index_2hop.max() < batch.num_nodes


def test_datamodule_config_errors(tmp_path):
    with pytest.raises(ConfigError, match=r"fold=10 is not valid; choose from 0 .. num_folds-1 = 9"):
        TUDataModule("MUTAG", fold=10, num_folds=10)
    with pytest.raises(ConfigError, match=r"val_ratio=1.5"):
        TUDataModule("MUTAG", val_ratio=1.5)
    with pytest.raises(DatasetNotFoundError, match=r"name='CiteSeerX' is not in the zoo catalog; pass data_dir="):
        pyg_root("Planetoid", "CiteSeerX", None)
    with pytest.raises(DatasetNotFoundError, match=r"no raw files under data_dir="):
        pyg_root("Planetoid", "CiteSeerX", str(tmp_path))
    assert PlanetoidDataModule("CiteSeerX", data_dir=str(tmp_path)).data is None  # nothing read at init
