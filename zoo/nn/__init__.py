"""Neural-network layers shared by several tasks (import from the submodules: ``zoo.nn.revin``, ...)."""
