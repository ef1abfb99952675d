"""Package data, not code: the built-in tasks' YAML configs (``<task>/*.yaml``), installed as ``zoo_tasks.configs``
so an installed task finds them with ``importlib.resources`` (see ``TaskSpec.config_dir``)."""
