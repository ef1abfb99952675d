"""Export the SimBa parity fixture from the authors' JAX code (SonyResearch/simba, ``scale_rl``).

Builds SAC with SimBa actor and clipped double critic through the reference's own ``_init_sac_networks`` (tiny
widths), runs one reference update ``_update_sac_networks`` (actor, temperature, critic, target critic; un-jitted
so the gradients can be observed) on a fixed random batch, and saves numbers only (numpy .npz):

    python scripts/parity/export_simba.py --upstream /tmp/upstream/simba --commit SHA \\
        --out tests/fixtures/parity/simba.npz

Run it in a scratch environment with the reference's pins (jax/jaxlib 0.4.25, flax 0.8.4, optax 0.2.2,
tensorflow-probability 0.24.0, numpy 1.26). ``scale_rl/agents/__init__.py`` (agent factory: wandb, gym configs)
is not executed: ``scale_rl.agents`` is registered as a bare package so its submodules import alone.

The reference samples actions with ``dist.sample(seed=key)``; the standard-normal draws behind the two samples
(the actor's on ``observation`` with the initial actor, the critic target's on ``next_observation`` with the
updated actor) are recovered as ``(atanh-free base sample - loc) / scale`` from the same keys and saved as
``noise/actor`` and ``noise/critic``, so a test can feed them to its own sampler.
"""

from __future__ import annotations

import json
import sys
import types

import numpy as np
from fixture_io import exporter_args

CONFIG = {
    "obs_dim": 5,
    "act_dim": 3,
    "batch": 8,
    "actor_hidden": 16,
    "actor_blocks": 1,
    "critic_hidden": 16,
    "critic_blocks": 2,
    "lr": 1e-3,
    "weight_decay": 1e-2,
    "temp_initial_value": 0.1,
    "temp_target_entropy_coef": -0.5,
    "gamma": 0.99,
    "tau": 0.005,
    "seed": 0,
}


def flatten(tree, prefix: str) -> dict[str, np.ndarray]:
    """Nested dict of arrays -> {"prefix/a/b": np.ndarray (float32)}."""
    out = {}
    for key, value in tree.items():
        name = f"{prefix}/{key}"
        if hasattr(value, "items"):
            out.update(flatten(value, name))
        else:
            out[name] = np.asarray(value, dtype=np.float32)
    return out


