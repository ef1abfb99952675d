"""DroneDINO task plugin: mmdet DINO with heterogeneous routed MoE FFNs for RGB, IR and RGB-IR drone detection."""
