"""MoE-GS's conformance case (``TaskSpec.conformance``, ``python -m zoo.conformance moe_gs``): the router stage
reads the exports of three trained stage-1 experts, each a run of its own; the case blends tiny untrained stand-ins."""

from __future__ import annotations

import json
from pathlib import Path

KINDS = ("mlp", "hexplane", "trajectory")


def tiny_experts(folder: Path, num_gaussians: int = 20) -> list[str]:
    """Write one export per expert kind into ``folder`` (random canonical Gaussians, opaque, different per expert;
    kept when already there) and return the override naming them: ``--model.init_args.experts=[...]``."""
    import torch

    from zoo_tasks.splatting.experts import DynamicGaussians
    from zoo_tasks.splatting.exports import save_export

    paths = []
    for k, kind in enumerate(KINDS):
        path = folder / f"{kind}.pt"
        if not path.is_file():
            with torch.random.fork_rng():  # the run's own seeding stays as the config sets it
                torch.manual_seed(k)
                model = DynamicGaussians(kind, num_gaussians, extent=0.6)
                with torch.no_grad():
                    model.gaussians.opacity_logits.fill_(1.0)
                    model.gaussians.sh[:, 0] = torch.randn(num_gaussians, 3)
            hparams = {"expert": kind, "num_gaussians": num_gaussians, "sh_degree": 1, "expert_kwargs": None}
            save_export(path, hparams, model.state_dict(), 0)
        paths.append(str(path))
    return [f"--model.init_args.experts={json.dumps(paths)}"]
