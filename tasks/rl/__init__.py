"""Reinforcement learning tasks: ScaleMoE (SAC with SimBa / MoE actor-critics on the DeepMind Control Suite)."""
