"""Re-verification by behaviour: renew a stale record without re-running it when its code's change cannot have
changed its numbers.

A record is stale when the source hash of its run's import closure (``zoo.code_closure``) differs from HEAD's. Its
row need not be re-run when the old code and HEAD's behave the same on it, bit for bit. That is decided by a
**probe** (``probe_worker``) run twice on this machine with the record's torch threads: once in a clean tree of a
commit that holds the record's code (its source hash is checked against that tree), once in a clean tree of HEAD.
A probe runs the record's own resolved config and seed: a few optimiser steps on the real data (each step's loss,
logged scalars and batch; every parameter and optimiser state after them), validation and test on a few batches,
``extra_results()`` and the routing statistics; the full-length run's optimisers, LR schedulers (stepped through
the whole run without training, every learning rate recorded) and callback settings; and a hash of the data
module after ``setup`` for every (seed, fold) of the group. Equal probe hashes re-stamp the records (``restamp``:
same numbers, new source hash, one more ``verified`` link); anything else, a failure included, leaves them stale
for ``zoo reproduce --rerun-stale`` to re-run. A group whose records remember their last re-verification's probe
(``remembered``: same code, probe worker, threads, CPU kind and versions) is probed at HEAD only, and at its base
commit only when HEAD's probe differs, which halves the cost of re-verifying after a refactor.

**Groups** (``groups``). One probe answers for the stale records of one task that share the source hash, the torch
thread count and the resolved config except the seed, the fold and the run folder. Why such a group cannot hide a
change that reaches one of its records:

* its records import the same files (equal source hash: byte-equal closures) and build the same objects with the
  same arguments (equal config), so they execute the same code except where the code reads the seed or the fold;
* the datasets are part of the config (name, path, reader class), so a change in one dataset's reader reaches the
  groups of that dataset's rows, each probed on that dataset with the real files;
* the code that reads the seed or the fold is the data split (fold assignment, shuffles of split indices): the
  probe hashes the data module after ``setup`` for *every* (seed, fold) of the group, which needs no training;
  the model's initialisation and the batch order under other seeds run the same code as under the probe's seed;
* the thread count is part of the key: CPU float sums depend on it, and so might a change.

What a probe cannot see, and why the records stay honest anyway: code that runs only late in a run and is not an
LR scheduler or a callback setting (a branch taken after epoch N, a module's own schedule computed in
``training_step`` from its step counter, as PPO's linear rate, a reader path taken only by files the probe's
batches do not touch in a lazily read dataset). Such a change between two commits is not seen by the short run.
The ``verified`` entry names both commits and the probe hash, so a reader can always see which records were
renewed by probe rather than by a run.
"""
