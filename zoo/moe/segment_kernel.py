"""A small C++ kernel for segment matmuls: one OpenMP region per call, one single-threaded GEMM per piece.

Why hand-written: no kept library offers a CPU grouped GEMM for PyTorch tensors. ``torch._grouped_mm`` and the
Python loop in ``zoo.moe.segment_mm`` both issue one multi-threaded GEMM per expert, i.e. one OpenMP parallel
region per expert per matmul (6E per FFN step). When another process shares the cores and OpenMP threads spin
(``OMP_WAIT_POLICY`` unset, what users have), each region waits for its partner thread to be scheduled: 2-7x
the dense floor at E=64-256 (``leaderboard/moe_layer.md``). Padding all experts to one batched ``bmm`` has one
region but wastes 25-75 % FLOPs on padding. This kernel splits the N sorted rows into one equal row range per
torch thread, cuts the expert segments at those bounds, and runs every piece as one sequential GEMM inside a
single ``at::parallel_for`` (MKL runs single-threaded inside a parallel region). The weight gradient of a
segment cut between two threads is summed from per-piece partials afterwards, in a fixed order.

With one torch thread there is one range: the kernel issues exactly the GEMMs of the Python loop (same calls,
same order), so single-threaded results are bit-identical to it. It uses ``at::get_num_threads()`` and never
changes a thread setting.

The (E, a, b) weight gradients (1 GiB per step at E=256) come from a cache of mappings that freed gradients return
to, because first-touching fresh memory inside the GEMMs cost as much as the GEMMs themselves at E=256 here
(``leaderboard/notes/moe_layer.md``). The cache keeps at most twice the most it had handed out at once;
``empty_cache()`` frees it, ``ZOO_MOE_POOL=off`` turns it off.

Built once per interpreter with ``torch.utils.cpp_extension`` (about a minute, announced in one line on stderr),
into torch's extension cache (``$TORCH_EXTENSIONS_DIR``, default ``~/.cache/torch_extensions``) under a name hashed
from the source and :func:`environment_key` (interpreter, Python, torch build, compiler flags): two virtual
environments on one machine keep one build each instead of silently rebuilding each other's. Where no C++ compiler
is available, or with ``ZOO_MOE_KERNEL=off``, the Python loop runs instead (one warning).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import subprocess
import sys
import threading
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import torch

SOURCE = r"""
#include <torch/extension.h>
#include <ATen/Parallel.h>
#include <ATen/ThreadLocalState.h>
#include <sys/mman.h>
#include <algorithm>
#include <cstdint>
#include <map>
#include <mutex>
#include <vector>

namespace {
struct Piece { int64_t e, s, t; bool cut; };

int64_t workers(int64_t rows) {
  if (at::in_parallel_region()) return 1;
  return std::max<int64_t>(1, std::min<int64_t>(at::get_num_threads(), rows));
}

// One list of pieces per worker: worker k owns rows [N k / n, N (k+1) / n); a segment crossing a bound is cut.
std::vector<std::vector<Piece>> plan(const std::vector<int64_t>& off, int64_t n) {
  const int64_t E = static_cast<int64_t>(off.size()) - 1, N = off[E];
  std::vector<std::vector<Piece>> pieces(n);
  int64_t first = 0;
  for (int64_t k = 0; k < n; ++k) {
    const int64_t lo = N * k / n, hi = N * (k + 1) / n;
    while (first < E && off[first + 1] <= lo) ++first;
    for (int64_t e = first; e < E && off[e] < hi; ++e) {
      const int64_t s = std::max(off[e], lo), t = std::min(off[e + 1], hi);
      if (t > s) pieces[k].push_back({e, s, t, s != off[e] || t != off[e + 1]});
    }
  }
  return pieces;
}
}  // namespace

// out[s:t] = x[s:t] @ w[e] (+ bias[e]); with trans_w, x[s:t] @ w[e]^T (the input gradient).
void segment_mm_out(torch::Tensor out, const torch::Tensor& x, const torch::Tensor& w,
                    const c10::optional<torch::Tensor>& bias, const std::vector<int64_t>& off, bool trans_w) {
  const auto pieces = plan(off, workers(off.back()));
  const at::ThreadLocalState caller;  // inference mode, dispatch keys: the worker threads start without them
  at::parallel_for(0, static_cast<int64_t>(pieces.size()), 1, [&](int64_t lo, int64_t hi) {
    at::ThreadLocalStateGuard state(caller);
    at::NoGradGuard no_grad;
    for (int64_t k = lo; k < hi; ++k) {
      for (const auto& p : pieces[k]) {
        auto we = trans_w ? w.select(0, p.e).t() : w.select(0, p.e);
        auto o = out.narrow(0, p.s, p.t - p.s);
        auto xs = x.narrow(0, p.s, p.t - p.s);
        if (bias.has_value()) at::addmm_out(o, bias->select(0, p.e), xs, we);
        else at::mm_out(o, xs, we);
      }
    }
  });
}

