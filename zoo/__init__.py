"""moe-zoo: an applied Mixture-of-Experts model zoo.

The core is domain-agnostic: :mod:`zoo.moe` (routers, experts, dispatch, aux losses, routing stats),
:mod:`zoo.data` (named datasets with checksums), :mod:`zoo.registry` (task plugins), :mod:`zoo.leaderboard`
(run records and tables) and the ``zoo`` command (:mod:`zoo.cli`). Importing ``zoo`` imports no domain
library (torch-geometric, gymnasium, timm, mmdet).
"""

__version__ = "0.1.0"
