"""Built-in domain tasks of moe-zoo; each subpackage is a plugin registered through ``zoo.tasks``."""
