"""Export the SPHERE parity fixture from the authors' JAX code (sphere-rl/sphere ``src/algorithms/moe/sphere.py``).

Evaluates the reference's ``sphere_feature_loss`` (the Parseval penalty on routing-weighted expert features) and
``sphere_output_loss`` (its gating variant) and their gradients with ``jax.grad`` on fixed random gate weights and
expert features, in both branches of the feature penalty (D <= T: ``Phi^T Phi / T``; D > T: ``Phi Phi^T / T``).
The gate weights are built as the reference's ``TopKMoEActor`` builds ``probs`` (top-k softmax scattered into a
(T, E) array of zeros) and the features are weighted as ``moe_ppo.py`` does before the penalty
(``weighted = probs[..., None] * feats; phi = weighted.reshape(T, E * H)``). Numbers only (numpy .npz):

    python scripts/parity/export_sphere.py --upstream /tmp/upstream/sphere --commit SHA \\
        --out tests/fixtures/parity/sphere.npz

Needs jax (CPU) only; the reference's other dependencies (sbx, stable-baselines3, humanoid-bench) are not used.
"""

from __future__ import annotations

import json
import sys

import numpy as np
from fixture_io import exporter_args

CASES = {
    "tall": {"tokens": 24, "experts": 3, "hidden": 4, "top_k": 2},
    "wide": {"tokens": 8, "experts": 3, "hidden": 4, "top_k": 2},
}
SEED = 0


def main() -> None:
    args = exporter_args(__doc__.splitlines()[0], "sphere-rl/sphere")
    sys.path.insert(0, str(args.upstream / "src" / "algorithms" / "moe"))
    import jax
    import jax.numpy as jnp
    from sphere import sphere_feature_loss, sphere_output_loss  # the reference penalties (jax only)

    def routed_penalty(probs, feats):
        weighted = probs[..., None] * feats  # moe_ppo.py, before sphere_feature_loss
        return sphere_feature_loss(weighted.reshape((weighted.shape[0], weighted.shape[1] * weighted.shape[2])))

    def gating_penalty(probs):
        return sphere_output_loss(probs[None, ...])  # moe_ppo.py: sphere_output_loss(probs[None, ...])

    rng = np.random.default_rng(SEED)
    arrays: dict[str, np.ndarray] = {}
    for case, c in CASES.items():
        t, e, h, k = c["tokens"], c["experts"], c["hidden"], c["top_k"]
        logits = rng.normal(size=(t, e)).astype(np.float32)
        feats = rng.normal(size=(t, e, h)).astype(np.float32)
        top_val, top_idx = jax.lax.top_k(jnp.asarray(logits), k)
        probs = jnp.zeros((t, e)).at[jnp.arange(t)[:, None], top_idx].set(jax.nn.softmax(top_val, axis=-1))
        feats_j = jnp.asarray(feats)
        value, (g_probs, g_feats) = jax.value_and_grad(routed_penalty, argnums=(0, 1))(probs, feats_j)
        phi = (probs[..., None] * feats_j).reshape((t, e * h))
        g_phi = jax.grad(sphere_feature_loss)(phi)
        gate_value, g_gate = jax.value_and_grad(gating_penalty)(probs)
        arrays.update(
            {
                f"inputs/{case}/probs": np.asarray(probs),
                f"inputs/{case}/features": feats,
                f"outputs/{case}/phi": np.asarray(phi),
                f"loss/{case}/feature_penalty": np.asarray(value),
                f"loss/{case}/gating_penalty": np.asarray(gate_value),
                f"grads/{case}/feature_penalty/probs": np.asarray(g_probs),
                f"grads/{case}/feature_penalty/features": np.asarray(g_feats),
                f"grads/{case}/feature_penalty/phi": np.asarray(g_phi),
                f"grads/{case}/gating_penalty/probs": np.asarray(g_gate),
            }
        )
    meta = {
        "upstream": "sphere-rl/sphere",
        "commit": args.commit,
        "call": (
            "src/algorithms/moe/sphere.py: sphere_feature_loss((probs[..., None] * feats).reshape(T, E * H)) and "
            "sphere_output_loss(probs[None, ...]) (as moe_ppo.py calls them), with jax.value_and_grad w.r.t. probs, "
            "feats and phi; probs = top-k softmax scattered into zeros (TopKMoEActor)"
        ),
        "config": {"cases": CASES, "seed": SEED, "dtype": "float32"},
        "exported_with": {"jax": jax.__version__, "numpy": np.__version__},
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(args.out, meta=np.array(json.dumps(meta)), **arrays)
    print(f"wrote {args.out} ({args.out.stat().st_size} bytes)")


if __name__ == "__main__":
    main()
