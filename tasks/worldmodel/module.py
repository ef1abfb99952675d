"""The WestWorld task's LightningModule: one class, the method chosen by config.

Methods (``method``):
    westworld     Sys-MoE (CLS-gated dense mixture of ``num_experts`` FFNs) + structural embedding and mask;
    dense         the dense twin: one FFN of the mixture's active width, no system token;
    no_structure  WestWorld without the structural embedding / mask;
    trajworld     TrajWorld-like: same tokens, dense FFN, no structure, causal attention along time;
    mlp_ensemble  an MLP dynamics ensemble of one robot (``mlp_robot``), rolled out autoregressively;
    repeat_last   the last prefix observation, repeated (nothing to train);
    mean          the robot's mean state, i.e. 0 in the normalised space (nothing to train).

Token models read soft HL-Gauss bins of every normalised scalar and are trained with cross-entropy on the
next-step observation bins; observations after the ``prefix`` are hidden (a learned query token), as in the
reference's ``time_mask``, so one forward pass predicts the whole horizon from the prefix and the actions.
Evaluation (the reference's ``evaluation_westworld.py``): MAE / MSE between predicted and true observations at
steps ``prefix .. prefix + horizon - 1``, in the normalised space, over the dims that vary (mask-aware).
"""

from __future__ import annotations

from collections import defaultdict

import torch
import torch.nn.functional as F
from torch import Tensor

from zoo.errors import ConfigError
from zoo.task_module import MoETaskModule, StepLoss
from zoo_tasks.worldmodel.baselines import MLPEnsemble, predict_mean, repeat_last
from zoo_tasks.worldmodel.model import WestWorldNet
from zoo_tasks.worldmodel.tokens import BinSupport

TOKEN_METHODS = {
    "westworld": dict(moe=True, structure=True, temporal="mamba"),
    "dense": dict(moe=False, structure=True, temporal="mamba"),
    "no_structure": dict(moe=True, structure=False, temporal="mamba"),
    "trajworld": dict(moe=False, structure=False, temporal="attention"),
}
METHODS = (*TOKEN_METHODS, "mlp_ensemble", "repeat_last", "mean")


