#!/usr/bin/env bash
# One call on a GPU machine without network: install from the checkout, run the GPU tests and a
# short benchmark, write logs to the folder given as $1 (default ./gpu-logs).
set -uo pipefail
out=${1:-gpu-logs}
mkdir -p "$out"
export PYTHONUNBUFFERED=1
cd "$(dirname "$0")/.."
{ nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  python3 -c "import cupy, numpy, scipy; print('cupy', cupy.__version__, 'numpy', numpy.__version__, 'scipy', scipy.__version__)"
} 2>&1 | tee "$out/env.txt"
python3 -m pip install -q --no-deps --no-build-isolation -e . >"$out/install.txt" 2>&1 \
  || { echo "pip install failed; using PYTHONPATH"; export PYTHONPATH=$PWD; }
status=0
python3 -m pytest -m gpu -q -p no:cacheprovider tests 2>&1 | tee "$out/pytest-gpu.txt" || status=1
if [ "${GPU_CHECK_BENCH:-1}" = 1 ]; then
  python3 -m lapcli.cli bench --suite gpu-check --solvers cuda,cuda-stepwise,scipy --repeat 3 --warmup 1 \
    --json "$out/bench.json" 2>&1 | tee "$out/bench.txt" || status=1
fi
exit $status
