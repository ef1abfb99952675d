"""Training steps of several models, one at a time in turn, each through its own ``trainer.fit`` in one process.

Each model's fit runs in its own thread; a :class:`Baton` lets exactly one of them run at any moment, and a
:class:`StepClock` (the first callback of each trainer) passes it on after every training step, so the steps
interleave model by model (A, B, A, B, ...) and a load that drifts over the run hits every model alike. The other
threads wait on a condition variable meanwhile: a timed step never shares the process with another model's work
(data loading, validation and Lightning's own loop run on the stepping thread too, but outside the clock).

One training step is what Lightning does between ``on_train_batch_start`` and ``on_train_batch_end``: the
module's ``training_step`` (forward), the backward pass and the optimiser step (with gradient clipping and
zeroing, as the trainer is configured), or, under manual optimisation, whatever ``training_step`` does itself (an RL
agent's environment step and updates). Only steps that trained count (a step returning None, an agent filling its
replay buffer, does not); of those, ``warmup`` are dropped, ``repeats`` are timed (wall: ``time.perf_counter``; CPU:
``time.process_time`` of the process, whose other model threads are idle), then ``profiled`` more run under a
probe (default ``zoo.bench.phase_split.ProfiledStep``, the phase split; ``zoo.bench.flop_step.CountedStep`` counts
FLOPs), and the fit is stopped.

A module that counts its environment steps (``_timing_so_far()["fit_env_steps"]``, the RL agents) gets each timed
step's environment steps recorded too, so that env steps per second follow from the same steps.
"""

from __future__ import annotations

import threading
import time

import pytorch_lightning as pl


class Baton:
    """Strict turn-taking between named runners (threads): ``wait(name)`` returns on ``name``'s turn, ``pass_on``
    gives the turn to the next runner still in, ``leave`` takes a runner out for good (passing the turn on), and
    ``finish`` does so and then waits until every runner is out (so that a finished fit's teardown never runs beside
    another's timed step)."""

    def __init__(self, names: list[str]) -> None:
        self.names, self.turn, self.gone = list(names), 0, set()
        self.cond = threading.Condition()

    def _advance(self) -> None:
        for _ in range(len(self.names)):
            self.turn = (self.turn + 1) % len(self.names)
            if self.names[self.turn] not in self.gone:
                return

    def wait(self, name: str) -> None:
        with self.cond:
            self.cond.wait_for(lambda: self.names[self.turn] == name or name in self.gone)

    def pass_on(self, name: str) -> None:
        with self.cond:
            if self.names[self.turn] == name:
                self._advance()
                self.cond.notify_all()

    def leave(self, name: str) -> None:
        with self.cond:
            self.gone.add(name)
            if self.names[self.turn] == name:
                self._advance()
            self.cond.notify_all()

    def finish(self, name: str) -> None:
        self.leave(name)
        with self.cond:
            self.cond.wait_for(lambda: self.gone >= set(self.names))


def env_steps(module: pl.LightningModule) -> int | None:
    """The environment steps the module's fits have made so far, if it counts them (None: it does not)."""
    timing = getattr(module, "_timing_so_far", None)
    if not callable(timing):
        return None
    value = timing().get("fit_env_steps")
    return int(value) if value is not None else None


