"""Export DyGLib parity fixtures (yule-BUAA/DyGLib): DyGFormer and GraphMixer (temporal embeddings, link
probabilities, BCE loss, gradients, one Adam step) on a tiny hand-built event stream, and EdgeBank's scores under
its four memory modes with DyGLib's per-batch history.

    python scripts/parity/export_dyglib.py --upstream /tmp/upstream/dyglib --commit SHA \
        --out tests/fixtures/parity/dyglib_{dygformer,graphmixer,edgebank}.pt   (the file name picks the model)

The neighbour sampler is DyGLib's own (``utils.utils.get_neighbor_sampler`` on a ``utils.DataLoader.Data``), so
the model sees exactly the neighbour lists DyGLib's training loop would give it; dropout is 0 so both sides are
deterministic. Numbers only are saved; no upstream code is needed to run the test."""

from __future__ import annotations

import sys

import numpy as np
import torch
from fixture_io import exported_with, exporter_args, grads_and_step, save_fixture  # noqa: E402 (sibling module)
from torch import nn

NODES, EVENTS, FEAT = 6, 30, 4
LR = 1e-3


def event_stream(num_events: int, seed: int) -> dict[str, np.ndarray]:
    """(src, dst, ts, edge_ids) of a stream on nodes 1..NODES, times non-decreasing with ties, edge ids 1..N."""
    rng = np.random.RandomState(seed)
    src = rng.randint(1, NODES + 1, num_events)
    dst = (src + rng.randint(1, NODES, num_events) - 1) % NODES + 1  # never a self-loop
    ts = np.cumsum(rng.randint(0, 4, num_events)).astype(np.float64) + 1.0
    return {
        "src": src.astype(np.int64),
        "dst": dst.astype(np.int64),
        "ts": ts,
        "edge_ids": np.arange(1, num_events + 1),
    }


def sampler(stream: dict, strategy: str):
    from utils.DataLoader import Data
    from utils.utils import get_neighbor_sampler

    data = Data(stream["src"], stream["dst"], stream["ts"], stream["edge_ids"], np.zeros(len(stream["src"])))
    return get_neighbor_sampler(data, sample_neighbor_strategy=strategy, seed=0)


