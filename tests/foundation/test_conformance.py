"""The conformance suite over every discovered task (``zoo.conformance_tests``, which ``python -m zoo.conformance``
runs for a plugin author): each task's package and benchmark rows, two training steps of each of its declared tiny
models through the step protocol, a checkpoint round trip, and every router of ``zoo.moe.ROUTERS`` trained or refused
exactly as declared."""

from zoo.conformance_tests import *  # noqa: F403 - the suite's tests, collected here
