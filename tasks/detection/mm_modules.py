"""The modules DroneDINO registers into mmdet's ``MODELS`` registry (importing this module needs mmdet + mmcv).

- ``ZooTimmBackbone``: any timm model as a multi-scale backbone (``features_only``), from scratch (no weights can
  be downloaded here) or from a local state dict (``checkpoint``).
- ``HeteroMoEFFN``: `zoo_tasks.detection.moe_ffn.HeteroMoEFFN`, registered as is.
- ``DroneDINO``: mmdet's ``DINO`` (subclassed, nothing re-implemented) whose encoder / decoder layers get
  ``HeteroMoEFFN`` blocks in place of their FFN (``moe_cfg``, ``moe_in``), and an optional second (IR) backbone
  for the two-stream RGB-IR path: per level ``fuse_l(concat(rgb_l, ir_l))`` with a 1x1 conv, as the
  DINO-based RGB-IR detectors (e.g. ICAFusion-style mid-level fusion) do. Inputs of an ``rgbir`` batch are
  (B, 6, H, W): RGB channels 0-2, IR 3-5. With ``two_stream``, single-modality IR images use the IR backbone.
"""

from __future__ import annotations

import timm
import torch
from mmdet.models.detectors import DINO
from mmdet.registry import MODELS
from mmengine.model import BaseModule
from torch import Tensor, nn

from zoo_tasks.detection.checkpoints import load_state_dict
from zoo_tasks.detection.moe_ffn import HeteroMoEFFN, MoEContext

MODELS.register_module(name="HeteroMoEFFN", module=HeteroMoEFFN, force=True)


def timm_channels(model_name: str, out_indices: tuple[int, ...]) -> list[int]:
    """Channels of the timm model's feature levels ``out_indices`` (built once on the meta device: no weights)."""
    with torch.device("meta"):
        model = timm.create_model(model_name, pretrained=False, features_only=True, out_indices=out_indices)
    return list(model.feature_info.channels())


@MODELS.register_module(force=True)
class ZooTimmBackbone(BaseModule):
    """timm backbone for mmdet (timm: Wightman 2019): ``forward(x (B, C, H, W)) -> tuple of (B, C_l, H/s_l, W/s_l)``.

    ``checkpoint``: a local state dict (or mmengine checkpoint) of the timm model, loaded with the safe loader;
    None = random init (this project cannot download pretrained weights: say so when reporting numbers).
    """

    def __init__(
        self,
        model_name: str = "resnet18",
        out_indices: tuple = (2, 3, 4),
        checkpoint: str | None = None,
        in_chans: int = 3,
        init_cfg=None,
    ):
        super().__init__(init_cfg)
        self.model = timm.create_model(
            model_name, pretrained=False, features_only=True, out_indices=tuple(out_indices), in_chans=in_chans
        )
        self.checkpoint = checkpoint

    def init_weights(self) -> None:
        if self.checkpoint:
            state = load_state_dict(self.checkpoint)
            missing, unexpected = self.model.load_state_dict(state, strict=False)
            if len(missing) == len(self.model.state_dict()):
                from zoo.errors import ConfigError

                raise ConfigError(
                    f"backbone_weights {self.checkpoint}: no key matches timm's {type(self.model).__name__}"
                )

    def forward(self, x: Tensor) -> tuple[Tensor, ...]:
        return tuple(self.model(x))


@MODELS.register_module(force=True)
class DroneDINO(DINO):
    """DINO (Zhang et al., ICLR 2023) with DroneDINO's heterogeneous MoE FFNs and a two-stream RGB-IR input.

    Extra args: ``moe_cfg`` (a ``HeteroMoEFFN`` config without dims; None = DINO's dense FFNs), ``moe_in``
    (``"encoder"`` and/or ``"decoder"``), ``two_stream`` (build the IR backbone + fusion). Task ids and the
    modality come from each data sample's metainfo ``task_id`` / ``task``.
    """

    def __init__(
        self,
        *args,
        moe_cfg: dict | None = None,
        moe_in: tuple = ("encoder", "decoder"),
        two_stream: bool = False,
        **kwargs,
    ):
        self._moe_cfg, self._moe_in = moe_cfg, tuple(moe_in)
        super().__init__(*args, **kwargs)
        self.moe_context = MoEContext()
        self.task = "rgb"
        self.two_stream = two_stream
        if two_stream:
            self.backbone_ir = MODELS.build(kwargs["backbone"])
            channels = kwargs["neck"]["in_channels"]
            self.fusion = nn.ModuleList(nn.Conv2d(2 * c, c, 1) for c in channels)
        for block in self.moe_blocks():
            block.context = self.moe_context

    def _init_layers(self) -> None:
        super()._init_layers()
        if not self._moe_cfg:
            return
        for part in self._moe_in:
            for i, layer in enumerate(getattr(self, part).layers):
                dims = dict(
                    embed_dims=layer.ffn.embed_dims,
                    feedforward_channels=layer.ffn.feedforward_channels,
                    ffn_drop=layer.ffn_cfg.get("ffn_drop", 0.0),
                    name=f"{part}.{i}",
                )
                layer.ffn = MODELS.build({**self._moe_cfg, **dims})

    def moe_blocks(self) -> list[HeteroMoEFFN]:
        return [m for m in self.modules() if isinstance(m, HeteroMoEFFN)]

    def set_batch(self, batch_data_samples) -> None:
        """Task ids (B,) for the MoE blocks and the batch's modality, from the samples' metainfo; clears routings."""
        self.moe_context.task_ids = torch.tensor([s.metainfo["task_id"] for s in batch_data_samples], dtype=torch.long)
        self.moe_context.routings = {}
        self.task = batch_data_samples[0].metainfo["task"]

    def extract_feat(self, batch_inputs: Tensor) -> tuple[Tensor]:
        if batch_inputs.shape[1] == 6:
            if not self.two_stream:
                raise ValueError("an RGB-IR batch (6 channels) needs a DroneDINO built with two_stream=True")
            rgb, ir = self.backbone(batch_inputs[:, :3]), self.backbone_ir(batch_inputs[:, 3:])
            x = tuple(f(torch.cat([a, b], 1)) for f, a, b in zip(self.fusion, rgb, ir))
        elif self.two_stream and self.task == "ir":
            x = self.backbone_ir(batch_inputs)
        else:
            x = self.backbone(batch_inputs)
        return self.neck(x) if self.with_neck else x

    def loss(self, batch_inputs: Tensor, batch_data_samples):
        self.set_batch(batch_data_samples)
        return super().loss(batch_inputs, batch_data_samples)

    def predict(self, batch_inputs: Tensor, batch_data_samples, rescale: bool = True):
        self.set_batch(batch_data_samples)
        return super().predict(batch_inputs, batch_data_samples, rescale=rescale)
