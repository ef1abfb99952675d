"""DyGMoCE task plugin: dynamic-graph link prediction (DyGLib protocol) with curvature-aware expert mixtures."""
