"""`require_text_file`: the shared first check of a user's text data file (one line naming it)."""

import pytest

from zoo.errors import ConfigError
from zoo.utils.text_file import require_text_file


def test_readable_text_passes_and_missing_or_binary_files_are_one_line(tmp_path):
    good = tmp_path / "a.csv"
    good.write_text("date,x\n2020-01-01,1\n")
    assert require_text_file(str(good)) == good
    with pytest.raises(ConfigError, match=r"cannot read the CSV .*missing\.csv"):
        require_text_file(tmp_path / "missing.csv")
    binary = tmp_path / "b.csv"
    binary.write_bytes(b"PK\x03\x04\x00\x00")
    with pytest.raises(ConfigError, match=r"b\.csv is a binary file, not a CSV"):
        require_text_file(binary)
