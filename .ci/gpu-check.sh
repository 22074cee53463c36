#!/usr/bin/env bash
# One call on a GPU machine without network: install from the checkout (no downloads), run the GPU
# tests, compute-sanitizer on small solves and batches, the auto/crossover grid (scipy, cuda,
# cuda-sap, auto), the ranges suite at n = 1024 and 2048, the HyLAC comparison points, the batch
# suite, the largest single solve (n = 65,536 host -> host), the step table at n=4096 R=100, a cold
# `lap solve` against its kernel time, and the fuzzer in parallel processes. Logs go to the folder
# given as $1 (default ./gpu-logs). To compare two checkouts' speed on one machine, see
# benchmarks/compare_trees.py.
# Environment: GPU_TESTS (pytest's paths, default tests: split the suite over two calls where it does not fit one),
# SANITIZERS (default memcheck racecheck synccheck), FUZZ_SECONDS (default 60), FUZZ_WORKERS (default 6), BENCH_REPEAT (default 5),
# BATCH_SOLVERS (the batch suite's runners; default cuda-batch, torch-la, both columns each),
# SKIP (space-separated parts to skip: tests sanitizer crossover structured points ranges hylac batch matcher big
# solve startup cold fuzz).
# structured: n = STRUCTURED_SIZES (default 2048,4096,8192), STRUCTURED_TIMEOUT s a solve (default 8); with
# Guthe-Thuerck's sources in .guthe/ (carried: git -C <clone of sguthe/lap-solver> archive HEAD lap_solver |
# tar -x -C .guthe), their OpenMP solver is built and timed beside lapcli's engines.
# points: lap bench --suite points up to POINTS_SIZES (default 2048,4096,8192), costs from the
# coordinates beside the dense matrix; with Guthe-Thuerck's GPU test program at GUTHE_GPU (default
# .guthe/test_gpu, built by benchmarks/peers/build_guthe_gpu.sh and carried) also their solver on
# squared 2-D distances at the same sizes (float64, epsilon scaling, cost table in device memory up to 32,768
# points, costs computed on the fly above: -geometric's table there is cached from host memory, past 270 s at
# 65,536 on an H200).
# ranges: the suite at n = 1024 and 2048 beside scipy and lapx (~2 minutes on an H100; lapx from .whl/).
# Peers travel as wheels (.whl, see the device notes): with torch-linear-assignment on PYTHONPATH
# the batch part runs it beside lapcli's batch engine.
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
# pip writes the package's bytecode at install time; an editable install does not, and this machine
# may set PYTHONDONTWRITEBYTECODE, so every process would recompile lapcli: compile it once, as pip does.
echo "PYTHONDONTWRITEBYTECODE=${PYTHONDONTWRITEBYTECODE:-unset}" >>"$out/env.txt"
python3 -m compileall -q lapcli >/dev/null
if [ "${PYTHONDONTWRITEBYTECODE:-}" = 1 ]; then  # this image ships site-packages without bytecode
  # every package a cold `lap solve` may import (a CuPy operator with a number loads cupyx.scipy),
  # each where it is installed (cuda: the namespace of cuda.bindings)
  compiled=""
  for package in numpy scipy cupy cupyx cupy_backends cuda.bindings click rich h5py; do
    where=$(python3 -c "import importlib.util as u; s=u.find_spec('$package'); print(s.submodule_search_locations[0])" 2>/dev/null) \
      && python3 -m compileall -q -j 0 "$where" >/dev/null 2>&1 && compiled="$compiled $package"
  done
  echo "compiled bytecode of$compiled (pip's default at install time)" >>"$out/env.txt"
fi
lap() { python3 -m lapcli "$@"; }
skip() { [[ " ${SKIP:-} " == *" $1 "* ]]; }
status=0
if ! skip tests; then
  # -v: a run cut off by the call's limit still shows the test it was in; --durations: where the time went
  # GPU_TESTS: the test files or node ids (default: all); the whole suite took ~10 minutes on an H200
  python3 -m pytest -m gpu -v -p no:cacheprovider --durations=25 ${GPU_TESTS:-tests} 2>&1 | tee "$out/pytest-gpu.txt" | tail -3 || status=1
