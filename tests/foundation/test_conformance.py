"""The conformance suite over every discovered task (``zoo.conformance_tests``, which ``python -m zoo.conformance``
runs for a plugin author): each task's package and benchmark rows, two training steps of each of its declared tiny
models through the step protocol, a checkpoint round trip, and every router of ``zoo.moe.ROUTERS`` trained or refused
exactly as declared."""

import pytest

from zoo.conformance_tests import *  # noqa: F403 - the suite's tests, collected here

# every router on every task's tiny case (~150 short fits): the slow tier; each case's own steps and round trip
# stay in the fast tier
test_router_trains_or_is_refused_as_declared = pytest.mark.slow(  # noqa: F405
    reason="every router of the registry trained on every task's tiny case"
)(test_router_trains_or_is_refused_as_declared)  # noqa: F405
