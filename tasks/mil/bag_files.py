"""Readers of MIL bag files, chosen by suffix: ``.mat`` (the MIL benchmark layout), ``.npz``, ``.h5`` / ``.hdf5``,
``.csv``, and ``.data`` (the UCI Musk layout).

- ``.mat``: the MIL-toolbox / PRTools ``prdataset`` struct of the Andrews et al. (NIPS 2002) family (MUSK1/2,
  Elephant, Fox, Tiger, as distributed with the MIL toolbox and MILSurvey): one struct variable (any name, usually
  ``x``) with ``data`` (N, D) instance features, ``nlab`` (N, 1) 1-based indices into ``lablist`` (the class named
  ``positive`` is 1; without such a name, the second class is) and ``ident.milbag`` (N,) bag ids (numbers or
  strings). A ``.mat`` holding plain arrays under ``features_key`` / ``bag_key`` / ``label_key`` (as an ``.npz``
  does) is read like one; MATLAB v7.3 files are HDF5 and are read as such. The MAT-file header is checked first: a
  text file, an HDF5 file without the MATLAB header, or a truncated / damaged file is refused in one line naming it.
- ``.npz`` / ``.h5``: arrays ``features`` (N, D), ``bag_ids`` (N,), ``labels`` per instance (N,) or per bag.
- ``.csv``: a header row with columns ``bag_ids`` and ``labels``; every other column is a numeric feature.
- ``.data``: UCI ``clean1.data`` / ``clean2.data`` rows ``molecule, conformation, f1..fD, class`` (bag = molecule).

Every reader refuses a NaN, ``inf`` or ``-inf`` (:func:`zoo.data.finite.require_finite`), naming the file, the
array or column and the row.

:func:`feature_width` reads only what it needs for D (headers, array shapes) for ``model_shapes()``.
"""

from __future__ import annotations

import zipfile
import zlib
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from zoo.data.finite import require_finite
from zoo.errors import ConfigError, ZooError
from zoo_tasks.mil.bags import Bags, group_instances

SUFFIXES = (".mat", ".npz", ".h5", ".hdf5", ".csv", ".data")
KEYS = ("features", "bag_ids", "labels")  # default features_key, bag_key, label_key
_KEY_ARGS = ("features_key", "bag_key", "label_key")
_HDF5_SIGNATURE = b"\x89HDF\r\n\x1a\n"
_PRTOOLS_FIELDS = ("data", "nlab", "ident")


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
        data = _load_mat(path, keys)
        struct = _prtools_struct(data) if not all(k in data for k in keys) else None
        if struct is not None:
            return _from_prtools(struct, path)
    else:
        data = _load_npz(path) if suffix == ".npz" else _load_h5(path)
    return _from_arrays(data, keys, path)


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
            raise ZooError(f"not a readable HDF5 file: {path} ({_first_line(exc)})") from None
    return read_bags(path, keys).features[0].shape[1]


def _first_line(exc: BaseException) -> str:
    """The first line (and first sentence) of an exception's message, for a one-line error."""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return text.split("; ")[0][:200]


def _describe(data: dict[str, np.ndarray], groups: Sequence[str] = ()) -> str:
    """The variables of a file, for an error message: ``x (struct: data, nlab, ...)``, ``y (3x2 float64)``;
    ``groups``: the structs / cells of a v7.3 file, which are not read."""
    if not data and not groups:
        return "no variables"
    parts = [f"{name} (a struct or cell, read from v5-v7 .mat files only: save it with save -v7)" for name in groups]
    for name in sorted(data):
        value = np.asarray(data[name])
        fields = getattr(value.dtype, "names", None)
        shape = "x".join(str(n) for n in value.shape) or "scalar"
        parts.append(f"{name} (struct: {', '.join(fields)})" if fields else f"{name} ({shape} {value.dtype})")
    return ", ".join(parts)