fi
if ! skip sanitizer; then  # memcheck, racecheck (shared memory), synccheck on small cooperative solves
  for tool in ${SANITIZERS:-memcheck racecheck synccheck}; do
    short=$([ "$tool" = memcheck ] || echo --short)  # racecheck and synccheck: fewer, smaller dense solves
    compute-sanitizer --tool $tool --error-exitcode 9 python3 .ci/sanitize_solves.py $short >"$out/sanitizer-$tool.txt" 2>&1 \
      && echo "compute-sanitizer $tool: clean" || { echo "compute-sanitizer $tool: FAILED"; status=1; }
    tail -2 "$out/sanitizer-$tool.txt"
  done | tee "$out/sanitizer.txt"
fi
if ! skip crossover; then  # auto within 10% of the fastest of scipy, cuda and cuda-sap
  for kind in "uniform --ranges 1" "uniform --ranges 1000" "float --ranges 1" "geometric --ranges 1"; do
    set -- $kind
    lap bench --kind "$1" --dtypes $([ "$1" = uniform ] && echo int32 || echo float64) --sizes 64,128,256,384,512,1024,2048 \
      "$2" "$3" --solvers scipy,cuda,cuda-sap,auto --baseline scipy --repeat "${BENCH_REPEAT:-5}" --warmup 1 \
      --json "$out/crossover-$1-$3.json" 2>&1 | tee -a "$out/crossover.txt" || status=1
  done
