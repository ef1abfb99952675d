"""Expert banks: E experts stored as stacked ``[E, d_in, d_out]`` parameters, or a ModuleList.

A stacked bank built with ``held=(first, count)`` holds only experts ``[first, first + count)`` of its E (its
``num_experts`` is count, ``first_expert`` first): see ``zoo.moe.local_init``.

Every bank has the same three entry points (N rows, T tokens, d in-dim, o out-dim):
    forward_sorted(x (N, d), counts: list[E ints]) -> (N, o)   rows sorted by expert, one matmul per segment
    forward_dense(x (T, d)) -> (T, E, o)                         every expert on every token (soft gating)
    forward_expert(e, x (n, d)) -> (n, o)                        one expert (references, heterogeneous use)
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from zoo.moe.errors import ConfigError
from zoo.moe.local_init import expert_tensor
from zoo.moe.segment_mm import segment_mm

Held = tuple[int, int] | None  # (first, count) of the E experts a bank builds; None: all E


class StackedExperts(nn.Module):
    """Base class for homogeneous experts with parameters stacked along a leading expert axis."""

    def __init__(self, num_experts: int, in_dim: int, out_dim: int, held: Held = None):
        super().__init__()
        self.first_expert, self.num_experts = held or (0, num_experts)
        self.in_dim, self.out_dim = in_dim, out_dim

    def forward_sorted(self, x: Tensor, counts: list[int]) -> Tensor:
        raise NotImplementedError

    def forward_dense(self, x: Tensor) -> Tensor:
        raise NotImplementedError

    def forward_expert(self, e: int, x: Tensor) -> Tensor:
        counts = [0] * self.num_experts
        counts[e] = x.shape[0]
        return self.forward_sorted(x, counts)


def _dense_linear(x: Tensor, w: Tensor, b: Tensor | None) -> Tensor:
    """(T, a) x (E, a, b) [+ (E, b)] -> (T, E, b)."""
    y = torch.einsum("ta,eab->teb", x, w)
    return y if b is None else y + b


class FFNExperts(StackedExperts):
    """GELU feed-forward experts (GShard, Lepikhin et al. 2020; Switch, Fedus et al. 2021).

    Expert e: ``y = GELU(x @ w1[e] + b1[e]) @ w2[e] + b2[e]``.
    Parameters: w1 (E, d, h), b1 (E, h), w2 (E, h, o), b2 (E, o).
    """

    def __init__(
        self, num_experts: int, dim: int, hidden: int, out_dim: int | None = None, bias: bool = True, held: Held = None
    ):
        out_dim = out_dim or dim
        super().__init__(num_experts, dim, out_dim, held)
        self.w1 = nn.Parameter(expert_tensor(num_experts, (dim, hidden), dim, held))
        self.w2 = nn.Parameter(expert_tensor(num_experts, (hidden, out_dim), hidden, held))
        self.b1 = nn.Parameter(expert_tensor(num_experts, (hidden,), dim, held)) if bias else None
        self.b2 = nn.Parameter(expert_tensor(num_experts, (out_dim,), hidden, held)) if bias else None

    def forward_sorted(self, x: Tensor, counts: list[int]) -> Tensor:
        h = F.gelu(segment_mm(x, self.w1, counts, self.b1))
        return segment_mm(h, self.w2, counts, self.b2)

    def forward_dense(self, x: Tensor) -> Tensor:
        h = F.gelu(_dense_linear(x, self.w1, self.b1))
        return torch.einsum("teh,eho->teo", h, self.w2) + (0 if self.b2 is None else self.b2)

    def activation_norms(self, x: Tensor) -> Tensor:
        """(T, d) -> (T, E) l2 norm of each expert's hidden activation (for the ERC loss)."""
        return F.gelu(_dense_linear(x, self.w1, self.b1)).norm(dim=-1)


class SwiGLUExperts(StackedExperts):
    """SwiGLU experts (Shazeer 2020, "GLU Variants Improve Transformer"; used by Mixtral / DeepSeek MoE).

    Expert e: ``y = (SiLU(x @ wg[e]) * (x @ wu[e])) @ w2[e]``; gate and up projections are stored
    concatenated as w1 (E, d, 2h) = [wg | wu] so one segment matmul computes both. w2 (E, h, o). No biases.
    """

    def __init__(self, num_experts: int, dim: int, hidden: int, out_dim: int | None = None, held: Held = None):
        out_dim = out_dim or dim
        super().__init__(num_experts, dim, out_dim, held)
        self.hidden = hidden
        self.w1 = nn.Parameter(expert_tensor(num_experts, (dim, 2 * hidden), dim, held))
        self.w2 = nn.Parameter(expert_tensor(num_experts, (hidden, out_dim), hidden, held))

    def _glu(self, h: Tensor) -> Tensor:
        gate, up = h.split(self.hidden, dim=-1)
        return F.silu(gate) * up

    def forward_sorted(self, x: Tensor, counts: list[int]) -> Tensor:
        return segment_mm(self._glu(segment_mm(x, self.w1, counts)), self.w2, counts)

    def forward_dense(self, x: Tensor) -> Tensor:
        return torch.einsum("teh,eho->teo", self._glu(_dense_linear(x, self.w1, None)), self.w2)

    def activation_norms(self, x: Tensor) -> Tensor:
        """(T, d) -> (T, E) l2 norm of each expert's gated hidden activation (for the ERC loss)."""
        return self._glu(_dense_linear(x, self.w1, None)).norm(dim=-1)


