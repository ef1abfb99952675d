"""Time-series forecasting tasks: SEER (MoE-augmented patch Transformer), its dense twin and PatchTST on
ETT and Weather, with a corrupted-input robustness evaluation. Entry point: ``zoo_tasks.timeseries.spec:SEER``."""
