"""The C++ segment-matmul kernel equals the Python loop it replaces, values and gradients, on 1 and 2 threads.

One thread must be bit-identical (the same GEMM calls in the same order: recorded single-threaded runs keep their
numbers); two threads cut segments at the row bounds of each worker, so the cut weight gradients are summed from
partials and agree to float rounding.
"""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest
import torch
from zoo_testing import hang_guard

from zoo.moe import segment_kernel
from zoo.moe.segment_mm import segment_mm

pytestmark = pytest.mark.skipif(shutil.which("c++") is None, reason="no C++ compiler: the kernel cannot be built")

CASES = {
    "balanced": [5, 7, 6, 6],
    "empty experts": [0, 9, 0, 0, 4, 0],
    "one expert takes all": [0, 0, 23, 0],
    "single row": [0, 1, 0],
    "many small": [1, 2, 0, 3, 1, 1, 0, 2, 5, 1],
}


def _run(counts, bias, dtype, use_kernel, monkeypatch):
    monkeypatch.setenv("ZOO_MOE_KERNEL", "auto" if use_kernel else "off")
    torch.manual_seed(0)
    n, a, b = sum(counts), 6, 5
    x = torch.randn(n, a, dtype=dtype, requires_grad=True)
    w = torch.randn(len(counts), a, b, dtype=dtype, requires_grad=True)
    bb = torch.randn(len(counts), b, dtype=dtype, requires_grad=True) if bias else None
    y = segment_mm(x, w, counts, bb)
    y.backward(torch.randn_like(y))
    return [y.detach(), x.grad, w.grad] + ([bb.grad] if bias else [])


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("case", list(CASES))
def test_kernel_equals_python_loop(case, bias, threads, monkeypatch):
    assert segment_kernel.kernel() is not None, "a compiler is present, so the kernel must build"
    old = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        fast = _run(CASES[case], bias, torch.float32, True, monkeypatch)
        slow = _run(CASES[case], bias, torch.float32, False, monkeypatch)
    finally:
        torch.set_num_threads(old)
    for f, s in zip(fast, slow, strict=True):
        if threads == 1:
            assert torch.equal(f, s)
        else:
            torch.testing.assert_close(f, s, rtol=1e-5, atol=1e-5)
    empty = [e for e, c in enumerate(CASES[case]) if c == 0]
    assert torch.equal(fast[2][empty], torch.zeros_like(fast[2][empty]))  # exact zeros, not stale memory


def test_kernel_gradcheck_two_threads(monkeypatch):
    monkeypatch.setenv("ZOO_MOE_KERNEL", "auto")
    old = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        x = torch.randn(9, 3, dtype=torch.double, requires_grad=True)
        w = torch.randn(4, 3, 2, dtype=torch.double, requires_grad=True)
        b = torch.randn(4, 2, dtype=torch.double, requires_grad=True)
        counts = [2, 0, 6, 1]  # the 6-row segment is cut between the two workers
        assert torch.autograd.gradcheck(lambda x, w, b: segment_mm(x, w, counts, b), (x, w, b))
    finally:
        torch.set_num_threads(old)


@pytest.mark.parametrize("mode", ["inference_mode", "no_grad"])
def test_kernel_runs_under_inference_mode_on_two_threads(mode, monkeypatch):
    """The worker threads get the caller's thread-local state (inference tensors may only be written inside it)."""
    old = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        x, w, b = torch.randn(40, 6), torch.randn(3, 6, 5), torch.randn(3, 5)
        with getattr(torch, mode)():
            monkeypatch.setenv("ZOO_MOE_KERNEL", "auto")
            fast = segment_mm(x, w, [13, 0, 27], b)
            monkeypatch.setenv("ZOO_MOE_KERNEL", "off")
            slow = segment_mm(x, w, [13, 0, 27], b)
    finally:
        torch.set_num_threads(old)
    torch.testing.assert_close(fast, slow, rtol=1e-5, atol=1e-5)


def test_kernel_leaves_thread_settings_alone():
    """The layer must not change global thread settings: same torch threads before and after a step."""
    code = (
        "import torch; from zoo.moe import MoE; torch.set_num_threads(2); m = MoE(8, 16, 4, top_k=2); "
        "y, _ = m(torch.randn(32, 8)); y.sum().backward(); "
        "assert torch.get_num_threads() == 2, torch.get_num_threads(); "
        "from zoo.moe import segment_kernel; assert segment_kernel.kernel() is not None; print('ok')"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=hang_guard(300))
    assert out.returncode == 0 and out.stdout.strip().endswith("ok"), out.stderr[-2000:]