class WorldModel(MoETaskModule):
    """A trajectory world model over robot windows (see the module docstring; batches from
    `zoo_tasks.worldmodel.data.WestWorldDataModule`).

    Args:
        method: one of ``METHODS``.
        prefix: observed steps of an evaluation window (the data's ``prefix``).
        bins, bound, rel_sigma: value tokens (`BinSupport`: K bins of symlog values on [-bound, bound]).
        dim, blocks, heads, num_experts, ffn_hidden, d_state, mask_hops, dropout: the network (`WestWorldNet`).
        router, router_kwargs, top_k, aux_weights: the system gate (a ``zoo.moe`` router; the reference's gate is
            the dense softmax, ``soft``) and optional weighted aux losses on it.
        mlp_robot, mlp_hidden, mlp_members: the MLP ensemble's robot and size.
        lr, weight_decay, warmup_steps: AdamW with a linear warm-up.
        finetune_after, finetune_lr_scale: from optimiser step ``finetune_after`` on (the data's ``pretrain_steps``
            in the few-shot rows; 0 = never) the learning rate is multiplied by ``finetune_lr_scale``.
    """

    synced_stages = ("val", "test")
    optimizer_class = torch.optim.AdamW

    def __init__(
        self,
        method: str = "westworld",
        prefix: int = 20,
        bins: int = 256,
        bound: float = 2.5,
        rel_sigma: float = 0.75,
        dim: int = 32,
        blocks: int = 2,
        heads: int = 4,
        num_experts: int = 4,
        ffn_hidden: int = 64,
        d_state: int = 16,
        mask_hops: int = 2,
        dropout: float = 0.0,
        router: str = "soft",
        router_kwargs: dict | None = None,
        top_k: int = 1,
        aux_weights: dict[str, float] | None = None,
        mlp_robot: str = "gym_half_cheetah",
        mlp_hidden: int = 200,
        mlp_members: int = 5,
        lr: float = 1e-3,
        weight_decay: float = 1e-5,
        warmup_steps: int = 100,
        finetune_after: int = 0,
        finetune_lr_scale: float = 1.0,
    ):
        super().__init__()
        self.save_hyperparameters()
        self.aux_weights = dict(aux_weights or {})
        if method not in METHODS:
            raise ConfigError(f"model.init_args.method: unknown method {method!r}; valid: {', '.join(METHODS)}")
        self.support = BinSupport(bins, bound, rel_sigma)
        self.net = self.mlp = None
        if method in TOKEN_METHODS:
            self.net = WestWorldNet(
                bins=bins, dim=dim, blocks=blocks, heads=heads, num_experts=num_experts, ffn_hidden=ffn_hidden,
                d_state=d_state, mask_hops=mask_hops, router=router, router_kwargs=router_kwargs, top_k=top_k,
                dropout=dropout, **TOKEN_METHODS[method],
            )  # fmt: skip
        elif method == "mlp_ensemble":
            from zoo_tasks.worldmodel.robots import robot_structure

            s = robot_structure(mlp_robot)
            self.mlp = MLPEnsemble(s.obs_dim, s.act_dim, hidden=mlp_hidden, members=mlp_members)
        else:
            self.placeholder = torch.nn.Parameter(torch.zeros(()))  # repeat_last / mean: nothing to learn
        self._eval = defaultdict(lambda: torch.zeros(3, dtype=torch.float64))
        self._gates: dict[str, dict[str, list]] = defaultdict(lambda: defaultdict(list))
        self._plots: dict[str, str] = {}
        self._plot_pending: dict[str, tuple] = {}

    # ---- the token models ----
    def token_forward(self, batch: dict) -> tuple[Tensor, dict]:
        x = batch["x"]
        logits, routings = self.net(
            self.support.hl_gauss(x), batch["obs_dim"], self.hparams.prefix, batch["struct"], batch["dist"]
        )
        return logits, routings

    def step_loss(self, batch: dict) -> StepLoss:
        """The training loss of one batch and the routings of its mixtures ({} for dense models): cross-entropy of
        the next-step observation bins (token models), the ensemble's loss (MLP), + the weighted aux losses."""
        x = batch["x"]
        loss, routings = self._loss(batch)
        return StepLoss(loss, routings, {"loss": loss}, x.shape[0])

    def _loss(self, batch: dict) -> tuple[Tensor, dict]:
        x, do, valid = batch["x"], batch["obs_dim"], batch["obs_valid"]
        if self.mlp is not None:
            return self.mlp.loss(x, valid.to(x.dtype)), {}
        if self.net is None:
            return self.placeholder * 0.0, {}
        logits, routings = self.token_forward(batch)
        target = self.support.hl_gauss(x[:, 1:, :do])
        ce = -(target * F.log_softmax(logits[:, :-1], dim=-1)).sum(-1)  # (B, T-1, Do)
        w = valid.to(ce.dtype).expand_as(ce)
        return self.with_aux_loss((ce * w).sum() / w.sum().clamp_min(1), routings), routings

    @torch.no_grad()
    def predict_future(self, batch: dict) -> tuple[Tensor, dict]:
        """(B, T - prefix, Do) predicted observations after the prefix, and the routings."""
        x, do, p = batch["x"], batch["obs_dim"], self.hparams.prefix
        if self.mlp is not None:
            return self.mlp.rollout(x, p), {}
        if self.net is None:
            floor = repeat_last if self.hparams.method == "repeat_last" else predict_mean
            return floor(x, do, p), {}
        logits, routings = self.token_forward(batch)
        return self.support.decode(torch.softmax(logits[:, p - 1 : -1].float(), -1)), routings

    # ---- Lightning ----
    def evaluate(self, batch: dict, batch_idx: int, stage: str, dataloader_idx: int = 0) -> dict:
        """Accumulates the batch's absolute and squared errors after the prefix (per robot, logged at the epoch's
        end); at test time also the system-gate weights and the first window of each robot for its figure."""
        pred, routings = self.predict_future(batch)
        x, do, p = batch["x"], batch["obs_dim"], self.hparams.prefix
        true = x[:, p:, :do]
        w = batch["obs_valid"].to(pred.dtype).expand_as(pred)
        err = (pred - true) * w
        acc = self._eval[(stage, batch["robot"], batch.get("role", "heldout"))]
        acc += torch.stack([err.abs().sum(), err.pow(2).sum(), w.sum()]).double().cpu()
        if stage == "test":
            for name, r in routings.items():
                self._gates[batch["robot"]][name].append(r.dense_weights().mean(0).cpu())
            if batch["robot"] not in self._plot_pending:
                self._plot_pending[batch["robot"]] = (x[0, :, :do].cpu(), pred[0].cpu(), batch["obs_valid"].cpu())
        return routings

    def _log_stage(self, stage: str) -> None:
        keys = [k for k in self._eval if k[0] == stage]
        if not keys:
            return
        # the stage's metric pools its held-out robots (test) or all of them (val); "seen" robots get their own
        pooled = [k for k in keys if k[2] == "heldout"] or keys
        total = sum((self._eval[k] for k in pooled), torch.zeros(3, dtype=torch.float64))
        count = total[2].clamp_min(1)
        values = {"mae": float(total[0] / count), "mse": float(total[1] / count)}
        for k in keys:
            name = f"mae_{k[1]}" if k[2] == "heldout" else f"seen_mae_{k[1]}"
            sums = self._eval.pop(k)
            values[name] = float(sums[0] / sums[2].clamp_min(1))
        self.log_metrics(stage, values)

    def on_validation_epoch_end(self) -> None:
        self._log_stage("val")

    def on_test_epoch_end(self) -> None:
        self._log_stage("test")
        self._save_plots()

    def _save_plots(self) -> None:
        from zoo_tasks.worldmodel.plots import gate_heatmap, rollout_figure

        folder = self.log_folder() / "rollouts"
        for name, (true, pred, valid) in self._plot_pending.items():
            self._plots[name] = rollout_figure(true, pred, valid, self.hparams.prefix, name, folder / f"{name}.png")
        self._plot_pending.clear()
        if self._gates:
            self._plots["system_gate"] = gate_heatmap(self.system_gate(), folder.parent / "system_gate.png")

    def system_gate(self) -> dict[str, dict[str, list[float]]]:
        """Mean system-gate weight per expert, per test robot and block (the routing heatmap's data)."""
        return {
            robot: {block: torch.stack(ws).mean(0).tolist() for block, ws in blocks.items()}
            for robot, blocks in self._gates.items()
        }

    def extra_results(self) -> dict:
        return {"system_gate": self.system_gate(), "plots": dict(self._plots)}

    def lr_factor(self, step: int) -> float:
        """Linear warm-up over ``warmup_steps``, then 1; times ``finetune_lr_scale`` from ``finetune_after`` on."""
        h = self.hparams
        factor = min(1.0, (step + 1) / max(1, h.warmup_steps))
        return factor * (h.finetune_lr_scale if h.finetune_after and step >= h.finetune_after else 1.0)

    def lr_schedule(self, optimizer: torch.optim.Optimizer) -> dict:
        return {"scheduler": torch.optim.lr_scheduler.LambdaLR(optimizer, self.lr_factor), "interval": "step"}
