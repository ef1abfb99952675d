"""The segment-matmul kernel's build cache is per interpreter: another virtual environment (another interpreter,
prefix or torch build) gets its own build folder instead of rebuilding this one's, and a build is announced in one
line on stderr, once. The build itself is faked here (building is slow); tests/moe/test_segment_kernel.py builds
the real kernel."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch
import torch.utils.cpp_extension

from zoo.moe import segment_kernel

OTHER_ENV = {
    "interpreter": lambda mp: mp.setattr(sys, "executable", "/elsewhere/venv/bin/python"),
    "prefix": lambda mp: mp.setattr(sys, "prefix", "/elsewhere/venv"),
    "torch build": lambda mp: mp.setattr(torch.version, "git_version", "another-build"),
    "compiler": lambda mp: mp.setenv("CXX", "clang++"),
}


def _folder() -> Path:
    return segment_kernel.build_folder(segment_kernel.build_name(segment_kernel.environment_key()))


@pytest.mark.parametrize("change", list(OTHER_ENV))
def test_another_environment_gets_another_build_folder(change, monkeypatch, tmp_path):
    monkeypatch.setenv("TORCH_EXTENSIONS_DIR", str(tmp_path))
    monkeypatch.delenv("CXX", raising=False)
    here = _folder()
    assert _folder() == here, "the same environment must find its build again"
    OTHER_ENV[change](monkeypatch)
    there = _folder()
    assert there != here
    assert here.parent == there.parent == tmp_path and here.is_dir() and there.is_dir()


def test_a_build_is_announced_once_on_stderr(monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("TORCH_EXTENSIONS_DIR", str(tmp_path))
    monkeypatch.setenv("ZOO_MOE_KERNEL", "auto")
    monkeypatch.setenv("CXX", sys.executable)  # any existing program passes the compiler check: the build is faked
    built = []

    def fake_load_inline(name, **kwargs):
        (segment_kernel.build_folder(name) / f"{name}.so").write_bytes(b"")
        built.append(name)
        return object()

    monkeypatch.setattr(torch.utils.cpp_extension, "load_inline", fake_load_inline)
    monkeypatch.setattr(segment_kernel, "_state", {})  # as in a fresh process
    first = segment_kernel.kernel()
    assert segment_kernel.kernel() is first and len(built) == 1
    out = capsys.readouterr()
    lines = [line for line in out.err.splitlines() if "segment-matmul kernel" in line]
    assert lines == [
        f"zoo.moe: building the segment-matmul kernel for this interpreter (about a minute, once) into {_folder()}"
    ]
    assert "segment-matmul" not in out.out

    monkeypatch.setattr(segment_kernel, "_state", {})  # the next process finds the build: loads it, says nothing
    assert segment_kernel.kernel() is not None and len(built) == 2
    assert "segment-matmul" not in capsys.readouterr().err
