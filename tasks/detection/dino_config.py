"""The mmdet config of a (Drone)DINO: mmdet's own ``dino-4scale_r50_8xb2-12e_coco.py`` with sizes overridden.

Read from the installed mmdet package (``mmdet/.mim/configs``), so the detector is exactly mmdet's DINO
recipe (two-stage, box refinement, contrastive denoising, focal + L1 + GIoU losses, Hungarian matching) with
a timm backbone, DroneDINO's MoE blocks and smaller widths for this machine. Built through ``MODELS.build``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

DINO_CONFIG = "dino/dino-4scale_r50_8xb2-12e_coco.py"


def mmdet_config_file(relative: str = DINO_CONFIG) -> Path:
    import mmdet

    path = Path(mmdet.__file__).parent / ".mim" / "configs" / relative
    if not path.is_file():
        raise FileNotFoundError(f"mmdet's config {relative} is missing from the installed mmdet ({path})")
    return path


def dino_model_config(
    num_classes: int,
    backbone: str = "resnet18",
    backbone_weights: str | None = None,
    out_indices: tuple[int, ...] = (2, 3, 4),
    embed_dims: int = 128,
    num_heads: int = 8,
    ffn_dim: int = 512,
    encoder_layers: int = 2,
    decoder_layers: int = 2,
    num_queries: int = 100,
    num_dn_queries: int = 50,
    moe_cfg: dict[str, Any] | None = None,
    moe_in: tuple[str, ...] = ("encoder", "decoder"),
    two_stream: bool = False,
) -> dict:
    """A plain-dict model config for ``MODELS.build`` (``type="DroneDINO"``, mmdet's DINO subclass)."""
    from mmengine.config import Config

    from zoo_tasks.detection.mm_modules import timm_channels

    model = Config.fromfile(str(mmdet_config_file())).model.to_dict()
    channels = timm_channels(backbone, tuple(out_indices))
    num_levels = len(channels) + 1  # the neck adds one strided level, as DINO-4scale does on ResNet C3-C5
    model.update(
        type="DroneDINO",
        num_queries=num_queries,
        moe_cfg=moe_cfg,
        moe_in=tuple(moe_in),
        two_stream=two_stream,
        data_preprocessor=None,
    )
    model["backbone"] = dict(
        type="ZooTimmBackbone", model_name=backbone, out_indices=tuple(out_indices), checkpoint=backbone_weights
    )
    model["neck"].update(in_channels=channels, out_channels=embed_dims, num_outs=num_levels)
    enc, dec = model["encoder"], model["decoder"]
    enc["num_layers"], dec["num_layers"] = encoder_layers, decoder_layers
    enc["layer_cfg"]["self_attn_cfg"].update(embed_dims=embed_dims, num_levels=num_levels, num_heads=num_heads)
    dec["layer_cfg"]["self_attn_cfg"].update(embed_dims=embed_dims, num_heads=num_heads)
    dec["layer_cfg"]["cross_attn_cfg"].update(embed_dims=embed_dims, num_levels=num_levels, num_heads=num_heads)
    for part in (enc, dec):
        part["layer_cfg"]["ffn_cfg"].update(embed_dims=embed_dims, feedforward_channels=ffn_dim)
    model["positional_encoding"]["num_feats"] = embed_dims // 2
    model["bbox_head"].update(num_classes=num_classes, embed_dims=embed_dims)
    model["dn_cfg"]["group_cfg"]["num_dn_queries"] = num_dn_queries
    model["test_cfg"]["max_per_img"] = num_queries
    return model