class StepClock(pl.Callback):
    """Times one model's training steps in turn with the others (see the module doc).

    After the fit: ``wall_ms`` / ``cpu_ms`` (one entry per timed step), ``env_steps`` (per timed step, or None),
    ``profiles`` (``ProfiledStep.stop()`` of each profiled step), ``timeline`` (``(name, start, end)`` of every
    timed or profiled step, ``time.perf_counter`` seconds, shared by all clocks of one run)."""

    def __init__(
        self, name: str, baton: Baton, barrier: threading.Barrier, timeline: list, counts: tuple[int, ...], probe=None
    ):
        self.name, self.baton, self.barrier, self.timeline = name, baton, barrier, timeline
        self.probe = probe  # a class built on the module, with start() and stop() -> dict; None: ProfiledStep
        self.warmup, self.repeats, self.profiled = counts
        self.trained = 0
        self.wall_ms: list[float] = []
        self.cpu_ms: list[float] = []
        self.env_steps: list[int] = []
        self.profiles: list[dict] = []
        self._profiling = None

    def _phase(self) -> str:
        done = self.trained - self.warmup
        if done < 0:
            return "warmup"
        return "time" if done < self.repeats else "profile"

    def on_train_start(self, trainer, pl_module) -> None:
        try:
            self.barrier.wait()  # every model built and set up before the first step of any
        except threading.BrokenBarrierError:
            pass  # another model failed to start: this one runs alone
        self.baton.wait(self.name)

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx) -> None:
        if self._phase() == "profile":
            from zoo.bench.phase_split import ProfiledStep

            self._profiling = (self.probe or ProfiledStep)(pl_module)
            self._profiling.start()
        self._env = env_steps(pl_module)
        self._cpu, self._wall = time.process_time(), time.perf_counter()

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
        end, cpu = time.perf_counter(), time.process_time()
        phase, profile = self._phase(), None
        if self._profiling is not None:
            profile, self._profiling = self._profiling.stop(), None
        if outputs:  # a step that trained (None, or {} under manual optimisation: nothing to optimise)
            self.trained += 1
            self._record(phase, pl_module, end, cpu, profile)
        if self._phase() == "profile" and len(self.profiles) >= self.profiled:
            trainer.should_stop = True
            self.baton.finish(self.name)
            return
        self.baton.pass_on(self.name)
        self.baton.wait(self.name)

    def _record(self, phase: str, pl_module, end: float, cpu: float, profile: dict | None) -> None:
        if phase == "time":
            self.wall_ms.append(1e3 * (end - self._wall))
            self.cpu_ms.append(1e3 * (cpu - self._cpu))
            after = env_steps(pl_module)
            if self._env is not None and after is not None:
                self.env_steps.append(after - self._env)
        elif phase == "profile" and profile is not None:
            self.profiles.append(profile)
        if phase in ("time", "profile"):
            self.timeline.append((self.name, self._wall, end))

    def on_train_end(self, trainer, pl_module) -> None:
        self.baton.leave(self.name)

    def on_exception(self, trainer, pl_module, exception) -> None:
        if self._profiling is not None:  # a step that raised under the profiler: remove the instrumentation
            profiling, self._profiling = self._profiling, None
            try:
                profiling.stop()
            except Exception:  # noqa: BLE001 - the step's own exception is the one to report
                pass
        self.baton.leave(self.name)
        self.barrier.abort()


def run_in_turn(
    fits: dict[str, tuple], warmup: int, repeats: int, profiled: int, probe=None
) -> tuple[dict, dict, list]:
    """Fit every ``name -> (trainer, model, datamodule)`` in its own thread, one training step at a time in turn
    (``probe``: what the steps after the timed ones run under, see :class:`StepClock`).

    Returns ``(clocks, errors, timeline)``: each name's :class:`StepClock`, the exception each failed fit raised,
    and the shared timeline of timed and profiled steps."""
    names = list(fits)
    baton, barrier, timeline = Baton(names), threading.Barrier(len(names)), []
    clocks = {n: StepClock(n, baton, barrier, timeline, (warmup, repeats, profiled), probe) for n in names}
    errors: dict[str, BaseException] = {}

    def fit(name: str) -> None:
        trainer, model, datamodule = fits[name]
        trainer.callbacks.insert(0, clocks[name])  # first: it stops its clock before the others' end-of-step hooks
        try:
            trainer.fit(model, datamodule=datamodule)
        except BaseException as exc:  # noqa: BLE001 - reported per model; the other fits go on
            errors[name] = exc
            barrier.abort()
        finally:
            baton.leave(name)

    threads = [threading.Thread(target=fit, args=(n,), name=f"zoo-bench-{n}") for n in names]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return clocks, errors, timeline
