#!/usr/bin/env bash
# The checks CI cannot run (its machine has no GPU): the CUDA tests, which skip on CPU, and the GPU benchmarks,
# each printing CPU and CUDA side by side in one run. Needs a CUDA machine with the project installed and
# ZOO_DATA_MIRROR pointing at a mirror that holds D-NeRF. Logs and JSON go to OUT_DIR (default runs/gpu_check).
#
#   bash scripts/gpu_check.sh [OUT_DIR]
#
# The first import of gsplat's CUDA rasteriser compiles it (minutes; TORCH_CUDA_ARCH_LIST=9.0 builds for one
# architecture only). Each step runs even when an earlier one failed; the exit status is the number that failed.
set -uo pipefail
out=${1:-runs/gpu_check}
mkdir -p "$out"
export PYTHONUNBUFFERED=1
py=${PYTHON:-python3}  # the interpreter that holds the project and a CUDA build of torch
failed=0
step() {  # step NAME COMMAND...: run, log to OUT_DIR/NAME.log, count a failure
    local name=$1
    shift
    echo "== $name: $*"
    local start=$SECONDS
    "$@" 2>&1 | tee "$out/$name.log"
    local rc=${PIPESTATUS[0]}
    echo "== $name: exit $rc after $((SECONDS - start)) s"
    [ "$rc" = 0 ] || failed=$((failed + 1))
}

step env "$py" -c "import torch, gsplat; print('torch', torch.__version__, torch.cuda.get_device_name(), 'gsplat', gsplat.__version__)"
step gsplat_build "$py" -c "from zoo_tasks.splatting.render import gsplat_cuda_available as ok; assert ok(), 'no gsplat CUDA'"
step tests "$py" -m pytest -q -rs -p no:cacheprovider tests/moe/test_layer_cuda.py tests/tasks/splatting/test_moe_gs_raster.py
step raster "$py" -m zoo_tasks.splatting.bench --sizes 200,400 --gaussians 20000,100000 --methods tiles,gsplat_cuda \
    --json "$out/raster.json"
step train_steps "$py" -m zoo_tasks.splatting.bench --train-steps --downscale 4 --gaussians 20000 --devices cpu,cuda \
    --repeat 1 --json "$out/train_steps.json"
exit $failed
