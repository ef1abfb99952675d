"""Each router's own knobs as a search space (issue 26: the tuner searches "the router's own knobs").

Keyed by ``zoo.moe.ROUTERS`` name; the keys are the router's keyword arguments (what a task's ``router_kwargs``
passes to it) with their published or default-centred ranges. A router missing here has no knob to tune.
"""

from __future__ import annotations

from zoo.tuning.space import Float, SearchSpace

ROUTER_KNOBS: dict[str, dict[str, Float]] = {
    "noisy_topk": {"noise_eps": Float(1e-3, 1e-1, log=True)},  # Shazeer et al. 2017: noise std floor
    "dirichlet": {"tau": Float(0.3, 3.0, log=True), "prior_concentration": Float(0.1, 10.0, log=True)},
    "dtop_p": {"p_init": Float(0.2, 0.8)},  # DynMoE-style threshold start
    "expert_choice": {"capacity_factor": Float(1.0, 2.0)},  # Zhou et al. 2022 use 2.0
    "sigmoid_bias": {"bias_update_rate": Float(1e-4, 1e-2, log=True)},  # DeepSeek-V3's loss-free balancing
}


def router_space(router: str, prefix: str) -> SearchSpace:
    """The knobs of ``router`` as config keys under ``<prefix>.router_kwargs`` (e.g. ``model.init_args``)."""
    return {f"{prefix}.router_kwargs.{name}": param for name, param in ROUTER_KNOBS.get(router, {}).items()}
