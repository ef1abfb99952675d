"""Training `zoo.moe` models over several processes through Lightning: :class:`ExpertParallelStrategy` (experts
spread over the ranks) and the optimizer-state resharding it uses. ``zoo.moe`` itself needs none of this."""

from zoo.distributed.optimizer_state import gather_optimizer_state, shard_optimizer_state
from zoo.distributed.strategy import ExpertParallelStrategy

__all__ = ["ExpertParallelStrategy", "gather_optimizer_state", "shard_optimizer_state"]