// gw[e] = x[s:t]^T @ g[s:t] for every segment; exact zeros for experts without rows.
void segment_wgrad_out(torch::Tensor gw, const torch::Tensor& x, const torch::Tensor& g,
                       const std::vector<int64_t>& off) {
  const auto pieces = plan(off, workers(off.back()));
  std::vector<std::vector<int64_t>> slot(pieces.size());
  int64_t cuts = 0;
  for (size_t k = 0; k < pieces.size(); ++k)
    for (const auto& p : pieces[k]) slot[k].push_back(p.cut ? cuts++ : -1);
  auto partial = at::empty({cuts, gw.size(1), gw.size(2)}, gw.options());
  const at::ThreadLocalState caller;  // inference mode, dispatch keys: the worker threads start without them
  at::parallel_for(0, static_cast<int64_t>(pieces.size()), 1, [&](int64_t lo, int64_t hi) {
    at::ThreadLocalStateGuard state(caller);
    at::NoGradGuard no_grad;
    for (int64_t k = lo; k < hi; ++k) {
      for (size_t i = 0; i < pieces[k].size(); ++i) {
        const auto& p = pieces[k][i];
        auto o = slot[k][i] < 0 ? gw.select(0, p.e) : partial.select(0, slot[k][i]);
        at::mm_out(o, x.narrow(0, p.s, p.t - p.s).t(), g.narrow(0, p.s, p.t - p.s));
      }
    }
  });
  at::NoGradGuard no_grad;
  std::vector<bool> written(gw.size(0), false);
  for (size_t k = 0; k < pieces.size(); ++k) {
    for (size_t i = 0; i < pieces[k].size(); ++i) {
      const auto& p = pieces[k][i];
      if (slot[k][i] >= 0) {
        auto o = gw.select(0, p.e);
        if (written[p.e]) o.add_(partial.select(0, slot[k][i]));
        else o.copy_(partial.select(0, slot[k][i]));
      }
      written[p.e] = true;
    }
  }
  for (int64_t e = 0; e < gw.size(0); ++e)
    if (!written[e]) gw.select(0, e).zero_();
}

// A small cache of the kernel path's weight gradients (the (E, a, b) gradient is 1 GiB at E=256). Each one
// lives in its own anonymous mapping; when the tensor dies the mapping is kept for the next request of about the
// same size instead of being unmapped. Why: fresh memory is first touched page by page inside the GEMMs, and on
// this machine that costs ~0.5-1 ms of kernel time per MiB, as much as the expert GEMMs themselves at E=256. The
// cache holds at most twice the high-water mark of bytes handed out at once (a margin for shapes that change
// between steps); `empty_cache()` returns it all.
namespace pool {
constexpr size_t kMin = size_t(1) << 20, kGrain = size_t(2) << 20;
struct State {
  std::mutex mu;
  std::multimap<size_t, void*> free_blocks;  // bytes -> mapping
  size_t cached = 0, live = 0, high = 0;
};
State& state() {
  static State* s = new State;  // never destroyed: tensors may die after static destructors have run
  return *s;
}
void give_back(void* p, size_t bytes) {
  auto& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  s.live -= bytes;
  if (s.cached + bytes <= 2 * s.high) {
    s.free_blocks.emplace(bytes, p);
    s.cached += bytes;
  } else {
    munmap(p, bytes);
  }
}
}  // namespace pool

