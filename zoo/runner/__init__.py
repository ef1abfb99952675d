"""Experiment running behind the ``zoo`` command: the grid of a task's benchmark rows (``zoo reproduce``), the router
matrix (rows that vary the router), tuning, verification and evaluation runs, and what they share: run locks, run
folders, stop signals, records and the leaderboard a task's records belong to.

``zoo.cli`` parses command lines and dispatches here; nothing here parses a command line. The fit-then-test driver
stays ``zoo.cli.fit_test`` (a root of every record's code closure, ``zoo.code_closure``)."""
