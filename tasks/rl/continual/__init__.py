"""SPHERE task plugin: continual RL on a MetaWorld task sequence with PPO and an MoE actor."""