fi
if ! skip points; then  # point sets: implicit costs beside the dense matrix, every answer certified
  lap bench --suite points --sizes "${POINTS_SIZES:-2048,4096,8192}" --solvers cuda-sap,dense,auto --repeat 3 \
    --warmup 1 --json "$out/points.json" 2>&1 | tee "$out/points.txt" || status=1
  guthe_gpu=$(realpath -m "${GUTHE_GPU:-.guthe/test_gpu}")
  if [ -x "$guthe_gpu" ]; then  # their own points and timer: compared by n, not by instance (docs/points.md)
    sizes=${POINTS_SIZES:-2048,4096,8192}
    for n in ${sizes//,/ }; do  # their cached mode above 32,768, as the H100 record (a 65,536 table, 34 GB, passes -memory)
      mode=$([ "$n" -le 32768 ] && echo "-geometric -table_min $n -table_max $n" || echo "-geometric_cached -cached_min $n -cached_max $n")
      (cd "$out" && timeout 300 "$guthe_gpu" -double -epsilon $mode -memory 15032385536) >>"$out/guthe-gpu.txt" 2>&1 \
        || echo "guthe-gpu n=$n: exit $?" >>"$out/guthe-gpu.txt"
    done
  fi
fi
if ! skip structured; then  # distances, U[0, 1) floats and R = 1000 integers, 2048 to 8192: cuda, cuda-sap, auto
  # (the one-block search, then the auction start over a cluster; a solve past 8 s skips that solver's larger sizes),
  # beside Guthe-Thuerck's OpenMP solver when its sources travel in .guthe/ (GUTHE_SRC; benchmarks/peers/build_guthe.sh)
  solvers=cuda,cuda-sap,auto baseline=cuda
  if [ -f "${GUTHE_SRC:-.guthe}/lap_solver/lap.h" ] && bash benchmarks/peers/build_guthe.sh "${GUTHE_SRC:-.guthe}" \
      /tmp/guthe/libguthe_omp.so >"$out/guthe-build.txt" 2>&1; then
    export LAPCLI_GUTHE_OMP=/tmp/guthe/libguthe_omp.so
    solvers=guthe-omp,cuda,cuda-sap,auto baseline=guthe-omp
  fi
  lap bench --suite structured --sizes "${STRUCTURED_SIZES:-2048,4096,8192}" --solvers "$solvers" --baseline "$baseline" \
    --repeat 1 --warmup 1 --timeout "${STRUCTURED_TIMEOUT:-8}" --json "$out/structured.json" 2>&1 \
    | tee "$out/structured.txt" || status=1
fi
if ! skip ranges; then  # auto against the faster of scipy and lapx (n = 4096 and 8192 take far longer)
  python3 -c "import lap" 2>/dev/null || python3 -m pip install -q --no-deps --no-index .whl/lapx*.whl 2>/dev/null
  peers=$(python3 -c "import lap" 2>/dev/null && echo scipy,lapx || echo scipy)
  lap bench --suite ranges --sizes 1024,2048 --solvers "$peers,cuda,cuda-sap,auto" --baseline "$peers" \
    --repeat "${BENCH_REPEAT:-5}" --warmup 1 --json "$out/bench-ranges.json" 2>&1 | tee "$out/bench-ranges.txt" || status=1
fi
if ! skip hylac; then
  lap bench --suite hylac --solvers cuda,cuda-stepwise --repeat "${BENCH_REPEAT:-5}" --warmup 1 \
    --json "$out/bench-hylac.json" 2>&1 | tee "$out/bench-hylac.txt" || status=1
fi
if ! skip batch; then  # the eight cells, lapcli's batch engine beside torch-linear-assignment
  lap bench --suite batch --solvers "${BATCH_SOLVERS:-cuda-batch,cuda-batch:d2d,torch-la,torch-la:d2d}" --repeat "${BENCH_REPEAT:-5}" \
    --warmup 2 --json "$out/bench-batch.json" 2>&1 | tee "$out/bench-batch.txt" || status=1
fi
if ! skip matcher; then  # DETR's matcher: the ragged forms beside the scipy loop, torch-la and, when its source
  # travels in .ha4detr/ (HA4DETR_SRC), HA4DETR (built on import by torch's cpp_extension)
  [ -f "${HA4DETR_SRC:-.ha4detr}/hungarian_gpu_batch.py" ] && export LAPCLI_HA4DETR=$PWD/${HA4DETR_SRC:-.ha4detr}
  lap bench --suite matcher --repeat "${BENCH_REPEAT:-5}" --json "$out/bench-matcher.json" 2>&1 \
    | tee "$out/bench-matcher.txt" || status=1
fi
if ! skip big; then  # the largest single problem host -> host (n = 65,536 int32, 17 GB)
  python3 benchmarks/big_solve.py --n "${BIG_N:-65536}" --out "$out/big-solve.json" 2>&1 | tee "$out/big-solve.txt" || status=1
fi
matrix=$(mktemp -d)/m4096-r100.npy
lap generate --n 4096 --range 100 --seed 4096 -o "$matrix" --quiet
if ! skip solve; then
  lap solve "$matrix" --solver cuda --quiet >/dev/null  # warm: compile and allocate
  lap solve "$matrix" --solver cuda --report "$out/solve-4096-r100.json" 2>&1 | tee "$out/solve-4096-r100.txt" || status=1
fi
if ! skip startup; then  # where a one-shot solve's wall time goes: imports, then the whole run profiled
  python3 -X importtime -m lapcli solve "$matrix" -o /tmp/a.npy --quiet 2>"$out/importtime.txt"
  sort -t'|' -k2 -n "$out/importtime.txt" | tail -15 > "$out/importtime-top.txt"
  python3 -m cProfile -s cumulative -m lapcli solve "$matrix" -o /tmp/a.npy --quiet 2>&1 | head -70 > "$out/profile-solve.txt"
fi
if ! skip cold; then  # a cold one-shot solve's wall time against its kernel time
  cold() {  # $1 label; the rest: options of lap solve (an environment for the run goes before the call)
    local label=$1; shift
    rm -f /tmp/cold.json; sync; start=$(date +%s.%N)  # (a failed solve leaves no report to misread)
    python3 -m lapcli solve "$matrix" -o /tmp/a.npy --quiet --report /tmp/cold.json "$@"
    end=$(date +%s.%N)
    python3 -c "import json,sys; r=json.load(open('/tmp/cold.json')); d=r['details']; w=($end-$start)*1e3; print(f'cold lap solve n=4096 ($label): wall {w:.0f} ms, kernel {d[\"kernel_ms\"]:.0f} ms, over the kernel {w-d[\"kernel_ms\"]:.0f} ms, solver {r[\"solver\"]}, route {d.get(\"route\")}, early start {d.get(\"driver_started_early\")}, compile {d[\"compile_ms\"]:.0f} ms')"
  }
  for solver in auto cuda-sap; do lap solve "$matrix" -o /tmp/a.npy --quiet --solver $solver; done  # compile caches
  for i in 1 2 3 4 5; do cold default; done | tee "$out/cold-solve.txt"
  for i in 1 2 3; do LAPCLI_DETACH_TEARDOWN=0 cold "teardown in the process"; done | tee -a "$out/cold-solve.txt"
  for i in 1 2 3; do cold "cuda-sap, its first call" --solver cuda-sap; done | tee -a "$out/cold-solve.txt"
  # integer distances: auto's one solve (cuda) against cuda-sap (the auction start, then the cluster searches)
  classical=$matrix matrix=$(mktemp -d)/g4096-int.npy
  lap generate --n 4096 --kind geometric-int --seed 4096 -o "$matrix" --quiet
  for solver in auto cuda-sap; do lap solve "$matrix" -o /tmp/a.npy --quiet --solver $solver; done  # compile caches
  for i in 1 2 3; do cold "integer distances"; done | tee -a "$out/cold-solve.txt"
  for i in 1 2 3; do cold "integer distances, cuda-sap" --solver cuda-sap; done | tee -a "$out/cold-solve.txt"
  matrix=$classical
fi
if ! skip fuzz; then  # several processes share the GPU; each has its own seed
  workers=${FUZZ_WORKERS:-6}
  for w in $(seq 1 "$workers"); do
    solver=$([ $((w % 2)) = 0 ] && echo cuda-sap || echo cuda)  # every second worker fuzzes cuda-sap,
    cluster=$([ $((w % 4)) = 0 ] && echo "--sap-one-block-up-to 0")  # every fourth its cluster kernel,
    [ "$w" -gt 2 ] && [ $((w % 4)) = 2 ] && cluster="--sap-scaled-auction-from 0"  # the sixth its auction start in one block
    python3 benchmarks/fuzz_gpu.py --solver "$solver" --seconds "${FUZZ_SECONDS:-60}" --batch-solver cuda-batch \
      --seed "$((RANDOM * 32768 + RANDOM + w))" $cluster \
      --out "$out/fuzz-$w" >"$out/fuzz-$w.log" 2>&1 &
  done
  wait
  python3 - "$out" "$workers" <<'PY' | tee "$out/fuzz-summary.txt" || status=1
import json, sys
out, workers = sys.argv[1], int(sys.argv[2])
total = {}
for w in range(1, workers + 1):
    try:
        summary = json.load(open(f"{out}/fuzz-{w}/summary.json"))
    except FileNotFoundError:
        print(f"worker {w} wrote no summary"); sys.exit(1)
    for key in ("solves", "ok", "mismatch", "error", "hang", "uncertified", "batches", "batch_members"):
        total[key] = total.get(key, 0) + summary.get(key, 0)
    total.setdefault("solves_by_solver", {}).setdefault(summary["solver"], 0)
    total["solves_by_solver"][summary["solver"]] += summary.get("solves", 0)
    total["seconds"] = max(total.get("seconds", 0), summary["seconds"])
    total["largest_side"] = max(total.get("largest_side", 0), summary["largest_side"])
    total.setdefault("seeds", []).append(summary["seed"])
print("fuzz total:", json.dumps(total))
sys.exit(0 if total["ok"] == total["solves"] else 1)
PY
  grep -h -E "^(mismatch|error|hang|uncertified):" "$out"/fuzz-*.log | head -20
fi
exit $status
