"""Silence third-party chatter that says nothing about the run: Lightning's litlogger advert, its own LeafSpec
deprecation (a torch API it calls itself), torchdata's ``set_vital`` deprecation. Everything else is untouched;
Python shows each remaining warning once per place."""

from __future__ import annotations

import logging
import warnings

_IGNORED_WARNINGS = (
    r".*isinstance\(treespec, LeafSpec\)",  # pytorch_lightning/utilities/_pytree.py, not user code
    r".*LeafSpec.* is deprecated",
    r"'set_vital' is deprecated",  # torchdata's StatefulDataLoader calls a deprecated torch function
)
_IGNORED_LOG_TEXT = ("litlogger",)


class _DropAdverts(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        return not any(text in message for text in _IGNORED_LOG_TEXT)


def quiet_third_party() -> None:
    """Install the filters (idempotent)."""
    for pattern in _IGNORED_WARNINGS:
        warnings.filterwarnings("ignore", message=pattern)
    for name in ("pytorch_lightning.utilities.rank_zero", "lightning.pytorch.utilities.rank_zero"):
        log = logging.getLogger(name)
        if not any(isinstance(f, _DropAdverts) for f in log.filters):
            log.addFilter(_DropAdverts())
