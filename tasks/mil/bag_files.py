"""Readers of MIL bag files, chosen by suffix: ``.mat`` (the MIL benchmark layout), ``.npz``, ``.h5`` / ``.hdf5``,
``.csv``, and ``.data`` (the UCI Musk layout).

- ``.mat``: the MIL-toolbox / PRTools ``prdataset`` struct of the Andrews et al. (NIPS 2002) family (MUSK1/2,
  Elephant, Fox, Tiger, as distributed with the MIL toolbox and MILSurvey): one struct variable (any name, usually
  ``x``) with ``data`` (N, D) instance features, ``nlab`` (N, 1) 1-based indices into ``lablist`` (the class named
  ``positive`` is 1; without such a name, the second class is) and ``ident.milbag`` (N,) bag ids (numbers or
  strings). A ``.mat`` holding plain arrays under ``features_key`` / ``bag_key`` / ``label_key`` (as an ``.npz``
  does) is read like one; MATLAB v7.3 files are HDF5 and are read as such.
- ``.npz`` / ``.h5``: arrays ``features`` (N, D), ``bag_ids`` (N,), ``labels`` per instance (N,) or per bag.
- ``.csv``: a header row with columns ``bag_ids`` and ``labels``; every other column is a numeric feature.
- ``.data``: UCI ``clean1.data`` / ``clean2.data`` rows ``molecule, conformation, f1..fD, class`` (bag = molecule).

:func:`feature_width` reads only what it needs for D (headers, array shapes) for ``model_shapes()``.
"""

from __future__ import annotations

import zipfile
from pathlib import Path

import numpy as np

from zoo.errors import ConfigError, ZooError
from zoo_tasks.mil.bags import Bags, group_instances

SUFFIXES = (".mat", ".npz", ".h5", ".hdf5", ".csv", ".data")
KEYS = ("features", "bag_ids", "labels")  # default features_key, bag_key, label_key
_KEY_ARGS = ("features_key", "bag_key", "label_key")


def _suffix(path: Path) -> str:
    suffix = path.suffix.lower()
    if suffix not in SUFFIXES:
        raise ConfigError(f"data.path: unsupported file type {suffix!r} (use {', '.join(SUFFIXES)})")
    return suffix