// An uninitialised tensor shaped `sizes` like `like`; from 1 MiB up, from the cache above.
torch::Tensor pooled_empty(const std::vector<int64_t>& sizes, const torch::Tensor& like) {
  int64_t numel = 1;
  for (auto n : sizes) numel *= n;
  const size_t bytes = static_cast<size_t>(numel) * like.element_size();
  if (bytes < pool::kMin) return at::empty(sizes, like.options());
  const size_t want = (bytes + pool::kGrain - 1) / pool::kGrain * pool::kGrain;
  auto& s = pool::state();
  void* p = nullptr;
  size_t got = want;
  {
    std::lock_guard<std::mutex> lock(s.mu);
    auto it = s.free_blocks.lower_bound(want);
    if (it != s.free_blocks.end() && it->first <= want + want / 4) {
      p = it->second;
      got = it->first;
      s.cached -= got;
      s.free_blocks.erase(it);
    }
  }
  if (p == nullptr) {
    p = mmap(nullptr, want, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return at::empty(sizes, like.options());  // let torch's allocator report the failure
  }
  {
    std::lock_guard<std::mutex> lock(s.mu);
    s.live += got;
    s.high = std::max(s.high, s.live);
  }
  return torch::from_blob(p, sizes, [p, got](void*) { pool::give_back(p, got); }, like.options());
}

// Unmap every cached block; the cap drops to what is live now. Returns the bytes released.
int64_t empty_cache() {
  auto& s = pool::state();
  std::lock_guard<std::mutex> lock(s.mu);
  const size_t released = s.cached;
  for (auto& [bytes, p] : s.free_blocks) munmap(p, bytes);
  s.free_blocks.clear();
  s.cached = 0;
  s.high = s.live;
  return static_cast<int64_t>(released);
}

// (cached, live, high-water) bytes of the cache.
std::vector<int64_t> pool_stats() {
  auto& s = pool::state();
  std::lock_guard<std::mutex> lock(s.mu);
  return {static_cast<int64_t>(s.cached), static_cast<int64_t>(s.live), static_cast<int64_t>(s.high)};
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.def("pooled_empty", &pooled_empty);
  m.def("empty_cache", &empty_cache);
  m.def("pool_stats", &pool_stats);
  m.def("segment_mm_out", &segment_mm_out);
  m.def("segment_wgrad_out", &segment_wgrad_out);
}
"""

CFLAGS = ("-O2", "-std=c++20", "-fopenmp")
LDFLAGS = ("-fopenmp",)

_lock = threading.Lock()
_state: dict[str, object] = {}


def enabled() -> bool:
    """False when ``ZOO_MOE_KERNEL`` is ``off``/``0``/``loop``, or inside ``forced_off()`` (the Python loop runs)."""
    if _state.get("forced_off"):
        return False
    return os.environ.get("ZOO_MOE_KERNEL", "auto").lower() not in ("off", "0", "loop", "false")


def pooling() -> bool:
    """Whether the kernel path takes its weight gradients from its cache; ``ZOO_MOE_POOL=off`` turns it off."""
    return os.environ.get("ZOO_MOE_POOL", "on").lower() not in ("off", "0", "false")


def empty_cache() -> int:
    """Unmap the kernel's cached gradient blocks (as ``torch.cuda.empty_cache``); returns the bytes released."""
    module = _state.get("module")
    return int(module.empty_cache()) if module is not None else 0


def pool_stats() -> dict[str, int]:
    """Bytes the output cache holds free (``cached``), hands out now (``live``) and its cap (``high``)."""
    module = _state.get("module")
    cached, live, high = module.pool_stats() if module is not None else (0, 0, 0)
    return {"cached": int(cached), "live": int(live), "high": int(high)}


@contextmanager
def forced_off() -> Iterator[None]:
    """Run the Python loop inside this block (forward and backward): the benchmark's previous-default row."""
    before = _state.get("forced_off", False)
    _state["forced_off"] = True
    try:
        yield
    finally:
        _state["forced_off"] = before


def kernel():
    """The compiled module, building it on first use; None if disabled or it cannot be built here."""
    if not enabled():
        return None
    if "module" in _state:
        return _state["module"]
    with _lock:
        if "module" not in _state:
            _state["module"] = _build()
    return _state["module"]


def environment_key() -> dict[str, str]:
    """What a built kernel depends on besides its source: this interpreter and its environment, the Python and
    torch builds it links against, and the compiler and its flags. Each distinct key gets its own build folder."""
    return {
        "interpreter": sys.executable,
        "prefix": sys.prefix,
        "python": sys.version,
        "torch": torch.__version__,
        "torch_build": str(torch.version.git_version),
        "torch_dir": str(Path(torch.__file__).resolve().parent),
        "cxx": os.environ.get("CXX", "c++"),
        "flags": " ".join(CFLAGS + LDFLAGS),
    }


def build_name(key: dict[str, str]) -> str:
    """The extension's name (and so its folder in torch's extension cache) for the source built under ``key``."""
    text = SOURCE + json.dumps(key, sort_keys=True)
    return "zoo_segment_mm_" + hashlib.sha256(text.encode()).hexdigest()[:12]


def _cpp_extension():
    """``torch.utils.cpp_extension``, imported quietly."""
    log = logging.getLogger("torch.utils.cpp_extension")
    level = log.level
    log.setLevel(logging.ERROR)  # its import logs "No CUDA runtime is found" on every CPU machine
    try:
        from torch.utils import cpp_extension
    finally:
        log.setLevel(level)
    return cpp_extension


def build_folder(name: str) -> Path:
    """Where torch's ``cpp_extension`` builds extension ``name`` (created if missing)."""
    return Path(_cpp_extension()._get_build_directory(name, verbose=False))


def _build():
    if shutil.which(os.environ.get("CXX", "c++")) is None:
        warnings.warn("zoo.moe: no C++ compiler found; segment matmuls use the slower Python loop", stacklevel=3)
        return None
    name = build_name(environment_key())
    path = build_folder(name)
    if not any(path.glob("*.so")):
        print(
            f"zoo.moe: building the segment-matmul kernel for this interpreter (about a minute, once) into {path}",
            file=sys.stderr,
            flush=True,
        )
    try:
        return _cpp_extension().load_inline(
            name,
            cpp_sources=SOURCE,
            extra_cflags=list(CFLAGS),
            extra_ldflags=list(LDFLAGS),
            verbose=False,
        )
    # a broken toolchain must not stop training: fall back, say so once
    except (RuntimeError, OSError, ImportError, subprocess.CalledProcessError) as err:
        first_line = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        warnings.warn(
            f"zoo.moe: could not build the segment-matmul kernel ({first_line}); using the slower Python loop",
            stacklevel=3,
        )
        return None
