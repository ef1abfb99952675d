"""A sampler whose every epoch is a function of the epoch number, and whose place in an epoch goes into a checkpoint.

torchdata's ``StatefulDataLoader`` saves the iterator of its (batch) sampler with ``state_dict`` and, on restore,
calls ``iter()`` on the sampler and then ``load_state_dict`` on that iterator. :class:`EpochSampler` subclasses
define ``order(epoch)`` (indices, or batches of them); the iterator here serves it and reports ``{"epoch",
"served"}``, so a run killed mid-epoch continues with the rest of that epoch and the same epochs after it.

``zoo.data.resumable.EpochShuffleSampler`` predates this module and keeps its own copy of the iterator: moving it
onto this one changes the source hash of every forecasting and generation record (``zoo.code_closure``), so it
moves with their next full re-run.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from torch.utils.data import Sampler


class _EpochIterator(Iterator[Any]):
    """One epoch of an :class:`EpochSampler`: its ``order`` and how much of it was served."""

    def __init__(self, sampler: EpochSampler, epoch: int):
        self.sampler, self.epoch, self.served = sampler, epoch, 0
        self.order = sampler.order(epoch)

    def __next__(self) -> Any:
        if self.served >= len(self.order):
            raise StopIteration
        self.served += 1
        return self.order[self.served - 1]

    def state_dict(self) -> dict[str, int]:
        return {"epoch": self.epoch, "served": self.served}

    def load_state_dict(self, state: dict[str, int]) -> None:
        self.epoch, self.served = state["epoch"], state["served"]
        self.order = self.sampler.order(self.epoch)
        self.sampler.next_epoch = self.epoch + 1


class EpochSampler(Sampler):
    """Base class: each ``iter()`` starts the next epoch (0, 1, ...) and serves ``order(epoch)``.

    ``order`` must depend on the epoch number and the subclass's settings only (never on a global RNG), so that an
    epoch served after a restore equals the uninterrupted run's.
    """

    def __init__(self):
        self.next_epoch = 0

    def order(self, epoch: int) -> Sequence[Any]:
        raise NotImplementedError

    def __iter__(self) -> Iterator[Any]:
        epoch, self.next_epoch = self.next_epoch, self.next_epoch + 1
        return _EpochIterator(self, epoch)
