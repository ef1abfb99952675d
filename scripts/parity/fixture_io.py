"""Shared pieces of the parity exporters: the upstream path and commit, the fixture file, one optimiser step."""

from __future__ import annotations

import argparse
import io
import subprocess
import sys
from pathlib import Path

import numpy as np
import torch

MAX_BYTES = 300_000  # fixtures are committed: keep each small


def exporter_args(description: str, repo: str = "the upstream repository") -> argparse.Namespace:
    """``--upstream PATH`` (a checkout of ``repo``), ``--commit SHA`` (needed when PATH is an exported tree without
    .git; read with git otherwise) and ``--out FILE``. Each exporter puts the folder of PATH it imports from on
    sys.path itself."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--upstream", type=Path, required=True, help=f"checkout of {repo}")
    parser.add_argument("--commit", default=None, help="its commit (read with git when omitted)")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    args.upstream = args.upstream.resolve()
    args.commit = upstream_commit(args.upstream, args.commit)
    return args


def upstream_commit(path: Path, given: str | None) -> str:
    """``given``, else ``git rev-parse HEAD`` of ``path``; refuses to export without one."""
    if given:
        return given
    done = subprocess.run(["git", "-C", str(path), "rev-parse", "HEAD"], capture_output=True, text=True)
    if done.returncode:
        sys.exit(f"{path} is not a git checkout: give --commit SHA of the upstream snapshot")
    return done.stdout.strip()


def exported_with() -> dict[str, str]:
    """Library versions of the exporting environment."""
    return {"torch": str(torch.__version__), "numpy": str(np.__version__), "python": sys.version.split()[0]}


def numbers(value):
    """Detached CPU copies of every tensor in a nested dict / list (no autograd graph, no views)."""
    if isinstance(value, torch.Tensor):
        return value.detach().cpu().clone()
    if isinstance(value, dict):
        return {k: numbers(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [numbers(v) for v in value]
    return value


def save_fixture(out: Path, fixture: dict) -> None:
    """torch.save ``fixture`` (tensors, numbers, strings only) to ``out``; refuses more than MAX_BYTES."""
    buffer = io.BytesIO()
    torch.save(numbers(fixture), buffer)
    size = buffer.getbuffer().nbytes
    if size > MAX_BYTES:
        sys.exit(f"fixture is {size} bytes, over {MAX_BYTES}: shrink the config")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(buffer.getvalue())
    print(f"wrote {out} ({size} bytes)")


def grads_and_step(model: torch.nn.Module, optimizer: torch.optim.Optimizer) -> tuple[dict, dict]:
    """After ``loss.backward()``: ({name: grad} of parameters that have one, {name: value} after one
    ``optimizer.step()``)."""
    grads = {n: p.grad.detach().clone() for n, p in model.named_parameters() if p.grad is not None}
    optimizer.step()
    after = {n: p.detach().clone() for n, p in model.named_parameters()}
    return grads, after
