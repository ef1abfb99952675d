"""Soft-MoE slots: every slot takes a softmax-weighted average of a sequence's tokens, every token a softmax-weighted
average of the slots' outputs (Puigcerver, Riquelme, Mustafa & Houlsby, "From Sparse to Soft Mixtures of Experts",
ICLR 2024, arXiv 2308.00951, Sec. 2.1, Eqs. 1-3).

For one sequence (bag, image) of N tokens ``x_n``, E experts with S slots each, and token-slot logits
``l[n, e, s]`` (the paper's ``X Phi``):

- dispatch ``D[n, e, s] = softmax_n l[n, e, s]`` (over the sequence's real tokens; Eq. 1), slot inputs
  ``x~[e, s] = sum_n D[n, e, s] x_n``;
- slot outputs ``y~[e, s] = f_e(x~[e, s])`` (expert e on each of its slots; Eq. 2);
- combine ``C[n, e, s] = softmax_{(e, s)} l[n, e, s]`` (over all slots; Eq. 3),
  ``y_n = sum_{e, s} C[n, e, s] y~[e, s]``.

Multi-head variants (MAMMOTH, ICLR 2026) run H such mixtures side by side on H slices of each token: every tensor
below carries a head axis H (H = 1 for the paper's layer). Nothing is dropped and no token is ever routed away,
so no load-balancing loss is needed (Sec. 2.2); the returned :class:`~zoo.moe.routing.Routing` is for statistics.

Shapes: B sequences, N tokens (padded), H heads, E experts, S slots per expert, d token width, o output width.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import torch
from torch import Tensor

from zoo.moe.routing import Routing


class SoftMoEOutput(NamedTuple):
    """What :func:`soft_moe` returns.

    output:   (B, N, H, o) (or (B, N, o) for 3-d input); 0 on padding tokens.
    routing:  a :class:`Routing` over the B*N tokens (see :func:`slot_routing`).
    dispatch: (B, N, H, E, S) dispatch weights, each (b, h, e, s) column sums to 1 over the real tokens; 0 on padding.
    combine:  (B, N, H, E, S) combine weights, each real (b, n, h) row sums to 1 over (e, s); 0 on padding.
    """

    output: Tensor
    routing: Routing
    dispatch: Tensor
    combine: Tensor


def slot_weights(logits: Tensor, valid: Tensor | None = None) -> tuple[Tensor, Tensor]:
    """Token-slot logits (B, N, H, E, S) [+ valid (B, N) bool] -> (dispatch, combine), both (B, N, H, E, S).

    Dispatch is a softmax over the tokens of each sequence with padding masked out (a sequence without any real
    token gets all-zero dispatch, not NaN); combine is a softmax over the E*S slots of each token, zeroed on padding.
    """
    b, n, h, e, s = logits.shape
    combine = torch.softmax(logits.reshape(b, n, h, e * s), dim=-1).view(b, n, h, e, s)
    if valid is None:
        return torch.softmax(logits, dim=1), combine
    pad = ~valid.bool()[:, :, None, None, None]
    dispatch = torch.softmax(logits.masked_fill(pad, float("-inf")), dim=1).masked_fill(pad, 0.0)
    return dispatch, combine * valid[:, :, None, None, None]


def slot_routing(logits: Tensor, combine: Tensor, valid: Tensor | None = None) -> Routing:
    """The :class:`Routing` of a Soft-MoE layer over its T = B*N tokens and E experts (all tokens use all experts).

    - ``weights`` = ``probs`` (T, E): the combine mass token t puts on expert e, ``sum_s C[t, h, e, s]`` averaged
      over heads; each real token's row sums to 1 (padding rows are 0), so load / entropy statistics read
      "how much of each token's output comes from expert e";
    - ``indices`` (T, E) = ``arange(E)`` for every token (dense: nothing is dropped);
    - ``logits`` (T, E): ``log probs`` (detached, clamped at 1e-30 so padding rows stay finite), so that
      ``softmax(logits) == probs`` for every real token (for H = 1 this is ``logsumexp_s l`` up to a per-token
      constant). It is cheaper than a logsumexp over the slots and carries no extra information;
    - ``valid`` (T,): False for padding tokens (None when every token is real).

    Dispatch mass is not summarised: every slot's dispatch sums to 1 by construction, so it carries no load.
    """
    b, n, h, e, _ = logits.shape
    probs = combine.sum(-1).mean(2).reshape(b * n, e)
    expert_logits = probs.detach().clamp_min(1e-30).log()
    indices = torch.arange(e, device=logits.device).expand(b * n, e)
    token_valid = None if valid is None else valid.reshape(b * n).bool()
    return Routing(indices=indices, weights=probs, logits=expert_logits, valid=token_valid, probs=probs)


def soft_moe(
    x: Tensor,
    logits: Tensor,
    experts: Callable[[Tensor], Tensor],
    valid: Tensor | None = None,
) -> SoftMoEOutput:
    """One Soft-MoE layer: dispatch ``x`` to slots, run ``experts`` on the slots, combine back to tokens.

    Args:
        x: tokens (B, N, H, d), or (B, N, d) for a single head.
        logits: token-slot logits (B, N, H, E, S), or (B, N, E, S) for a single head (how they are made is the
            caller's choice: the paper's ``x Phi``, MAMMOTH's normalised per-head queries against slot embeddings).
        experts: slot inputs (E, H, B, S, d) -> slot outputs (E, H, B, S, o); expert-major so a bank with a leading
            expert axis applies directly. It may mix heads of one slot (e.g. a norm over H*o).
        valid: (B, N) bool, True for real tokens, or None.

    Returns :class:`SoftMoEOutput` (``y, routing, dispatch, combine = soft_moe(...)``).
    """
    single = x.dim() == 3
    if single:
        x, logits = x[:, :, None], logits[:, :, None]
    if x.dim() != 4 or logits.dim() != 5 or logits.shape[:3] != x.shape[:3]:
        raise ValueError(
            f"soft_moe: x (B, N, H, d) and logits (B, N, H, E, S) must share (B, N, H); got {tuple(x.shape)} "
            f"and {tuple(logits.shape)}"
        )
    dispatch, combine = slot_weights(logits, valid)
    slots = torch.einsum("bnhd,bnhes->ehbsd", x, dispatch)
    out = experts(slots)
    y = torch.einsum("bnhes,ehbso->bnho", combine, out)
    routing = slot_routing(logits, combine, valid)
    if single:
        y = y[:, :, 0]
    return SoftMoEOutput(y, routing, dispatch, combine)
