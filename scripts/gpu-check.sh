#!/usr/bin/env bash
# One call on a GPU machine without network: install from the checkout (no downloads), run the GPU
# tests, the issue's five comparison points (cooperative vs stepwise), the step table at n=4096
# R=100, and a short fuzz run. Logs go to the folder given as $1 (default ./gpu-logs).
# Environment: FUZZ_SECONDS (default 60), BENCH_REPEAT (default 5).
set -uo pipefail
out=${1:-gpu-logs}
mkdir -p "$out"
export PYTHONUNBUFFERED=1
cd "$(dirname "$0")/.."
{ nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  python3 -c "import cupy, numpy, scipy; print('cupy', cupy.__version__, 'numpy', numpy.__version__, 'scipy', scipy.__version__)"
  python3 -m pip install -q --no-deps --no-build-isolation -e . 2>&1 | tail -3
} >"$out/env.txt" 2>&1
python3 -c "import lapcli" 2>/dev/null || export PYTHONPATH=$PWD
lap() { python3 -m lapcli.cli "$@"; }
status=0
python3 -m pytest -m gpu -q -p no:cacheprovider tests 2>&1 | tee "$out/pytest-gpu.txt" | tail -3 || status=1
lap bench --suite hylac --solvers cuda,cuda-stepwise --repeat "${BENCH_REPEAT:-5}" --warmup 1 \
  --json "$out/bench-hylac.json" 2>&1 | tee "$out/bench-hylac.txt" || status=1
matrix=$(mktemp -d)/m4096-r100.npy
lap generate --n 4096 --range 100 --seed 4096 -o "$matrix" --quiet
lap solve "$matrix" --solver cuda --quiet >/dev/null  # warm: compile and allocate
lap solve "$matrix" --solver cuda --report "$out/solve-4096-r100.json" 2>&1 | tee "$out/solve-4096-r100.txt" || status=1
python3 scripts/fuzz_gpu.py --seconds "${FUZZ_SECONDS:-60}" --out "$out/fuzz" | tail -2 || status=1
exit $status
