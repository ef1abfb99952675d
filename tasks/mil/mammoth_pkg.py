"""The published MAMMOTH module (PyPI ``mammoth-moe`` 0.1.2, ``mammoth.Mammoth``) behind our layer's interface.

Used only to check our implementation side by side with the authors' code; ``mammoth-moe`` is a test /
benchmark dependency (``pip install moe-zoo[test]``).
"""

from __future__ import annotations

import contextlib
import io

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from zoo.errors import ConfigError


class PackageMammoth(nn.Module):
    """``mammoth.Mammoth(input_dim, dim, keep_slots=False, auto_rank=True)`` adapted to (B, N, D) + mask input.

    The package has no padding mask, so each bag of a padded batch goes through it on its own real instances
    (one call per bag). It asserts ``input_dim % num_heads == 0``; inputs are zero-padded up to the next
    multiple of ``num_heads`` (the extra query-projection columns see only zeros). Its rank comes from its own
    closed form, which ignores biases, norms and slot embeddings.

    Shapes: ``x`` (B, N, in_dim), ``mask`` (B, N) bool or None -> (output (B, N, out_dim) with padding rows 0,
    dispatch: a list of B detached per-bag (n_i, E, H, S) dispatch weights). The package returns no combine
    weights, so there is no :class:`~zoo.moe.routing.Routing` to report.
    """

    def __init__(
        self,
        in_dim: int,
        out_dim: int,
        num_experts: int = 8,
        num_slots: int = 4,
        num_heads: int = 4,
        slot_dim: int = 64,
        dropout: float = 0.1,
    ) -> None:
        super().__init__()
        try:
            from mammoth import Mammoth as _Mammoth
        except ImportError as exc:
            raise ConfigError("projection 'mammoth_pkg' needs the PyPI package mammoth-moe==0.1.2") from exc
        self.in_dim, self.out_dim = in_dim, out_dim
        self.pad = -in_dim % num_heads
        with contextlib.redirect_stdout(io.StringIO()):  # the package prints its auto-computed rank
            self.module = _Mammoth(
                in_dim + self.pad,
                out_dim,
                num_experts=num_experts,
                num_slots=num_slots,
                num_heads=num_heads,
                dropout=dropout,
                slot_dim=slot_dim,
                auto_rank=True,
                keep_slots=False,
                share_lora_weights=True,
                use_layernorm=True,
            )
        self.rank = self.module.lora_rank

    def forward(self, x: Tensor, mask: Tensor | None = None) -> tuple[Tensor, list[Tensor]]:
        if self.pad:
            x = F.pad(x, (0, self.pad))
        if mask is None:
            mask = torch.ones(x.shape[:2], dtype=torch.bool, device=x.device)
        out = x.new_zeros(x.shape[0], x.shape[1], self.out_dim)
        dispatch = []
        for i in range(x.shape[0]):
            y, weights = self.module(x[i, mask[i]][None], return_weights=True)
            out[i, mask[i]] = y[0]
            dispatch.append(weights[0].detach())
        return out, dispatch