def test_off_switch_runs_the_python_loop(monkeypatch):
    monkeypatch.setenv("ZOO_MOE_KERNEL", "off")
    assert segment_kernel.kernel() is None


def test_without_a_compiler_the_loop_runs_after_one_warning(monkeypatch):
    monkeypatch.setenv("CXX", "no-such-compiler")
    monkeypatch.setattr(segment_kernel, "_state", {})
    with pytest.warns(UserWarning, match="no C\\+\\+ compiler"):
        assert segment_kernel.kernel() is None
    x, w = torch.randn(5, 3), torch.randn(2, 3, 4)
    torch.testing.assert_close(segment_mm(x, w, [2, 3]), torch.cat([x[:2] @ w[0], x[2:] @ w[1]]))


def test_output_cache_reuses_freed_blocks_and_empties(monkeypatch):
    """A freed large output goes back to the cache and the next request of that size gets the same block."""
    monkeypatch.setenv("ZOO_MOE_KERNEL", "auto")
    ext = segment_kernel.kernel()
    segment_kernel.empty_cache()
    like = torch.empty(1)
    a = ext.pooled_empty([4, 512, 1024], like)  # 8 MiB: from the cache's own mappings
    ptr = a.data_ptr()
    assert segment_kernel.pool_stats()["live"] >= a.numel() * 4
    del a
    assert segment_kernel.pool_stats()["cached"] >= 8 << 20
    b = ext.pooled_empty([4, 1024, 512], like)
    assert b.data_ptr() == ptr, "the same size must reuse the freed block"
    assert ext.pooled_empty([3, 5], like).numel() == 15  # small requests go to torch's allocator
    del b
    assert segment_kernel.empty_cache() >= 8 << 20
    assert segment_kernel.pool_stats()["cached"] == 0


def test_output_cache_never_exceeds_twice_its_high_water_mark(monkeypatch):
    monkeypatch.setenv("ZOO_MOE_KERNEL", "auto")
    ext = segment_kernel.kernel()
    segment_kernel.empty_cache()
    like = torch.empty(1)
    blocks = [ext.pooled_empty([2 << 20], like) for _ in range(2)]  # 2 x 8 MiB live at once: high = 16 MiB
    del blocks
    for mib in (10, 12, 14):  # one at a time, each a new size: cached would reach 16 + 10 + 12 + 14 MiB
        t = ext.pooled_empty([mib << 18], like)
        del t
    stats = segment_kernel.pool_stats()
    assert 0 < stats["cached"] <= 2 * stats["high"], stats
    segment_kernel.empty_cache()


@pytest.mark.parametrize("threads", [1, 2])
def test_reused_blocks_are_fully_overwritten(threads, monkeypatch):
    """Cached blocks hold stale data: every weight-gradient element (zero-row experts and cut segments included)
    must be written, so a step on NaN-filled recycled memory equals one on fresh memory."""
    monkeypatch.setenv("ZOO_MOE_KERNEL", "auto")
    ext = segment_kernel.kernel()
    old = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        counts = [0, 300, 0, 212, 0, 0, 512]  # zero-row experts, cut segments, outputs of 1 MiB and more
        torch.manual_seed(0)
        x = torch.randn(sum(counts), 512, requires_grad=True)
        w = torch.randn(len(counts), 512, 512, requires_grad=True)
        g = torch.randn(sum(counts), 512)

        def run():
            x.grad = w.grad = None
            y = segment_mm(x, w, counts)
            y.backward(g)
            return y.detach().clone(), x.grad.clone(), w.grad.clone()

        fresh = run()
        segment_kernel.empty_cache()
        poison = [ext.pooled_empty(list(t.shape), t) for t in fresh for _ in range(2)]
        for p in poison:
            p.fill_(float("nan"))
        del poison, p
        assert segment_kernel.pool_stats()["cached"] > 0
        for f, r in zip(fresh, run(), strict=True):
            assert torch.equal(f, r)
    finally:
        torch.set_num_threads(old)
        segment_kernel.empty_cache()


def test_cache_off_switch(monkeypatch):
    monkeypatch.setenv("ZOO_MOE_KERNEL", "auto")
    monkeypatch.setenv("ZOO_MOE_POOL", "off")
    segment_kernel.empty_cache()
    x, w = torch.randn(600, 512), torch.randn(2, 512, 512)
    y = segment_mm(x, w, [300, 300])
    assert y.shape == (600, 512)
    del y
    assert segment_kernel.pool_stats()["cached"] == 0