def main() -> None:
    args = exporter_args(__doc__.splitlines()[0], "SonyResearch/simba")
    sys.path.insert(0, str(args.upstream))
    agents = types.ModuleType("scale_rl.agents")
    agents.__path__ = [str(args.upstream / "scale_rl" / "agents")]
    sys.modules["scale_rl.agents"] = agents

    import flax
    import jax
    import jax.numpy as jnp
    import optax
    import tensorflow_probability
    from scale_rl.agents.sac.sac_agent import SACConfig, _init_sac_networks, _update_sac_networks

    c = CONFIG
    cfg = SACConfig(
        seed=c["seed"], num_train_envs=1, max_episode_steps=1000, normalize_observation=False,
        actor_block_type="residual", actor_num_blocks=c["actor_blocks"], actor_hidden_dim=c["actor_hidden"],
        actor_learning_rate=c["lr"], actor_weight_decay=c["weight_decay"],
        critic_block_type="residual", critic_num_blocks=c["critic_blocks"], critic_hidden_dim=c["critic_hidden"],
        critic_learning_rate=c["lr"], critic_weight_decay=c["weight_decay"], critic_use_cdq=True,
        temp_target_entropy=c["temp_target_entropy_coef"] * c["act_dim"],
        temp_target_entropy_coef=c["temp_target_entropy_coef"], temp_initial_value=c["temp_initial_value"],
        temp_learning_rate=c["lr"], temp_weight_decay=0.0, target_tau=c["tau"], gamma=c["gamma"], n_step=1,
        mixed_precision=False,
    )  # fmt: skip
    rng, actor, critic, target_critic, temperature = _init_sac_networks(c["obs_dim"], c["act_dim"], cfg)

    grads: dict[str, dict] = {}

    def recording(name: str, tx: optax.GradientTransformation) -> optax.GradientTransformation:
        """``tx`` unchanged, but the gradients it is given are kept (the reference does not return them)."""

        def update(updates, state, params=None):
            grads[name] = jax.tree_util.tree_map(np.asarray, flax.core.unfreeze(updates))
            return tx.update(updates, state, params)

        return optax.GradientTransformation(tx.init, update)

    actor = actor.replace(tx=recording("actor", actor.tx))
    critic = critic.replace(tx=recording("critic", critic.tx))
    temperature = temperature.replace(tx=recording("temperature", temperature.tx))

    r = np.random.default_rng(c["seed"])
    b, o, a = c["batch"], c["obs_dim"], c["act_dim"]
    batch = {
        "observation": r.normal(size=(b, o)).astype(np.float32),
        "action": r.uniform(-0.9, 0.9, size=(b, a)).astype(np.float32),
        "reward": r.normal(size=(b,)).astype(np.float32),
        "terminated": (r.uniform(size=(b,)) < 0.25).astype(np.float32),
        "next_observation": r.normal(size=(b, o)).astype(np.float32),
    }
    state = {
        **flatten(flax.core.unfreeze(actor.params), "state/actor"),
        **flatten(flax.core.unfreeze(critic.params), "state/critic"),
        **flatten(flax.core.unfreeze(target_critic.params), "state/target_critic"),
        **flatten(flax.core.unfreeze(temperature.params), "state/temperature"),
    }
    jbatch = {k: jnp.asarray(v) for k, v in batch.items()}
    update = _update_sac_networks.__wrapped__  # un-jitted: the recording optimiser sees concrete gradients
    _, new_actor, new_critic, new_target, new_temperature, info = update(
        rng, actor, critic, target_critic, temperature, jbatch,
        gamma=c["gamma"], n_step=1, critic_use_cdq=True, target_tau=c["tau"],
        temp_target_entropy=cfg.temp_target_entropy,
    )  # fmt: skip

    # The two standard-normal draws, from the same keys as the reference's update (its first line splits rng).
    _, actor_key, critic_key = jax.random.split(rng, 3)

    def base_noise(trainer, obs, key) -> np.ndarray:
        dist = trainer(observations=obs)
        pre_tanh = dist.distribution.sample(seed=key)  # the sample dist.sample(seed=key) passes through tanh
        assert np.allclose(np.tanh(pre_tanh), dist.sample(seed=key), atol=1e-6)
        return np.asarray((pre_tanh - dist.distribution.loc) / dist.distribution.stddev())

    dist = actor(observations=jbatch["observation"])
    outputs = {
        "outputs/actor_mean": np.asarray(dist.distribution.loc),
        "outputs/actor_log_std": np.log(np.asarray(dist.distribution.stddev())),
        "outputs/critic_q": np.asarray(critic(observations=jbatch["observation"], actions=jbatch["action"]))[..., 0],
    }
    losses = {f"loss/{k}": np.asarray(info[k]) for k in ("actor_loss", "critic_loss", "temperature_loss", "entropy")}
    fixture = {
        **{f"inputs/{k}": v for k, v in batch.items()},
        "inputs/noise_actor": base_noise(actor, jbatch["observation"], actor_key),
        "inputs/noise_critic": base_noise(new_actor, jbatch["next_observation"], critic_key),
        **state,
        **outputs,
        **losses,
        **flatten(grads, "grads"),
        **flatten(flax.core.unfreeze(new_actor.params), "after_step/actor"),
        **flatten(flax.core.unfreeze(new_critic.params), "after_step/critic"),
        **flatten(flax.core.unfreeze(new_target.params), "after_step/target_critic"),
        **flatten(flax.core.unfreeze(new_temperature.params), "after_step/temperature"),
    }
    meta = {
        "upstream": "SonyResearch/simba",
        "commit": args.commit,
        "call": (
            "scale_rl/agents/sac/sac_agent.py: rng, actor, critic, target_critic, temperature = "
            "_init_sac_networks(obs_dim, act_dim, SACConfig(residual blocks, critic_use_cdq=True, ...)); "
            "_update_sac_networks.__wrapped__(rng, actor, critic, target_critic, temperature, batch, gamma, n_step=1, "
            "critic_use_cdq=True, target_tau, temp_target_entropy) (update_actor, update_temperature, update_critic, "
            "update_target_network; optax.adamw)"
        ),
        "config": c,
        "exported_with": {
            "jax": jax.__version__,
            "flax": flax.__version__,
            "optax": optax.__version__,
            "tensorflow_probability": tensorflow_probability.__version__,
            "numpy": np.__version__,
        },
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(args.out, meta=np.array(json.dumps(meta)), **fixture)
    print(f"wrote {args.out} ({args.out.stat().st_size} bytes, {len(fixture)} arrays)")


if __name__ == "__main__":
    main()
