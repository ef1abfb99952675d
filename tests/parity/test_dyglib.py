"""DyGFormer, GraphMixer and EdgeBank (dygmoce task's baselines) equal DyGLib's (yule-BUAA/DyGLib) on a tiny event
stream (fixtures from ``scripts/parity/export_dyglib.py``; DyGLib's own neighbour sampler built them):

- DyGFormer and GraphMixer: source / destination / negative temporal embeddings, link probabilities, the BCE loss
  of ``train_link_prediction.py``, every gradient and one Adam step, with DyGLib's weights mapped into our
  ``DynamicLinkPredictor`` and the batch built by our datamodule's own collate code;
- EdgeBank: scores of positives and negatives and per-batch AP / AUC under the four memory modes.

Pinned difference: with non-zero node features DyGLib's GraphMixer adds the mean of its last ``time_gap`` (2,000)
neighbours' features to the node's; ours leaves it out (exact on UCI, whose node features are zero).
Tolerance 1e-5 relative (fp32); EdgeBank's 0/1 scores exactly. DyGFormer's attention key bias has a gradient
of 0 by symmetry: compared against the largest gradient, left out of the Adam step (``parity_steps``)."""

from __future__ import annotations

import types

import numpy as np
import pytest
import torch
from parity_steps import compare_gradients_and_step

from zoo_tasks.graphs.dynamic.data import DynamicLinkDataModule
from zoo_tasks.graphs.dynamic.edgebank import edgebank_scores
from zoo_tasks.graphs.dynamic.metrics import batch_metrics
from zoo_tasks.graphs.dynamic.module import DynamicLinkPredictor, EdgeBankPredictor
from zoo_tasks.graphs.dynamic.neighbors import NeighborFinder
from zoo_tasks.graphs.dynamic.split import Interactions

RENAMES = {  # DyGLib's nn.Sequential(backbone, MergeLayer) prefix -> ours, first match wins
    "0.time_encoder.": "encoder.time_encoder.",
    "0.neighbor_co_occurrence_encoder.neighbor_co_occurrence_encode_layer.": "encoder.cooc.",
    "0.projection_layer.neighbor_co_occurrence.": "encoder.proj.cooc.",
    "0.projection_layer.": "encoder.proj.",
    "0.output_layer.": "encoder.output.",
    "1.": "predictor.",
}
BLOCK_RENAMES = {  # inside one DyGFormer layer / GraphMixer mixer
    "multi_head_attention.": "attention.",
    "linear_layers.0.": "fc1.",
    "linear_layers.1.": "fc2.",
    "norm_layers.0.": "norm1.",
    "norm_layers.1.": "norm2.",
    "token_feedforward.ffn.": "token_ff.net.",
    "channel_feedforward.ffn.": "channel_ff.net.",
    "token_norm.": "token_norm.",
    "channel_norm.": "channel_norm.",
}