def _existing(path: Path) -> tuple[Path, str]:
    """``path`` as a Path and its format suffix; one error line for a missing file or an unknown format."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"data.path: no file at {path}")
    return path, _suffix(path)


def read_bags(path: Path, keys: tuple[str, str, str] = KEYS) -> Bags:
    """The bags in ``path``; ``keys`` name the features / bag-id / label arrays (or CSV columns)."""
    path, suffix = _existing(path)
    if suffix == ".csv":
        return _read_csv(path, keys)
    if suffix == ".data":
        return _read_musk_data(path)
    if suffix == ".mat":
        data = _load_mat(path)
        struct = _prtools_struct(data) if not all(k in data for k in keys) else None
        if struct is not None:
            return _from_prtools(struct)
    else:
        data = _load_npz(path) if suffix == ".npz" else _load_h5(path)
    return _from_arrays(data, keys)


def feature_width(path: Path, keys: tuple[str, str, str] = KEYS) -> int:
    """D, the number of features per instance in ``path``, from headers and shapes where the format has them."""
    path, suffix = _existing(path)
    if suffix == ".csv":
        with open(path, encoding="utf-8", errors="replace") as fh:
            return len(fh.readline().strip().split(",")) - 2
    if suffix == ".data":
        with open(path) as fh:
            return len(fh.readline().strip().split(",")) - 3
    if suffix == ".npz":
        _load_npz(path, check_only=True)
        fmt = np.lib.format
        try:
            with zipfile.ZipFile(path) as archive, archive.open(f"{keys[0]}.npy") as fh:
                version = fmt.read_magic(fh)
                read_header = {(1, 0): fmt.read_array_header_1_0, (2, 0): fmt.read_array_header_2_0}[version]
                shape = read_header(fh)[0]
            if len(shape) == 2:
                return int(shape[1])
        except (KeyError, ValueError, zipfile.BadZipFile):
            pass  # missing array or unusual header: the full read below names the problem
    if suffix in (".h5", ".hdf5"):
        import h5py

        try:
            with h5py.File(path, "r") as fh:
                if keys[0] in fh and len(fh[keys[0]].shape) == 2:
                    return int(fh[keys[0]].shape[1])
        except OSError as exc:
            raise ZooError(f"{path}: not a readable HDF5 file ({str(exc).splitlines()[0]})") from None
    return read_bags(path, keys).features[0].shape[1]


def _from_arrays(data: dict[str, np.ndarray], keys: tuple[str, str, str]) -> Bags:
    for arg, key in zip(_KEY_ARGS, keys):
        if key not in data:
            raise ConfigError(f"no array {key!r} (data.{arg}); arrays in the file: {sorted(data)}")
    feats = np.asarray(data[keys[0]])
    if feats.dtype.kind not in "biuf":
        raise ZooError(f"array {keys[0]!r} must be numeric, got dtype {feats.dtype}")
    return group_instances(feats, _ids(data[keys[1]]), np.asarray(data[keys[2]]).reshape(-1))


def _ids(bag_ids: np.ndarray) -> np.ndarray:
    """Bag ids as a flat array of numbers or stripped strings (MATLAB char rows are space-padded)."""
    bag_ids = np.asarray(bag_ids)
    if bag_ids.dtype.kind == "S":
        bag_ids = bag_ids.astype(str)
    if bag_ids.dtype.kind == "O":  # a MATLAB cell array of strings
        bag_ids = np.array([str(np.asarray(v).ravel()[0]) if np.asarray(v).size else "" for v in bag_ids.ravel()])
    bag_ids = bag_ids.reshape(-1)
    return np.char.strip(bag_ids) if bag_ids.dtype.kind == "U" else bag_ids


def _load_mat(path: Path) -> dict[str, np.ndarray]:
    from scipy.io import loadmat

    try:
        data = loadmat(path)
    except NotImplementedError:  # MATLAB v7.3: an HDF5 file, matrices stored column-major (transposed)
        return {k: v.T if v.ndim == 2 else v for k, v in _load_h5(path).items()}
    except (ValueError, TypeError, OSError) as exc:
        raise ZooError(f"not a readable .mat file ({type(exc).__name__}: {exc})") from None
    return {k: v for k, v in data.items() if not k.startswith("__")}


def _prtools_struct(data: dict[str, np.ndarray]) -> np.void | None:
    """The PRTools dataset struct among the variables (the first with ``data``, ``nlab`` and ``ident``)."""
    for value in data.values():
        names = getattr(value.dtype, "names", None) or ()
        if {"data", "nlab", "ident"} <= set(names) and value.size:
            return value.ravel()[0]
    return None


def _label_names(lablist: np.ndarray) -> list[str]:
    """Class names of a PRTools ``lablist``: a cell (one row per labelling, the current one first) or a char matrix."""
    names = lablist
    if lablist.dtype.kind == "O":
        names = np.asarray(lablist.ravel()[0] if lablist.ndim < 2 else lablist[0, 0])
    return [str(v).strip() for v in np.asarray(names).ravel()]


def _from_prtools(x: np.void) -> Bags:
    feats = np.asarray(x["data"])
    if feats.dtype.kind not in "biuf" or feats.ndim != 2:
        raise ZooError(f"x.data must be a numeric (instances, features) matrix, got {feats.dtype} {feats.shape}")
    nlab = np.asarray(x["nlab"]).astype(np.int64).ravel()
    names = _label_names(np.asarray(x["lablist"])) if "lablist" in x.dtype.names else []
    positive = [i + 1 for i, n in enumerate(names) if n.lower() == "positive"]
    labels = (nlab == positive[0]).astype(np.int64) if positive else nlab - 1  # MIL toolbox: 2nd class positive
    if not positive and len(names) > 2:
        raise ZooError(f"x.lablist has {len(names)} classes {names[:5]} and none is named 'positive'")
    ident = np.asarray(x["ident"])
    if "milbag" not in (ident.dtype.names or ()):
        raise ZooError("no bag ids: x.ident has no field 'milbag'")
    return group_instances(feats, _ids(ident.ravel()[0]["milbag"]), labels)


def _read_csv(path: Path, keys: tuple[str, str, str]) -> Bags:
    import pandas as pd

    try:
        frame = pd.read_csv(path)
    except (ValueError, UnicodeDecodeError, pd.errors.ParserError) as exc:
        raise ZooError(f"not a readable CSV file ({type(exc).__name__}: {str(exc).splitlines()[0]})") from None
    for arg, key in (("bag_key", keys[1]), ("label_key", keys[2])):
        if key not in frame.columns:
            raise ConfigError(f"no column {key!r} (data.{arg}); columns: {list(frame.columns)[:10]}")
    feats = frame.drop(columns=[keys[1], keys[2]])
    text = [c for c in feats.columns if not pd.api.types.is_numeric_dtype(feats[c])]
    if text:
        raise ZooError(f"feature column(s) {text[:5]} are not numeric")
    return group_instances(feats.to_numpy(np.float32), frame[keys[1]].to_numpy(), frame[keys[2]])


def _read_musk_data(path: Path) -> Bags:
    rows = [line.split(",") for line in path.read_text().splitlines() if line]
    widths = {len(r) for r in rows}
    if len(widths) != 1 or min(widths) < 4:
        raise ZooError("expected rows 'molecule, conformation, features..., class' of one width (UCI Musk layout)")
    try:
        features = np.array([r[2:-1] for r in rows], dtype=np.float32)
        labels = np.array([float(r[-1]) for r in rows]).astype(np.int64)
    except ValueError as exc:
        raise ZooError(f"non-numeric feature or class ({exc})") from None
    return group_instances(features, np.array([r[0] for r in rows]), labels)


def _load_npz(path: Path, check_only: bool = False) -> dict[str, np.ndarray]:
    with open(path, "rb") as fh:
        if fh.read(4) != b"PK\x03\x04":  # else numpy would try to unpickle it and suggest allow_pickle=True
            raise ZooError("not a readable .npz file (not a zip archive of .npy arrays)")
    if check_only:
        return {}
    try:
        with np.load(path, allow_pickle=False) as arrays:
            return {k: arrays[k] for k in arrays.files}
    except ValueError as exc:  # numpy's message here proposes allow_pickle=True: never load pickles from data
        if "pickle" in str(exc):
            raise ZooError("not a numeric .npz archive (it holds pickled Python objects, not loaded)") from None
        raise ZooError(f"not a readable .npz file ({exc})") from None
    except (OSError, EOFError, zipfile.BadZipFile) as exc:
        raise ZooError(f"not a readable .npz file ({type(exc).__name__}: {exc})") from None


def _load_h5(path: Path) -> dict[str, np.ndarray]:
    import h5py

    try:
        with h5py.File(path, "r") as fh:
            return {k: fh[k][()] for k in fh.keys() if isinstance(fh[k], h5py.Dataset)}
    except OSError as exc:
        raise ZooError(f"not a readable HDF5 file ({str(exc).splitlines()[0]})") from None
