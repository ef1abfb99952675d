"""Time-series forecasting tasks: SEER (MoE-augmented patch Transformer), its dense twin and PatchTST on
ETT and Weather, with a corrupted-input robustness evaluation. Entry point: ``tasks.timeseries.spec:SEER``."""