def ours_names(theirs: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """DyGLib's parameter names -> our DynamicLinkPredictor's."""
    out = {}
    for key, value in theirs.items():
        for block, ours_block in (("0.transformers.", "encoder.blocks."), ("0.mlp_mixers.", "encoder.mixers.")):
            if key.startswith(block):
                i, rest = key.removeprefix(block).split(".", 1)
                prefix = next(p for p in BLOCK_RENAMES if rest.startswith(p))
                out[f"{ours_block}{i}.{BLOCK_RENAMES[prefix]}{rest.removeprefix(prefix)}"] = value
                break
        else:
            prefix = next(p for p in RENAMES if key.startswith(p))
            out[RENAMES[prefix] + key.removeprefix(prefix)] = value
    return out


def build(fx: dict, method: str) -> DynamicLinkPredictor:
    c = fx["meta"]["config"]
    common = dict(method=method, node_dim=c["node_feat_dim"], edge_dim=c["edge_feat_dim"], time_dim=c["time_feat_dim"],
                  num_layers=c["num_layers"], dropout=c["dropout"])  # fmt: skip
    if method == "dygformer":
        model = DynamicLinkPredictor(
            **common, channel_dim=c["channel_embedding_dim"], patch_size=c["patch_size"], heads=c["num_heads"]
        )
    else:
        model = DynamicLinkPredictor(**common, num_neighbors=c["num_tokens"])
    model.load_state_dict(ours_names(fx["state"]), strict=True)
    return model.train()


def batch(fx: dict, method: str, node_features: torch.Tensor | None = None) -> dict:
    """Our datamodule's batch (its own ``_pair`` collate code) for the fixture's queries and negatives."""
    c, stream, q = fx["meta"]["config"], fx["inputs"]["stream"], fx["inputs"]["batch"]
    data = Interactions(*(stream[k].numpy() for k in ("src", "dst", "ts", "edge_ids")))
    finder = NeighborFinder(data, int(fx["inputs"]["node_features"].shape[0] - 1))
    dm = DynamicLinkDataModule.__new__(DynamicLinkDataModule)  # the collate methods only, no dataset file
    dm.node_features = fx["inputs"]["node_features"] if node_features is None else node_features
    dm.edge_features = fx["inputs"]["edge_features"]
    dm.layout = "dygformer" if method == "dygformer" else "recent"
    dm.max_length, dm.patch_size = c.get("max_input_sequence_length", 32), c.get("patch_size", 1)
    dm.num_neighbors = c.get("num_neighbors", 20)
    src, dst, ts, neg = (q[k].numpy() for k in ("src", "dst", "ts", "neg_dst"))
    return {"pos": dm._pair(finder, src, dst, ts), "neg": dm._pair(finder, src, neg, ts)}


@pytest.mark.parametrize("method", ["dygformer", "graphmixer"])
def test_embeddings_probabilities_loss_gradients_and_one_adam_step_equal_dyglibs(parity, method):
    fx = parity.load(f"dyglib_{method}")
    parity.describe(
        method=method,
        task="dygmoce",
        compared="temporal embeddings, link probabilities, BCE loss, gradients, one Adam step",
    )
    model = build(fx, method)
    optimizer = torch.optim.Adam(model.parameters(), lr=fx["meta"]["optimizer"]["lr"])
    b = batch(fx, method)
    src, dst, _ = model.encoder(b["pos"])
    neg_src, neg_dst, _ = model.encoder(b["neg"])
    for name, ours in {"src_emb": src, "dst_emb": dst, "neg_src_emb": neg_src, "neg_dst_emb": neg_dst}.items():
        parity.compare(name, ours, fx["outputs"][name])
    pos, neg, _ = model.scores(b)
    parity.compare("pos_prob", torch.sigmoid(pos), fx["outputs"]["pos_prob"])
    parity.compare("neg_prob", torch.sigmoid(neg), fx["outputs"]["neg_prob"])
    loss = model.step_loss(b).loss
    parity.compare("BCE loss", loss, fx["loss"])
    optimizer.zero_grad()
    loss.backward()
    d = 4 * fx["meta"]["config"].get("channel_embedding_dim", 0)  # DyGFormer's attention width
    key_bias = (
        {f"encoder.blocks.{i}.attention.in_proj_bias": slice(d, 2 * d) for i in range(len(model.encoder.blocks))}
        if method == "dygformer"
        else {}
    )
    compare_gradients_and_step(
        parity,
        dict(model.named_parameters()),
        optimizer,
        ours_names(fx["grads"]),
        ours_names(fx["after_step"]),
        key_bias,
    )


def test_graphmixer_leaves_out_dyglibs_neighbour_feature_average(parity):
    fx = parity.load("dyglib_graphmixer")
    parity.describe(method="graphmixer", task="dygmoce", compared="embeddings with non-zero node features")
    case = fx["with_node_features"]
    model = build(fx, "graphmixer")
    with torch.no_grad():
        src, dst, _ = model.encoder(batch(fx, "graphmixer", case["node_features"])["pos"])
    why = "DyGLib adds the mean of the last time_gap neighbours' node features; ours omits it (zero on UCI)"
    parity.differs("src_emb with node features", src, case["src_emb"], at_least=1e-4, why=why)


MODES = ("unlimited", "time_window", "repeat_interval", "repeat_threshold")


def _edgebank_data(fx: dict):
    inp = fx["inputs"]
    full = Interactions(*(inp[k].numpy() for k in ("src", "dst", "ts", "edge_ids")))
    n_train, n_val, _ = fx["meta"]["config"]["split"]

    def part(sl: slice) -> Interactions:
        return Interactions(full.src[sl], full.dst[sl], full.ts[sl], full.edge_ids[sl])

    return part(slice(0, n_train)), part(slice(n_train, n_train + n_val)), part(slice(n_train + n_val, None))


@pytest.mark.parametrize("mode", MODES)
def test_edgebank_scores_and_batch_metrics_equal_dyglibs(parity, mode):
    fx = parity.load("dyglib_edgebank")
    parity.describe(method="edgebank", task="dygmoce", compared="scores and per-batch AP / AUC, four memory modes")
    train, val, test = _edgebank_data(fx)
    history = Interactions(
        *(np.concatenate([getattr(train, a), getattr(val, a)]) for a in ("src", "dst", "ts", "edge_ids"))
    )
    neg_dst, bs = fx["inputs"]["neg_dst"].numpy(), fx["meta"]["config"]["batch_size"]
    window = fx["meta"]["config"]["time_window_proportion"]
    pos, neg = edgebank_scores(history, test, test, test.src, neg_dst, bs, mode, window)
    theirs = fx["outputs"][mode]
    parity.compare(f"{mode}/pos scores", pos, theirs["pos"], tolerance=0.0)
    parity.compare(f"{mode}/neg scores", neg, theirs["neg"], tolerance=0.0)
    # the LightningModule's test_step (what the benchmark rows run) on the same batches
    module = EdgeBankPredictor(memory=mode, window=window)
    split = types.SimpleNamespace(train=train, val=val, test=test)
    module._trainer = types.SimpleNamespace(datamodule=types.SimpleNamespace(split=split, strategies=["random"]))
    for i, start in enumerate(range(0, len(test.src), bs)):
        sl = slice(start, start + bs)
        ids = {"src": test.src[sl], "dst": test.dst[sl], "neg_src": test.src[sl], "neg_dst": neg_dst[sl],
               "edge_ids": test.edge_ids[sl]}  # fmt: skip
        module.test_step({"ids": {k: torch.from_numpy(v) for k, v in ids.items()}}, i)
    rows = module._eval.rows[0]
    parity.compare(f"{mode}/batch AP", [r["ap"] for r in rows], theirs["batch_ap"], tolerance=1e-12)
    parity.compare(f"{mode}/batch AUC", [r["auc"] for r in rows], theirs["batch_auc"], tolerance=1e-12)
    assert [batch_metrics(pos[s : s + bs], neg[s : s + bs])["ap"] for s in range(0, len(pos), bs)] == pytest.approx(
        theirs["batch_ap"].tolist()
    )
