"""Hyper-parameter tuning on the validation metric only (``zoo tune``, issue 26): search spaces declared by tasks
(``space``), the routers' own knobs (``router_knobs``) and the Optuna study that searches them (``study``)."""
