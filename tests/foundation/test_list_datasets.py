"""`zoo list` says, for every dataset, whether it is on this machine and where ($ZOO_DATA_DIR, the mirror, the
download cache, inside an installed package), else where it would be downloaded from or what to do: one lookup,
`zoo.data.resolve.locate`, in `resolve`'s order, by existence checks alone (nothing hashed, nothing fetched)."""

import hashlib
import importlib

import pytest

from zoo.cli.main import main
from zoo.data import catalog, resolve
from zoo.data.catalog import DatasetSpec, Download
from zoo.data.resolve import locate
from zoo.errors import ChecksumError

resolve_module = importlib.import_module("zoo.data.resolve")  # the module: ``zoo.data.resolve`` is the function


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


@pytest.fixture()
def places(monkeypatch, tmp_path):
    """Empty data dir, mirror and cache under ``tmp_path``: (data dir, mirror, cache)."""
    data, mirror, cache = tmp_path / "data", tmp_path / "mirror", tmp_path / "cache"
    for folder in (data, mirror, cache):
        folder.mkdir()
    monkeypatch.setenv("ZOO_DATA_DIR", str(data))
    monkeypatch.setenv("ZOO_DATA_MIRROR", str(mirror))
    monkeypatch.setenv("ZOO_CACHE_DIR", str(cache))
    return data, mirror, cache


def _sums(files: dict[str, str]) -> dict[str, str]:
    return {rel: _sha(text) for rel, text in files.items()}


def _put(root, files: dict[str, str]) -> None:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)


def _register(monkeypatch, spec: DatasetSpec) -> None:
    monkeypatch.setitem(catalog._REGISTERED, spec.name, spec)


def test_locate_follows_the_resolution_order(places, monkeypatch):
    data, mirror, cache = places
    files = {"a.csv": "1,2\n", "sub/b.csv": "3,4\n"}
    _register(monkeypatch, DatasetSpec("tiny", "https://example.org/tiny", extra_checksums=_sums(files)))
    _put(cache / "data" / "tiny", files)
    assert (locate("tiny").place.kind, locate("tiny").place.root) == ("cache", cache / "data" / "tiny")
    _put(mirror / "tiny", files)
    assert locate("tiny").place.kind == "mirror" and locate("tiny").place.label == "$ZOO_DATA_MIRROR/tiny"
    _put(data / "tiny", files)
    found = locate("tiny")
    assert found.present and (found.place.kind, found.place.root) == ("data dir", data / "tiny")
    assert resolve("tiny") == found.place.root  # resolve reads from where locate points
    assert locate("tiny", path=mirror / "tiny").place.kind == "explicit path"


def test_locate_checks_existence_only_and_resolve_still_verifies(places, monkeypatch):
    data, _, _ = places
    _register(monkeypatch, DatasetSpec("tiny", "https://example.org/tiny", extra_checksums={"a.csv": _sha("good")}))
    _put(data / "tiny", {"a.csv": "corrupted"})
    real_sha = resolve_module.sha256_of
    monkeypatch.setattr(resolve_module, "sha256_of", lambda path: pytest.fail(f"locate hashed {path}"))
    assert locate("tiny").present
    monkeypatch.setattr(resolve_module, "sha256_of", real_sha)
    with pytest.raises(ChecksumError):
        resolve("tiny", download=False)


def test_an_absent_dataset_would_be_downloaded_or_says_what_to_do(places, monkeypatch):
    data, mirror, cache = places
    sums = _sums({"x.csv": "x", "y.csv": "y"})
    downloads = tuple(Download(rel, f"https://files.example.org/{rel}") for rel in sums)
    _register(monkeypatch, DatasetSpec("fetchable", "https://example.org/f", downloads, extra_checksums=sums))
    _register(monkeypatch, DatasetSpec("by-hand", "https://example.org/by-hand", extra_checksums=sums))
    fetchable = locate("fetchable")
    assert fetchable.status == "download" and fetchable.place.root == cache / "data" / "fetchable"
    assert "would be downloaded on first use (2 downloads from https://files.example.org)" in fetchable.describe()
    _put(mirror / "by-hand", {"x.csv": "x"})  # one file of two: not there, and said so
    by_hand = locate("by-hand")
    assert by_hand.status == "missing" and by_hand.incomplete == (by_hand.tried[1], 1, 2)
    line = by_hand.describe()
    assert "cannot be downloaded automatically" in line and "holds only 1 of its 2 files" in line
    assert "https://example.org/by-hand" in line and "$ZOO_DATA_DIR/by-hand" in line
    reason = by_hand.skip_reason()  # the tests' skip: what is missing and what to do
    assert "'by-hand' is not on this machine" in reason and "set ZOO_DATA_MIRROR" in reason
    assert "$ZOO_DATA_DIR/by-hand" in reason and "https://example.org/by-hand" in reason


def test_zoo_list_says_where_each_dataset_is(places, monkeypatch, capsys):
    """The real catalogue: CollegeMsg in the data dir, MIL in the mirror, Planetoid in the cache, ETT-small
    downloadable, D-NeRF only by hand, scikit-learn's digits inside their package. The files hold junk: `zoo list`
    hashes nothing."""
    data, mirror, cache = places
    _put(data / "CollegeMsg", {"CollegeMsg.txt": "junk"})
    _put(mirror / "MIL", {rel: "junk" for rel in catalog.get_dataset_spec("MIL").checksums})
    _put(cache / "data" / "Planetoid", {rel: "junk" for rel in catalog.get_dataset_spec("Planetoid").checksums})
    monkeypatch.setattr(resolve_module, "sha256_of", lambda path: pytest.fail(f"zoo list hashed {path}"))
    assert main(["list", "--no-routers"]) == 0
    lines = [line.strip() for line in capsys.readouterr().out.splitlines()]
    where = {line.split(": ", 1)[0]: line.split(": ", 1)[1] for line in lines if ": " in line}
    assert where["CollegeMsg"].startswith(f"present in $ZOO_DATA_DIR ({data / 'CollegeMsg'}); files not verified")
    assert where["MIL"].startswith(f"present in the mirror ({mirror / 'MIL'})")
    assert where["Planetoid"].startswith(f"present in the download cache ({cache / 'data' / 'Planetoid'})")
    assert where["ETT-small"] == (
        "not on this machine: would be downloaded on first use (4 downloads from https://raw.githubusercontent.com) "
        f"into {cache / 'data' / 'ETT-small'}"
    )
    assert where["D-NeRF"].startswith("not on this machine and cannot be downloaded automatically. Source: https://")
    assert "$ZOO_DATA_DIR/D-NeRF" in where["D-NeRF"]
    assert where["digits"].startswith("ships inside the installed package sklearn.datasets (")
    assert "data on this machine: nothing to fetch (the task names no dataset)" in lines  # e.g. simulated RL
