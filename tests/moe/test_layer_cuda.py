"""The MoE layer runs unchanged on a GPU: every router and expert type gives on CUDA the output, routing and
gradients it gives on CPU (same weights, same tokens). Skipped without CUDA; ``scripts/gpu_check.sh`` runs it."""

import copy

import pytest
import torch

from zoo.moe import ROUTERS, MoE

cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")

GROUPED = {"num_tasks": 2, "experts_per_task": 2, "num_shared_group": 2}


def _layer(router: str, experts: str) -> tuple[MoE, torch.Tensor, torch.Tensor | None]:
    torch.manual_seed(0)
    kw = {"router_kwargs": GROUPED, "condition_dim": 1} if router == "grouped" else {}
    rank = {"rank": 4} if experts == "lowrank" else {}
    layer = MoE(16, 32, 8, top_k=2, router=router, experts=experts, num_shared=1, **kw, **rank)
    x = torch.randn(3, 40, 16)
    cond = torch.randint(0, 2, (3, 40, 1)).float() if router == "grouped" else None
    return layer, x, cond


def run_on(layer: MoE, x: torch.Tensor, cond: torch.Tensor | None, device: str) -> dict[str, torch.Tensor]:
    """Output, routing and every gradient of one forward + backward on ``device`` (a copy of ``layer``), on CPU."""
    layer = copy.deepcopy(layer).to(device).eval()  # eval: noisy_topk's noise is training-only
    x = x.detach().to(device, copy=True).requires_grad_(True)  # a leaf of its own: never the caller's tensor
    y, routing = layer(x, condition=None if cond is None else cond.to(device))
    (y.square().mean() + layer.aux_loss(routing)).backward()
    out = {"output": y, "indices": routing.indices, "weights": routing.weights, "x.grad": x.grad}
    out.update({f"{n}.grad": p.grad for n, p in layer.named_parameters() if p.grad is not None})
    return {k: v.detach().to("cpu", copy=True) for k, v in out.items()}


def assert_same_run(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> None:
    assert a.keys() == b.keys()
    assert torch.equal(a["indices"], b["indices"]), "the two devices chose other experts"
    for key in a:
        torch.testing.assert_close(b[key], a[key], rtol=1e-4, atol=1e-5, msg=lambda m, key=key: f"{key}: {m}")


def test_the_comparison_sees_a_changed_weight():
    layer, x, cond = _layer("topk", "ffn")
    reference = run_on(layer, x, cond, "cpu")
    assert not x.requires_grad and x.grad is None and reference["x.grad"].abs().sum() > 0  # x left as it was
    assert_same_run(reference, run_on(layer, x, cond, "cpu"))  # a second run does not accumulate into the first
    with torch.no_grad():
        next(layer.experts.parameters()).add_(1e-2)
    with pytest.raises(AssertionError):
        assert_same_run(reference, run_on(layer, x, cond, "cpu"))


@cuda
@pytest.mark.parametrize("experts", ["ffn", "swiglu", "lowrank"])
@pytest.mark.parametrize("router", sorted(ROUTERS))
def test_layer_on_cuda_equals_cpu(router, experts):
    torch.backends.cuda.matmul.allow_tf32 = False  # fp32 on both sides
    layer, x, cond = _layer(router, experts)
    assert_same_run(run_on(layer, x, cond, "cpu"), run_on(layer, x, cond, "cuda"))
