"""TimeMoDE task plugin: multi-domain time-series generation with a diffusion transformer and MoE FFNs."""
