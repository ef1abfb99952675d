"""Lightning callbacks the `zoo` CLI adds to every run (checkpoint RNG state, NaN guard, run metadata), the
routing-stats logger for MoE layers, and the timed ``last.ckpt`` for modules that resume mid-epoch."""
