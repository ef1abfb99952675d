"""WestWorld task plugin: one trajectory world model over many robot morphologies (system-aware MoE)."""
