"""Parity of our context-FID code (``zoo_tasks.timeseries.generation.ts2vec`` and ``diffusion_ts_metrics``) with
the authors' (Y-debug-sys/Diffusion-TS ``Models/ts2vec``, ``Utils/context_fid.py``), fixture from
``scripts/parity/export_diffusion_ts.py``: a tiny TS2Vec encoder's train-mode forward on two overlapping masked
crops (same dropout draws), the hierarchical contrastive loss, its gradients and one AdamW step; the full-series
embeddings of real and fake windows; the Fréchet distance on those embeddings and on fixed ones.

The metric's training loop itself is random (TS2Vec crops and masks from numpy's global state in the reference,
from torch's generator in ours), so two runs agree in distribution, not in numbers; the parts compared here are
what the loop is made of. The discriminative and predictive scores run TimeGAN's TensorFlow 1 GRUs in the
reference and are not compared (our module docstring lists how our PyTorch GRUs differ).
"""

from __future__ import annotations

import torch

from zoo_tasks.timeseries.generation.diffusion_ts_metrics import frechet_distance
from zoo_tasks.timeseries.generation.ts2vec import TSEncoder, encode_full_series, hierarchical_contrastive_loss

FIXTURE = "diffusion_ts"


def encoder_state(up: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """Reference ``TSEncoder`` names -> ours (no ``feature_extractor.net`` / ``SamePadConv`` wrappers)."""
    return {
        k.replace("feature_extractor.net.", "blocks.").replace(".conv.", "."): v
        for k, v in up.items()
        if not k.endswith("n_averaged")
    }


def build(fx: dict) -> TSEncoder:
    c = fx["meta"]["config"]
    encoder = TSEncoder(c["channels"], c["output_dims"], c["hidden_dims"], c["depth"])
    encoder.load_state_dict(encoder_state(fx["state"]))
    return encoder


def test_training_step_equal(parity):
    """Train-mode outputs on both crops, the contrastive loss, every gradient, the weights after one AdamW step."""
    fx = parity.load(FIXTURE)
    c, x = fx["meta"]["config"], fx["inputs"]
    encoder = build(fx).train()
    optimizer = torch.optim.AdamW(encoder.parameters(), lr=c["lr"])
    torch.manual_seed(c["dropout_seed"])
    out1 = encoder(x["view1"], x["keep1"])[:, -c["crop"] :]
    out2 = encoder(x["view2"], x["keep2"])[:, : c["crop"]]
    parity.compare("train forward, crop 1", out1, fx["outputs"]["out1"])
    parity.compare("train forward, crop 2", out2, fx["outputs"]["out2"])
    loss = hierarchical_contrastive_loss(out1, out2)
    parity.compare("hierarchical contrastive loss", loss, fx["loss"]["contrastive"])
    optimizer.zero_grad()
    loss.backward()
    ours = dict(encoder.named_parameters())
    for name, grad in encoder_state(fx["grads"]).items():
        parity.compare(f"grad/{name}", ours[name].grad, grad)
    optimizer.step()
    after = encoder.state_dict()
    for name, value in encoder_state(fx["after_step"]).items():
        parity.compare(f"after_step/{name}", after[name], value)
    parity.describe(
        method="diffusion_ts_metrics",
        task="timemode",
        compared="context-FID: TS2Vec encoder forward (masks, dropout), hierarchical contrastive loss, gradients, "
        "one AdamW step, full-series embeddings, Fréchet distance; not the TF1 discriminative / predictive scores",
    )


def test_full_series_embeddings_and_fid_equal(parity):
    """Eval-mode max-over-time embeddings (N, 16) of real and fake windows, and context-FID on them."""
    fx = parity.load(FIXTURE)
    encoder = build(fx)
    real = encode_full_series(encoder, fx["inputs"]["real"])
    fake = encode_full_series(encoder, fx["inputs"]["fake"])
    parity.compare("full-series embedding, real", real, fx["outputs"]["real_emb"])
    parity.compare("full-series embedding, fake", fake, fx["outputs"]["fake_emb"])
    parity.compare("context-FID", frechet_distance(real, fake), fx["loss"]["context_fid"])


def test_frechet_distance_equal(parity):
    """``frechet_distance`` against ``calculate_fid`` on fixed float64 embeddings (50 x 6 and 40 x 6)."""
    fx = parity.load(FIXTURE)
    x = fx["inputs"]
    ours = frechet_distance(x["emb_a"].numpy(), x["emb_b"].numpy())
    parity.compare("Fréchet distance (fixed embeddings)", ours, fx["loss"]["fid_fixed"], tolerance=1e-10)
