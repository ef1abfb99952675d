"""MoE-GS task plugin: dynamic Gaussian splatting with heterogeneous deformation experts."""