def _missing_arrays(
    data: dict[str, np.ndarray], keys: tuple[str, str, str], path: Path, groups: Sequence[str] = ()
) -> str:
    """What a file lacks of the arrays ``keys`` (for a .mat: and of a PRTools struct) and what it has."""
    missing = [f"{key!r} (data.{arg})" for arg, key in zip(_KEY_ARGS, keys) if key not in data]
    expected = f"no array {', '.join(missing)}"
    if path.suffix.lower() == ".mat":
        expected += f", nor a PRTools dataset struct (a variable with fields {', '.join(_PRTOOLS_FIELDS)})"
    return f"{expected}; the file has: {_describe(data, groups)}"


def _check_finite(path: Path, name: str, values: np.ndarray) -> None:
    """A NaN / inf in array ``name`` of ``path`` raises one line naming the file, the array, its column and row."""
    require_finite(np.asarray(values), f"{path} (array {name!r})", rows="row")


def _from_arrays(data: dict[str, np.ndarray], keys: tuple[str, str, str], path: Path) -> Bags:
    if not all(key in data for key in keys):
        raise ConfigError(f"{path}: {_missing_arrays(data, keys, path)}")
    feats = np.asarray(data[keys[0]])
    if feats.dtype.kind not in "biuf":
        raise ZooError(f"{path}: array {keys[0]!r} must be numeric, got dtype {feats.dtype}")
    for key in keys:
        _check_finite(path, key, data[key])
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


def _as_text(head: bytes) -> str | None:
    """The start of a file as text when it reads as UTF-8 text, else None."""
    try:
        text = head.decode("utf-8")
    except UnicodeDecodeError as exc:
        if exc.start < len(head) - 3:  # not just a character cut at the end of the sample
            return None
        text = head[: exc.start].decode("utf-8")
    return text if text and all(c.isprintable() or c in "\r\n\t" for c in text) else None


def _not_a_mat_file(path: Path, head: bytes) -> ConfigError:
    text = _as_text(head)
    save = "save it with MATLAB / Octave save or scipy.io.savemat"
    if not head:
        what, fix = "the file is empty", save
    elif head.startswith(_HDF5_SIGNATURE):
        what, fix = "an HDF5 file without the MATLAB v7.3 header", "name it .h5 to read its arrays as HDF5"
    elif text is not None:
        what = f"it is text, starting {text.strip().splitlines()[0][:40]!r}"
        fix = f"a text table of bags is read from a .csv file (columns {KEYS[1]}, {KEYS[2]}, features), or {save}"
    else:
        what, fix = f"no MAT-file header; it starts with bytes {head[:8].hex(' ')}", save
    return ConfigError(f"not a MATLAB .mat file: {path} ({what}); {fix}")


def mat_version(path: Path) -> str:
    """``"4"``, ``"5"`` (v5 to v7) or ``"7.3"`` (HDF5) from the header of a MATLAB .mat file.

    Raises:
        ConfigError: the file has no MAT-file header (text, an HDF5 file without the MATLAB header, other bytes).
    """
    with open(path, "rb") as fh:
        head = fh.read(128)
    if len(head) == 128 and head[126:128] in (b"IM", b"MI"):
        major = head[125] if head[126:127] == b"I" else head[124]  # "IM": little-endian, the version's high byte last
        if major in (1, 2):
            return "5" if major == 1 else "7.3"
    if len(head) >= 4 and 0 in head[:4] and not head.startswith(_HDF5_SIGNATURE):
        return "4"  # v4 has no magic: its first int32 (the matrix type) is small, so it has a zero byte (as scipy)
    raise _not_a_mat_file(path, head)


def _damaged_mat(path: Path, version: str, reason: str) -> ZooError:
    return ZooError(
        f"not a readable MATLAB .mat file: {path} (v{version} header, but {reason}); the file is truncated or "
        "damaged: copy or save it again"
    )


