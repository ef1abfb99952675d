"""zoo.data.epoch_order: every epoch is the subclass's order for that epoch number, and an iterator restored from
its state serves the rest of its epoch and moves the sampler on to the next one."""

from zoo.data.epoch_order import EpochSampler


class _Tens(EpochSampler):
    def order(self, epoch: int) -> list[int]:
        return [10 * epoch + i for i in range(4)]


def test_each_iter_starts_the_next_epoch():
    sampler = _Tens()
    assert [list(sampler) for _ in range(3)] == [[0, 1, 2, 3], [10, 11, 12, 13], [20, 21, 22, 23]]


def test_a_restored_iterator_finishes_its_epoch_and_the_sampler_goes_on_from_there():
    first = _Tens()
    list(first)  # epoch 0
    it = iter(first)  # epoch 1
    next(it)
    state = it.state_dict()
    assert state == {"epoch": 1, "served": 1}

    restored = _Tens()
    again = iter(restored)  # what StatefulDataLoader does: iter(), then load_state_dict on the iterator
    again.load_state_dict(state)
    assert list(again) == [11, 12, 13]
    assert list(restored) == [20, 21, 22, 23]
