"""Small helpers shared by several tasks (import from the submodules: ``zoo.utils.kmeans``, ...)."""