class LowRankExperts(StackedExperts):
    """Low-rank factorised linear experts (MAMMOTH-style: many cheap experts, each ``W_e = U_e V_e``).

    Expert e: ``y = (x @ u[e]) @ v[e] + b[e]``. Parameters: u (E, d, r), v (E, r, o), b (E, o).
    """

    def __init__(
        self, num_experts: int, dim: int, rank: int, out_dim: int | None = None, bias: bool = True, held: Held = None
    ):
        out_dim = out_dim or dim
        super().__init__(num_experts, dim, out_dim, held)
        self.u = nn.Parameter(expert_tensor(num_experts, (dim, rank), dim, held))
        self.v = nn.Parameter(expert_tensor(num_experts, (rank, out_dim), rank, held))
        self.b = nn.Parameter(expert_tensor(num_experts, (out_dim,), None, held)) if bias else None

    def forward_sorted(self, x: Tensor, counts: list[int]) -> Tensor:
        return segment_mm(segment_mm(x, self.u, counts), self.v, counts, self.b)

    def forward_dense(self, x: Tensor) -> Tensor:
        return torch.einsum("ter,ero->teo", _dense_linear(x, self.u, None), self.v) + (0 if self.b is None else self.b)


class LinearExperts(StackedExperts):
    """Single linear map per expert (the original mixture of linear experts, Jacobs et al. 1991).

    Expert e: ``y = x @ weight[e] + bias[e]``. Parameters: weight (E, d, o), bias (E, o).
    """

    def __init__(self, num_experts: int, dim: int, out_dim: int | None = None, bias: bool = True, held: Held = None):
        out_dim = out_dim or dim
        super().__init__(num_experts, dim, out_dim, held)
        self.weight = nn.Parameter(expert_tensor(num_experts, (dim, out_dim), dim, held))
        self.bias = nn.Parameter(expert_tensor(num_experts, (out_dim,), dim, held)) if bias else None

    def forward_sorted(self, x: Tensor, counts: list[int]) -> Tensor:
        return segment_mm(x, self.weight, counts, self.bias)

    def forward_dense(self, x: Tensor) -> Tensor:
        return _dense_linear(x, self.weight, self.bias)


class ModuleListExperts(nn.Module):
    """Heterogeneous experts: any modules mapping (n, d) -> (n, o), looped over expert segments.

    ``experts`` is kept as the child ModuleList ``experts`` so a state dict reads ``experts.experts.<e>.*``.
    """

    def __init__(self, experts: nn.ModuleList | list[nn.Module]):
        super().__init__()
        self.experts = experts if isinstance(experts, nn.ModuleList) else nn.ModuleList(experts)
        self.num_experts = len(self.experts)

    def forward_sorted(self, x: Tensor, counts: list[int]) -> Tensor:
        outs = [self.experts[e](seg) for e, seg in enumerate(x.split(counts)) if seg.shape[0]]
        return torch.cat(outs) if outs else x.new_zeros(0, x.shape[-1])

    def forward_dense(self, x: Tensor) -> Tensor:
        return torch.stack([m(x) for m in self.experts], dim=1)

    def forward_expert(self, e: int, x: Tensor) -> Tensor:
        return self.experts[e](x)


EXPERTS: dict[str, type[nn.Module]] = {
    "ffn": FFNExperts,
    "swiglu": SwiGLUExperts,
    "lowrank": LowRankExperts,
    "linear": LinearExperts,
}


def make_experts(
    name: str,
    num_experts: int,
    dim: int,
    hidden: int,
    out_dim: int | None = None,
    rank: int | None = None,
    held: Held = None,
) -> nn.Module:
    """Build a stacked expert bank by name: "ffn" (GELU), "swiglu", "lowrank" (rank r), "linear"; ``held``: only
    experts (first, count) of the E (``zoo.moe.local_init``)."""
    if name not in EXPERTS:
        raise ConfigError(f"unknown experts {name!r}; valid: {', '.join(sorted(EXPERTS))}")
    if name == "ffn":
        return FFNExperts(num_experts, dim, hidden, out_dim, held=held)
    if name == "swiglu":
        return SwiGLUExperts(num_experts, dim, hidden, out_dim, held=held)
    if name == "lowrank":
        return LowRankExperts(num_experts, dim, rank or max(1, min(dim, out_dim or dim) // 8), out_dim, held=held)
    return LinearExperts(num_experts, dim, out_dim, held=held)