def export_model(name: str, args) -> dict:
    """One training step of DyGLib's ``train_link_prediction.py`` for ``name`` on the last 6 events."""
    from models.DyGFormer import DyGFormer
    from models.GraphMixer import GraphMixer
    from models.modules import MergeLayer

    torch.manual_seed(0)
    stream = event_stream(EVENTS, seed=1)
    rng = np.random.RandomState(2)
    edge_feat = rng.randn(EVENTS + 1, FEAT).astype(np.float32)
    edge_feat[0] = 0.0
    node_feat = rng.randn(NODES + 1, FEAT).astype(np.float32)
    node_feat[0] = 0.0
    if name == "graphmixer":
        node_feat_random, node_feat = node_feat, np.zeros_like(node_feat)  # UCI has no node features
    q = slice(EVENTS - 6, EVENTS)
    batch = {"src": stream["src"][q], "dst": stream["dst"][q], "ts": stream["ts"][q]}
    batch["neg_dst"] = rng.randint(1, NODES + 1, 6).astype(np.int64)
    if name == "dygformer":
        config = dict(
            time_feat_dim=8,
            channel_embedding_dim=4,
            patch_size=2,
            num_layers=2,
            num_heads=2,
            dropout=0.0,
            max_input_sequence_length=8,
        )
        backbone = DyGFormer(node_feat, edge_feat, sampler(stream, "recent"), device="cpu", **config)
        call_kw = {}
        call = (
            "DyGFormer(...).compute_src_dst_node_temporal_embeddings(src_node_ids, dst_node_ids, node_interact_times)"
        )
    else:
        config = dict(time_feat_dim=8, num_tokens=5, num_layers=2, dropout=0.0)
        backbone = GraphMixer(node_feat, edge_feat, sampler(stream, "recent"), device="cpu", **config)
        call_kw = {"num_neighbors": 5, "time_gap": 2000}
        call = (
            "GraphMixer(...).compute_src_dst_node_temporal_embeddings(src_node_ids, dst_node_ids, "
            "node_interact_times, num_neighbors=5, time_gap=2000)"
        )
    model = nn.Sequential(backbone, MergeLayer(FEAT, FEAT, FEAT, 1))
    state = {k: v.clone() for k, v in model.state_dict().items()}
    optimizer = torch.optim.Adam(model.parameters(), lr=LR)
    embed = model[0].compute_src_dst_node_temporal_embeddings
    src_emb, dst_emb = embed(batch["src"], batch["dst"], batch["ts"], **call_kw)
    neg_src_emb, neg_dst_emb = embed(batch["src"], batch["neg_dst"], batch["ts"], **call_kw)
    pos = model[1](input_1=src_emb, input_2=dst_emb).squeeze(dim=-1).sigmoid()
    neg = model[1](input_1=neg_src_emb, input_2=neg_dst_emb).squeeze(dim=-1).sigmoid()
    predicts = torch.cat([pos, neg])
    loss = nn.BCELoss()(input=predicts, target=torch.cat([torch.ones_like(pos), torch.zeros_like(neg)]))
    optimizer.zero_grad()
    loss.backward()
    grads, after = grads_and_step(model, optimizer)
    outputs = {
        "src_emb": src_emb,
        "dst_emb": dst_emb,
        "neg_src_emb": neg_src_emb,
        "neg_dst_emb": neg_dst_emb,
        "pos_prob": pos,
        "neg_prob": neg,
    }
    fixture_inputs = {
        "stream": {k: torch.from_numpy(np.asarray(v)) for k, v in stream.items()},
        "batch": {k: torch.from_numpy(np.asarray(v)) for k, v in batch.items()},
        "node_features": torch.from_numpy(node_feat),
        "edge_features": torch.from_numpy(edge_feat),
    }
    extra = {}
    if name == "graphmixer":  # the same weights with node features: DyGLib adds a neighbour average (time_gap)
        model.load_state_dict(state)
        model[0].node_raw_features = torch.from_numpy(node_feat_random)
        with torch.no_grad():
            s, d = model[0].compute_src_dst_node_temporal_embeddings(batch["src"], batch["dst"], batch["ts"], **call_kw)
        extra = {
            "with_node_features": {"node_features": torch.from_numpy(node_feat_random), "src_emb": s, "dst_emb": d}
        }
    return {
        "meta": {
            "upstream": "yule-BUAA/DyGLib",
            "commit": args.commit,
            "call": f"{call}; MergeLayer(...)(input_1, input_2).squeeze(-1).sigmoid(); nn.BCELoss()(cat[pos, neg], "
            "cat[1, 0]); backward; Adam step (train_link_prediction.py's per-batch step, negatives' source = source)",
            "config": {**config, **call_kw, "node_feat_dim": FEAT, "edge_feat_dim": FEAT, "sampler": "recent"},
            "optimizer": {"name": "Adam", "lr": LR},
            "exported_with": exported_with(),
        },
        "inputs": fixture_inputs,
        "state": state,
        "outputs": outputs,
        "loss": loss,
        "grads": grads,
        "after_step": after,
        **extra,
    }


MEMORY = {  # fixture key: (edge_bank_memory_mode, time_window_mode)
    "unlimited": ("unlimited_memory", "fixed_proportion"),
    "time_window": ("time_window_memory", "fixed_proportion"),
    "repeat_interval": ("time_window_memory", "repeat_interval"),
    "repeat_threshold": ("repeat_threshold_memory", "fixed_proportion"),
}


