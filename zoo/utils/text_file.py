"""The first check of any text data file a user points at: it can be read and it is not binary."""

from __future__ import annotations

from pathlib import Path

from zoo.errors import ConfigError


def require_text_file(path: str | Path, kind: str = "CSV") -> Path:
    """``path`` as a Path, after checking that it can be opened and that its first 8 KiB hold no NUL byte.

    Raises:
        ConfigError: one line naming the file: it cannot be read (missing, a folder, no permission) or it is
            binary (``kind`` names what was expected, e.g. "CSV").
    """
    path = Path(path)
    try:
        with path.open("rb") as f:
            head = f.read(8192)
    except OSError as exc:
        raise ConfigError(f"cannot read the {kind} {path}: {exc.strerror or exc}") from None
    if b"\x00" in head:
        raise ConfigError(f"{path} is a binary file, not a {kind}")
    return path
