"""The resumable training loader: a loader restored from a mid-epoch state serves the rest of that epoch and the
following epochs exactly as the uninterrupted loader does, and it never draws from the global RNG."""

import pytest
import torch

from zoo.data.resumable import EpochShuffleSampler, resumable_train_loader


@pytest.mark.parametrize("stop_after", [0, 3, 9])
def test_restored_loader_continues_the_uninterrupted_order(stop_after):
    data = list(range(100))
    loader = resumable_train_loader(data, batch_size=10, seed=7)
    it = iter(loader)
    for _ in range(stop_after):
        next(it)
    state = loader.state_dict()
    expected = list(it) + list(loader) + list(loader)  # the rest of epoch 0, then epochs 1 and 2

    restored = resumable_train_loader(data, batch_size=10, seed=7)
    restored.load_state_dict(state)
    got = list(restored) + list(restored) + list(restored)
    assert len(got) == len(expected) == (10 - stop_after) + 20
    assert all(torch.equal(a, b) for a, b in zip(expected, got))


def test_each_epoch_is_a_permutation_of_its_own():
    sampler = EpochShuffleSampler(50, seed=3)
    epochs = [list(sampler) for _ in range(3)]
    assert all(sorted(e) == list(range(50)) for e in epochs)
    assert epochs[0] != epochs[1] != epochs[2]
    assert list(EpochShuffleSampler(50, seed=3)) == epochs[0]  # a function of the seed and the epoch only
    assert list(EpochShuffleSampler(50, seed=4)) != epochs[0]


def test_the_global_rng_is_left_alone():
    torch.manual_seed(0)
    before = torch.get_rng_state()
    loader = resumable_train_loader(list(range(40)), batch_size=8)
    list(loader), list(loader)
    assert torch.equal(torch.get_rng_state(), before)


def test_an_iterable_dataset_is_refused():
    with pytest.raises(TypeError, match="map-style"):
        resumable_train_loader(iter(range(10)), batch_size=2)