def _load_mat(path: Path, keys: tuple[str, str, str] = KEYS) -> dict[str, np.ndarray]:
    from scipy.io import loadmat
    from scipy.io.matlab import MatReadError

    version = mat_version(path)
    if version == "7.3":  # an HDF5 file after a 512-byte header, matrices stored column-major (transposed)
        with open(path, "rb") as fh:
            fh.seek(512)
            if fh.read(8) != _HDF5_SIGNATURE:
                raise _damaged_mat(path, version, "no HDF5 data after the header")
        try:
            arrays, groups = _read_h5(path)
        except (OSError, KeyError, RuntimeError) as exc:
            raise _damaged_mat(path, version, f"HDF5: {_first_line(exc)}") from None
        arrays = {k: v.T if v.ndim == 2 else v for k, v in arrays.items()}
        if groups and not all(k in arrays for k in keys):
            raise ConfigError(f"{path}: {_missing_arrays(arrays, keys, path, sorted(groups))}")
        return arrays
    try:
        data = loadmat(path)
    except (ValueError, TypeError, OSError, IndexError, KeyError, EOFError, MemoryError, MatReadError) as exc:
        raise _damaged_mat(path, version, f"{type(exc).__name__}: {_first_line(exc)}") from None
    except zlib.error as exc:  # a compressed variable cut short or corrupted
        raise _damaged_mat(path, version, f"compressed data: {_first_line(exc)}") from None
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


def _from_prtools(x: np.void, path: Path) -> Bags:
    feats = np.asarray(x["data"])
    if feats.dtype.kind not in "biuf" or feats.ndim != 2:
        raise ZooError(f"x.data must be a numeric (instances, features) matrix, got {feats.dtype} {feats.shape}")
    _check_finite(path, "x.data", feats)
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
    numbers = frame.select_dtypes("number")
    require_finite(numbers.to_numpy(np.float64), path, [str(c) for c in numbers.columns])
    return group_instances(feats.to_numpy(np.float32), frame[keys[1]].to_numpy(), frame[keys[2]])


def _read_musk_data(path: Path) -> Bags:
    rows = [line.split(",") for line in path.read_text().splitlines() if line]
    widths = {len(r) for r in rows}
    if len(widths) != 1 or min(widths) < 4:
        raise ZooError("expected rows 'molecule, conformation, features..., class' of one width (UCI Musk layout)")
    try:
        numbers = np.array([r[2:] for r in rows], dtype=np.float64)  # features, then the class
    except ValueError as exc:
        raise ZooError(f"non-numeric feature or class ({exc})") from None
    columns = [f"f{j}" for j in range(1, numbers.shape[1])] + ["class"]  # the UCI names of the fields after two ids
    require_finite(numbers, path, columns)
    features, labels = numbers[:, :-1].astype(np.float32), numbers[:, -1].astype(np.int64)
    return group_instances(features, np.array([r[0] for r in rows]), labels)


def _load_npz(path: Path, check_only: bool = False) -> dict[str, np.ndarray]:
    with open(path, "rb") as fh:
        if fh.read(4) != b"PK\x03\x04":  # else numpy would try to unpickle it and suggest allow_pickle=True
            raise ZooError(f"not a readable .npz file: {path} (not a zip archive of .npy arrays)")
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


def _read_h5(path: Path) -> tuple[dict[str, np.ndarray], list[str]]:
    """The top-level datasets of an HDF5 file as arrays, and the names of its top-level groups (not read)."""
    import h5py

    with h5py.File(path, "r") as fh:
        arrays = {k: fh[k][()] for k in fh.keys() if isinstance(fh[k], h5py.Dataset)}
        groups = [k for k in fh.keys() if isinstance(fh[k], h5py.Group) and not k.startswith("#")]
    return arrays, groups


def _load_h5(path: Path) -> dict[str, np.ndarray]:
    try:
        return _read_h5(path)[0]
    except (OSError, KeyError, RuntimeError) as exc:
        raise ZooError(f"not a readable HDF5 file: {path} ({_first_line(exc)})") from None
