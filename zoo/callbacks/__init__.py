"""Lightning callbacks the `zoo` CLI adds to every run (checkpoint RNG state, NaN guard, run metadata) and the
routing-stats logger for MoE layers."""
