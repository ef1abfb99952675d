#!/usr/bin/env bash
# Install the DroneDINO detection stack into the current Python environment:
#   1. the project's `detection` extra (mmdet 3.3.0, mmengine 0.10.7, timm, torchvision, pycocotools), pinned by
#      constraints.txt;
#   2. mmcv 2.1.0 WITH its compiled ops (`mmdet.models` imports `mmcv.ops` at import time, so `mmcv-lite` cannot
#      be used). PyPI has no mmcv binary for this torch/platform, so it is built from the sdist with one patch:
#      torch >= 2.14 headers need C++20 while mmcv's setup.py hard-codes `-std=c++17`.
# Idempotent: each step is skipped when its result is already installed. The built wheel is kept under
# $ZOO_DETECTION_CACHE (default ~/.cache/moe-zoo/detection), keyed by mmcv, torch, Python and CPU/CUDA, so a
# re-install (a new virtualenv, a CI cache hit) takes seconds instead of the ~20-minute build.
# Environment: PYTHON (default python), MAX_JOBS (compile jobs, default 1), ZOO_DETECTION_CACHE.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PY=${PYTHON:-python}
MMCV_VERSION=2.1.0
MMCV_URL=https://files.pythonhosted.org/packages/a7/19/f97f0fd4d432113a232e75f965335be6b7bb6557ae9faf8051e9a012cadd/mmcv-2.1.0.tar.gz
MMCV_SHA256=d387bcab66b467479b6660310e23746cfc79c6e57acf04094680adb499a5cd3f
CACHE=${ZOO_DETECTION_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/moe-zoo/detection}
PIP=("$PY" -m pip)

log() { echo "[install_detection] $*"; }

# --- 1. the detection extra -------------------------------------------------------------------------------
if "$PY" - <<'EOF' 2>/dev/null; then
from importlib.metadata import version
assert version("mmdet") == "3.3.0" and version("mmengine") == "0.10.7"
import timm, torchvision, pycocotools  # noqa: F401
EOF
  log "detection extra already installed (mmdet 3.3.0, mmengine 0.10.7): skipped"
else
  log "installing the detection extra"
  (cd "$ROOT" && "${PIP[@]}" install -c constraints.txt -e ".[detection]")
fi

# --- 2. mmcv with compiled ops ------------------------------------------------------------------------------
# the full distribution `mmcv` (not `mmcv-lite`) at the pinned version, and its compiled extension imports
if "$PY" -c "from importlib.metadata import version; import mmcv._ext; assert version('mmcv') == '$MMCV_VERSION'" 2>/dev/null; then
  log "mmcv $MMCV_VERSION with compiled ops already installed: skipped"
else
  if "${PIP[@]}" show mmcv-lite >/dev/null 2>&1; then
    log "removing mmcv-lite (no compiled ops; it shares the mmcv package folder)"
    "${PIP[@]}" uninstall -y mmcv-lite
  fi
  TAG=$("$PY" - <<'EOF'
import os, sys, torch
device = "cuda" if torch.cuda.is_available() or os.environ.get("FORCE_CUDA") == "1" else "cpu"
print(f"torch{torch.__version__.replace('+', '_')}-cp{sys.version_info.major}{sys.version_info.minor}-{device}")
EOF
)
  WHEEL_DIR="$CACHE/wheels/mmcv-$MMCV_VERSION-$TAG"
  mkdir -p "$WHEEL_DIR"
  WHEEL=$(ls "$WHEEL_DIR"/mmcv-"$MMCV_VERSION"-*.whl 2>/dev/null | head -n 1 || true)
  if [ -z "$WHEEL" ]; then
    SRC="$CACHE/src"
    mkdir -p "$SRC"
    if [ ! -f "$SRC/mmcv-$MMCV_VERSION.tar.gz" ]; then
      log "downloading the mmcv $MMCV_VERSION sdist"
      "$PY" - "$MMCV_URL" "$SRC/mmcv-$MMCV_VERSION.tar.gz" <<'EOF'
import sys, urllib.request
urllib.request.urlretrieve(sys.argv[1], sys.argv[2])
EOF
    fi
    echo "$MMCV_SHA256  $SRC/mmcv-$MMCV_VERSION.tar.gz" | sha256sum -c --quiet -
    rm -rf "$SRC/mmcv-$MMCV_VERSION"
    tar -xzf "$SRC/mmcv-$MMCV_VERSION.tar.gz" -C "$SRC"
    # Patch 1 (the one the build needs): torch >= 2.14 headers need C++20 (host compiler and nvcc flags).
    # Patch 2: setuptools >= 81 (the project pins 84) no longer ships pkg_resources; use the stdlib/packaging twins.
    sed -i -e 's/-std=c++17/-std=c++20/g' \
      -e 's/^from pkg_resources import DistributionNotFound, get_distribution, parse_version$/from importlib.metadata import PackageNotFoundError as DistributionNotFound, distribution as get_distribution\nfrom packaging.version import parse as parse_version/' \
      "$SRC/mmcv-$MMCV_VERSION/setup.py"
    grep -q 'std=c++20' "$SRC/mmcv-$MMCV_VERSION/setup.py" && ! grep -q pkg_resources "$SRC/mmcv-$MMCV_VERSION/setup.py" ||
      { log "patching mmcv's setup.py failed"; exit 1; }
    "${PIP[@]}" install -c "$ROOT/constraints.txt" setuptools wheel packaging ninja
    log "building mmcv $MMCV_VERSION ($TAG) with MAX_JOBS=${MAX_JOBS:-1} under nice: ~20 min on 2 CPU cores"
    (cd "$SRC/mmcv-$MMCV_VERSION" &&
      MMCV_WITH_OPS=1 MAX_JOBS=${MAX_JOBS:-1} nice -n 19 "${PIP[@]}" wheel --no-deps --no-build-isolation \
        -w "$WHEEL_DIR" .)
    WHEEL=$(ls "$WHEEL_DIR"/mmcv-"$MMCV_VERSION"-*.whl | head -n 1)
  else
    log "using the cached wheel $WHEEL"
  fi
  (cd "$ROOT" && "${PIP[@]}" install -c constraints.txt "$WHEEL")
fi

# --- 3. check -------------------------------------------------------------------------------------------------
"$PY" -c "import mmcv._ext, mmdet.models; from mmdet.models.detectors import DINO; print('mmdet', __import__('mmdet').__version__, 'mmcv', __import__('mmcv').__version__, 'ok')"
