"""DroneDINO on mmdet's real DINO (skipped without mmdet + mmcv ops: run scripts/install_detection.sh).

Tiny sizes (64 px, 1 encoder + 1 decoder layer, 20 queries): the registry builds mmdet's DINO with the MoE blocks
in place; the two-stream path trains on the SYNTHETIC RGB-IR pairs (loss decreases) and runs inference on the real
LLVIP pairs; every step's routing passes zoo.moe's router check; local backbone weights load with the safe loader.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

try:  # mmdet.models imports mmcv.ops, which mmcv-lite lacks
    import mmcv.ops  # noqa: F401
    import mmdet.models  # noqa: F401
except ImportError as exc:
    pytest.skip(f"mmdet / mmcv ops not installed ({exc}): scripts/install_detection.sh", allow_module_level=True)

import pytorch_lightning as pl  # noqa: E402
from mmdet.models.detectors import DINO  # noqa: E402
from pytorch_lightning.callbacks import ModelCheckpoint  # noqa: E402
from zoo_testing import KillAtStep, Killed, need_dataset, quiet_trainer  # noqa: E402

from zoo.callbacks.rng_state import RNGStateCheckpoint  # noqa: E402
from zoo.moe.testing import check_router_step  # noqa: E402
from zoo_tasks.detection.data import DetectionImages, DroneDetectionDataModule, LLVIPPairs, collate  # noqa: E402
from zoo_tasks.detection.module import DroneDINOModule  # noqa: E402
from zoo_tasks.detection.moe_ffn import HeteroMoEFFN  # noqa: E402
from zoo_tasks.detection.readers import synthetic_pairs  # noqa: E402

TINY = dict(ffn_dim=64, encoder_layers=1, decoder_layers=1, num_queries=20, num_dn_queries=10, num_dynamic=4)


def _module(**kw) -> DroneDINOModule:
    torch.manual_seed(0)
    return DroneDINOModule(**{**TINY, **kw})


@pytest.fixture(scope="module")
def two_stream():
    return _module(moe="hetero", two_stream=True, aux_weights={"load_balance": 0.01, "task_recognition": 0.1})


def _synthetic_batch(n=2, size=64):
    return collate([DetectionImages(synthetic_pairs(n, size, seed=5), size)[i] for i in range(n)])


def test_registry_builds_mmdets_dino_with_moe_blocks(two_stream):
    det = two_stream.detector
    assert isinstance(det, DINO)
    assert all(isinstance(layer.ffn, HeteroMoEFFN) for layer in [*det.encoder.layers, *det.decoder.layers])
    assert {b.name for b in det.moe_blocks()} == {"encoder.0", "decoder.0"}
    dense = _module(moe="none")
    assert not dense.detector.moe_blocks() and type(dense.detector.encoder.layers[0].ffn).__name__ == "FFN"


def test_two_stream_training_on_synthetic_pairs_lowers_the_loss(two_stream):
    batch = _synthetic_batch()
    assert batch["ir"] is not None and batch["task"] == "rgbir"
    opt = torch.optim.AdamW(two_stream.parameters(), lr=2e-4)
    losses = []
    for _ in range(8):
        torch.manual_seed(1)  # the same denoising queries each step: the loss change is the learning
        loss, routing = two_stream.loss_and_routing(batch)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert set(routing) == {"encoder.0", "decoder.0"}
    assert losses[-1] < 0.9 * losses[0], losses


def test_every_step_routing_passes_the_router_check(two_stream):
    loss, routing = two_stream.loss_and_routing(_synthetic_batch())
    assert all("task_recognition" in r.aux for r in routing.values())
    check_router_step(two_stream.detector, loss, routing)


def test_llvip_pairs_inference_shapes(two_stream):
    pairs = LLVIPPairs(size=64, data_dir=str(need_dataset("LLVIP-pairs")))
    batch = collate([pairs[0], pairs[1]])
    two_stream.eval()
    with torch.no_grad():
        x, samples = two_stream.mmdet_inputs(batch)
        assert x.shape == (2, 6, 64, 64)
        preds = two_stream.detector.predict(x, samples, rescale=True)
    two_stream.train()
    for p in preds:
        boxes = p.pred_instances.bboxes
        assert boxes.shape == (20, 4) and p.pred_instances.scores.shape == (20,)
        assert (boxes[:, 2] <= 1280 + 1e-3).all() and (boxes[:, 3] <= 1024 + 1e-3).all()  # original 1280x1024 pixels


def test_backbone_loads_local_mmengine_style_weights(tmp_path):
    from mmengine.logging.history_buffer import HistoryBuffer

    from zoo.errors import ConfigError

    source = _module(moe="none")
    state = {k[len("model.") :]: v for k, v in source.detector.backbone.state_dict().items()}
    ckpt = {"state_dict": state, "meta": {"epoch": np.int64(3), "lr": np.float64(1e-4), "hist": np.arange(3)}}
    path = tmp_path / "resnet18.pth"
    torch.save(ckpt, path)
    loaded = _module(moe="none", backbone_weights=str(path))
    for k, v in state.items():
        torch.testing.assert_close(loaded.detector.backbone.model.state_dict()[k], v)
    torch.save({**ckpt, "message_hub": {"log": HistoryBuffer([1.0], [1])}}, path)
    with pytest.raises(
        ConfigError,
        match="holds objects the safe loader refuses \\(global mmengine.logging.history_buffer.HistoryBuffer\\)",
    ):
        _module(moe="none", backbone_weights=str(path))


def test_coco_metric_scores_perfect_and_shifted_predictions():
    from zoo_tasks.detection.data import CLASSES
    from zoo_tasks.detection.metrics import TaskCocoMetrics

    gt = [torch.tensor([[10.0, 10.0, 50.0, 40.0], [60.0, 60.0, 90.0, 100.0]])]
    labels = [torch.tensor([1, 0])]
    metrics = TaskCocoMetrics(CLASSES)
    perfect = {"bboxes": gt[0], "scores": torch.tensor([0.9, 0.8]), "labels": labels[0]}
    metrics.add("ir", [1], [(120, 120)], gt, labels, [perfect])
    shifted = {"bboxes": gt[0] + 15.0, "scores": torch.tensor([0.9, 0.8]), "labels": labels[0]}
    metrics.add("rgb", [1], [(120, 120)], gt, labels, [shifted])
    out = metrics.compute()
    assert out["ir"]["AP"] == pytest.approx(1.0) and out["ir"]["AP50"] == pytest.approx(1.0)
    assert out["rgb"]["AP50"] < 0.5 and out["rgb"]["AP"] < out["ir"]["AP"]
    assert "AP_small" not in out["ir"]  # both boxes are medium: COCO's -1 is not reported


def test_too_small_images_for_the_queries_are_a_config_error(two_stream):
    from zoo.errors import ConfigError

    with pytest.raises(
        ConfigError,
        match=r"inputs of 16x16 \(data.image_size, or data.train_crop in training\) give 7 encoder tokens, "
        r"fewer than model.num_queries=20",
    ):
        two_stream.mmdet_inputs(_synthetic_batch(size=16))


def test_lr_drop_epochs_multiply_every_group_by_a_tenth():
    module = _module(moe="none", lr=1e-4, backbone_lr=1e-5, lr_drop_epochs=[2])
    config = module.configure_optimizers()
    optimizer, drop = config["optimizer"], config["lr_scheduler"]["scheduler"]
    assert config["lr_scheduler"]["interval"] == "epoch"
    seen = []
    for _ in range(3):
        seen += [group["lr"] for group in optimizer.param_groups]
        optimizer.step()
        drop.step()
    assert seen == pytest.approx([1e-4, 1e-5, 1e-4, 1e-5, 1e-5, 1e-6])  # (rest, backbone) per epoch
    assert isinstance(_module(moe="none").configure_optimizers(), torch.optim.AdamW)  # no drop: the constant recipe


@pytest.mark.slow(reason="fits DINO three times a case")
@pytest.mark.parametrize("kill_at", [2, 4])  # mid-epoch 0; mid-epoch 1 after an end-of-epoch save
def test_a_run_killed_mid_epoch_resumes_to_the_uninterrupted_weights(tmp_path, kill_at):
    """Real HIT-UAV images (random crops and flips), DroneDINO with its routing noise and DINO's denoising queries:
    a fit stopped inside an epoch and resumed from the periodic ``last.ckpt`` ends with the same weights."""
    need_dataset("HIT-UAV")

    def fit(root, kill_at=None, ckpt_path=None):
        pl.seed_everything(0)
        dm = DroneDetectionDataModule(tasks=["ir"], image_size=64, batch_size=2, max_images=6, train_crop=56)
        model = DroneDINOModule(**TINY, moe="hetero", router="noisy_topk", checkpoint_every_s=1e-9)
        trainer = quiet_trainer(
            enable_checkpointing=True,
            max_epochs=2,
            limit_val_batches=0,
            callbacks=[ModelCheckpoint(dirpath=root, save_last=True), RNGStateCheckpoint()]
            + ([KillAtStep(kill_at)] if kill_at else []),
        )
        trainer.fit(model, dm, ckpt_path=ckpt_path, weights_only=False)
        return model, trainer

    uninterrupted, _ = fit(tmp_path / "full")
    with pytest.raises(Killed):
        fit(tmp_path / "killed", kill_at=kill_at)
    resumed, trainer = fit(tmp_path / "killed", ckpt_path=str(tmp_path / "killed" / "last.ckpt"))
    assert trainer.global_step == 6  # 3 batches per epoch
    for (name, a), b in zip(uninterrupted.state_dict().items(), resumed.state_dict().values()):
        assert torch.equal(a, b), name
