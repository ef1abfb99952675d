"""Patching (tasks/timeseries/patching.py): PatchTST's end padding by stride, the patch count, the window check."""

from __future__ import annotations

import pytest
import torch

from zoo.errors import ConfigError
from zoo_tasks.timeseries.patching import FlattenHead, check_window, num_patches, patchify


def test_patching_pads_by_stride():
    x = torch.arange(96.0).unsqueeze(0)
    patches = patchify(x, 16, 8)
    assert patches.shape == (1, num_patches(96, 16, 8), 16) == (1, 12, 16)
    assert torch.equal(patches[0, 0], torch.arange(16.0))
    assert torch.equal(patches[0, -1], torch.tensor([88.0 + i for i in range(8)] + [95.0] * 8))


def test_patches_that_do_not_fit_and_wrong_windows_are_config_errors():
    with pytest.raises(ConfigError, match="patch_len 32 / stride 8 do not fit seq_len 16"):
        num_patches(16, 32, 8)
    with pytest.raises(ConfigError, match="built for \\(B, 96, 7\\)"):
        check_window(torch.zeros(2, 48, 7), 96, 7)


def test_flatten_head_is_one_linear_map_of_all_tokens():
    head = FlattenHead(3, 4, 5).eval()
    x = torch.randn(2, 3, 4)
    torch.testing.assert_close(head(x), x.reshape(2, 12) @ head.linear.weight.T + head.linear.bias)
