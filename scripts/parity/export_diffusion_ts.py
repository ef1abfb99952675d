"""Export the Diffusion-TS context-FID parity fixture from the authors' code (Y-debug-sys/Diffusion-TS).

Context-FID trains a TS2Vec encoder (``Models/ts2vec``) on the real windows, embeds real and fake windows with
``encode(..., encoding_window='full_series')`` and takes ``Utils/context_fid.py``'s ``calculate_fid``. Training is
random in ways no two implementations share (numpy crops and masks), so the deterministic parts are exported, on
a tiny encoder (output 16, hidden 8, depth 3), numbers only:

1. one TS2Vec training step as ``TS2Vec.fit`` takes it: the train-mode ``_net`` on two given overlapping crops
   with given timestamp masks (dropout drawn after ``torch.manual_seed``), ``hierarchical_contrastive_loss``, its
   gradients, one AdamW step (``fit``'s optimiser);
2. ``encode(..., encoding_window='full_series')`` of real and fake windows with the initial (averaged) weights;
3. ``calculate_fid`` on those embeddings, and on two fixed random embedding sets.

    python scripts/parity/export_diffusion_ts.py --upstream /tmp/upstream/diffusion_ts --commit SHA \\
        --out tests/fixtures/parity/diffusion_ts.pt

The discriminative and predictive scores are TensorFlow 1 (TimeGAN's GRUs) and are not exported (see the test).
"""

from __future__ import annotations

import sys

import numpy as np
import scipy
import torch
from fixture_io import exporter_args

CONFIG = {"channels": 2, "output_dims": 16, "hidden_dims": 8, "depth": 3, "batch": 4, "length": 12, "crop": 7,
          "windows": 24, "lr": 1e-3}  # fmt: skip
SEED, DROPOUT_SEED = 0, 77


def main() -> None:
    args = exporter_args(__doc__.splitlines()[0], "Y-debug-sys/Diffusion-TS")
    sys.path.insert(0, str(args.upstream))
    from Models.ts2vec.models.losses import hierarchical_contrastive_loss
    from Models.ts2vec.ts2vec import TS2Vec
    from Utils.context_fid import calculate_fid

    c = CONFIG
    torch.manual_seed(SEED)
    model = TS2Vec(input_dims=c["channels"], device="cpu", output_dims=c["output_dims"], hidden_dims=c["hidden_dims"],
                   depth=c["depth"], batch_size=8, lr=c["lr"])  # fmt: skip
    state = {k: v.clone() for k, v in model._net.state_dict().items()}
    gen = torch.Generator().manual_seed(SEED)
    b, length, crop = c["batch"], c["length"], c["crop"]
    # Two overlapping crops as fit() cuts them: view 1 = [2, 10) ends with the shared [3, 10), view 2 = [3, 11).
    series = torch.randn(b, length, c["channels"], generator=gen)
    view1, view2 = series[:, 2:10].clone(), series[:, 3:11].clone()
    keep1 = torch.rand(view1.shape[:2], generator=gen) < 0.5
    keep2 = torch.rand(view2.shape[:2], generator=gen) < 0.5

    net = model._net.train()
    optimizer = torch.optim.AdamW(net.parameters(), lr=c["lr"])  # as TS2Vec.fit
    torch.manual_seed(DROPOUT_SEED)
    out1 = net(view1.clone(), mask=keep1.clone())[:, -crop:]
    out2 = net(view2.clone(), mask=keep2.clone())[:, :crop]
    loss = hierarchical_contrastive_loss(out1, out2)
    optimizer.zero_grad()
    loss.backward()
    grads = {k: p.grad.detach().clone() for k, p in net.named_parameters()}
    optimizer.step()
    after = {k: v.clone() for k, v in net.state_dict().items()}

    real = np.random.default_rng(SEED).uniform(size=(c["windows"], length, c["channels"])).astype(np.float32)
    fake = (real + 0.3 * np.random.default_rng(SEED + 1).normal(size=real.shape)).astype(np.float32)
    real_emb = model.encode(real, encoding_window="full_series")
    fake_emb = model.encode(fake, encoding_window="full_series")
    rng = np.random.default_rng(SEED + 2)
    emb_a, emb_b = rng.normal(size=(50, 6)), rng.normal(loc=0.3, scale=1.2, size=(40, 6))

    fixture = {
        "meta": {
            "upstream": "Y-debug-sys/Diffusion-TS",
            "commit": args.commit,
            "call": (
                "Models/ts2vec/ts2vec.py TS2Vec(input_dims, device='cpu', output_dims, hidden_dims, depth, "
                "batch_size=8, lr); torch.manual_seed(dropout_seed); out1 = _net(view1, mask=keep1)[:, -crop:]; "
                "out2 = _net(view2, mask=keep2)[:, :crop]; models/losses.py hierarchical_contrastive_loss(out1, "
                "out2); AdamW(lr).step(); encode(x, encoding_window='full_series') (initial weights); "
                "Utils/context_fid.py calculate_fid(real_emb, fake_emb)"
            ),
            "config": dict(c, seed=SEED, dropout_seed=DROPOUT_SEED, optimizer="AdamW"),
            "exported_with": {"torch": str(torch.__version__), "numpy": np.__version__, "scipy": scipy.__version__},
        },
        "inputs": {"view1": view1, "view2": view2, "keep1": keep1, "keep2": keep2, "real": torch.from_numpy(real),
                   "fake": torch.from_numpy(fake), "emb_a": torch.from_numpy(emb_a), "emb_b": torch.from_numpy(emb_b)},
        "state": state,
        "outputs": {"out1": out1.detach(), "out2": out2.detach(), "real_emb": torch.from_numpy(real_emb),
                    "fake_emb": torch.from_numpy(fake_emb)},
        "loss": {"contrastive": loss.detach(), "context_fid": torch.tensor(calculate_fid(real_emb, fake_emb)),
                 "fid_fixed": torch.tensor(calculate_fid(emb_a, emb_b))},
        "grads": grads,
        "after_step": after,
    }  # fmt: skip
    args.out.parent.mkdir(parents=True, exist_ok=True)
    torch.save(fixture, args.out)
    print(f"wrote {args.out} ({args.out.stat().st_size} bytes)")


if __name__ == "__main__":
    main()