def export_edgebank(args) -> dict:
    """DyGLib's ``evaluate_edge_bank_link_prediction`` loop (history = train + val + earlier test edges per batch)
    on a 60-event stream split 42 / 9 / 9, test batches of 3, random negatives (source kept)."""
    from models.EdgeBank import edge_bank_link_prediction
    from utils.DataLoader import Data
    from utils.metrics import get_link_prediction_metrics

    stream = event_stream(60, seed=3)
    stream["src"], stream["dst"] = (stream["src"] - 1) % 4 + 1, (stream["dst"] - 1) % 4 + 1  # fewer pairs: repeats
    stream["dst"] = np.where(stream["dst"] == stream["src"], stream["dst"] % 4 + 1, stream["dst"])
    neg_dst = np.random.RandomState(4).randint(1, 5, 9).astype(np.int64)
    labels = np.zeros(60)
    part = {"train": slice(0, 42), "val": slice(42, 51), "test": slice(51, 60)}
    data = {
        k: Data(stream["src"][s], stream["dst"][s], stream["ts"][s], stream["edge_ids"][s], labels[s])
        for k, s in part.items()
    }
    train_val = Data(
        *(
            np.concatenate([getattr(data["train"], a), getattr(data["val"], a)])
            for a in ("src_node_ids", "dst_node_ids", "node_interact_times", "edge_ids", "labels")
        )
    )
    test = data["test"]
    outputs = {}
    for key, (memory_mode, window_mode) in MEMORY.items():
        pos_all, neg_all, ap, auc = [], [], [], []
        for start in range(0, 9, 3):
            idx = np.arange(start, start + 3)
            history = Data(
                *(
                    np.concatenate([getattr(train_val, a), getattr(test, a)[: idx[0]]])
                    for a in ("src_node_ids", "dst_node_ids", "node_interact_times", "edge_ids", "labels")
                )
            )
            pos, neg = edge_bank_link_prediction(
                history_data=history,
                positive_edges=(test.src_node_ids[idx], test.dst_node_ids[idx]),
                negative_edges=(test.src_node_ids[idx], neg_dst[idx]),
                edge_bank_memory_mode=memory_mode,
                time_window_mode=window_mode,
                time_window_proportion=0.15,
            )
            predicts = torch.from_numpy(np.concatenate([pos, neg])).float()
            metric = get_link_prediction_metrics(predicts, torch.cat([torch.ones(len(pos)), torch.zeros(len(neg))]))
            (
                pos_all.append(pos),
                neg_all.append(neg),
                ap.append(metric["average_precision"]),
                auc.append(metric["roc_auc"]),
            )
        outputs[key] = {
            "pos": torch.from_numpy(np.concatenate(pos_all)),
            "neg": torch.from_numpy(np.concatenate(neg_all)),
            "batch_ap": torch.tensor(ap, dtype=torch.float64),
            "batch_auc": torch.tensor(auc, dtype=torch.float64),
        }
    return {
        "meta": {
            "upstream": "yule-BUAA/DyGLib",
            "commit": args.commit,
            "call": "models.EdgeBank.edge_bank_link_prediction(history_data=train+val+test[:batch start], ...) per "
            "test batch of 3, then utils.metrics.get_link_prediction_metrics",
            "config": {"split": [42, 9, 9], "batch_size": 3, "time_window_proportion": 0.15, "modes": MEMORY},
            "exported_with": exported_with(),
        },
        "inputs": {
            **{k: torch.from_numpy(np.asarray(v)) for k, v in stream.items()},
            "neg_dst": torch.from_numpy(neg_dst),
        },
        "outputs": outputs,
    }


def main() -> None:
    args = exporter_args(__doc__.splitlines()[0])
    sys.path.insert(0, str(args.upstream))
    name = args.out.stem.removeprefix("dyglib_")
    fixture = export_edgebank(args) if name == "edgebank" else export_model(name, args)
    save_fixture(args.out, fixture)


if __name__ == "__main__":
    main()
