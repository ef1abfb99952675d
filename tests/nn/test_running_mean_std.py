"""zoo.nn.running_mean_std: the streamed statistics equal numpy's over all data; they survive a state round trip."""

import numpy as np
import torch

from zoo.nn.running_mean_std import RunningMeanStd


def _data(rows: int = 300) -> np.ndarray:
    rng = np.random.default_rng(0)
    return rng.normal(size=(rows, 4)) * [1.0, 5.0, 0.1, 2.0] + [3.0, -1.0, 0.0, 10.0]


def test_batched_updates_match_numpy_mean_and_variance_of_all_rows():
    data = _data()
    rms = RunningMeanStd(4)
    for chunk in np.split(data, [1, 51, 150]):  # uneven batches, one of a single row
        rms.update(torch.as_tensor(chunk, dtype=torch.float32))
    # the 1e-4 prior count at mean 0 / var 1 weighs ~3e-7 against 300 rows
    np.testing.assert_allclose(rms.mean.numpy(), data.mean(0), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(rms.var.numpy(), data.var(0), rtol=1e-5, atol=1e-5)
    assert float(rms.count) == 300 + 1e-4
    z = rms(torch.as_tensor(data, dtype=torch.float32))
    assert z.dtype == torch.float32
    np.testing.assert_allclose(z.numpy(), (data - data.mean(0)) / data.std(0), rtol=1e-4, atol=1e-4)


def test_fresh_statistics_are_the_identity_and_a_batch_shape_is_kept():
    rms = RunningMeanStd(3)
    x = torch.randn(2, 5, 3)
    torch.testing.assert_close(rms(x), x)
    rms.update(x)  # (..., d): every row of every leading axis counts
    assert float(rms.count) == 10 + 1e-4 and rms(x).shape == (2, 5, 3)


def test_state_dict_round_trip_restores_the_statistics():
    rms = RunningMeanStd(4)
    rms.update(torch.as_tensor(_data(50), dtype=torch.float32))
    state = rms.state_dict()
    assert list(state) == ["mean", "var", "count"] and all(v.dtype == torch.float64 for v in state.values())
    restored = RunningMeanStd(4)
    restored.load_state_dict(state)
    x = torch.randn(7, 4)
    assert torch.equal(restored(x), rms(x))
    restored.update(x)
    rms.update(x)
    assert all(torch.equal(a, b) for a, b in zip(restored.state_dict().values(), rms.state_dict().values()))
