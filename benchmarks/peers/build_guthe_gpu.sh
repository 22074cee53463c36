#!/usr/bin/env bash
# Build Guthe & Thuerck's own GPU test program (github.com/sguthe/lap-solver, test/test_gpu.cu),
# the reference that docs/points.md times beside `lapcli.solve_points`.
#
#   benchmarks/peers/build_guthe_gpu.sh SRC_DIR OUT_BINARY
#   OUT_BINARY -double -epsilon -geometric -table_min 8192 -table_max 8192 -memory 15032385536
#
# -memory (bytes a device may hold) is required: without it the program's device-count loop
# never ends and it prints nothing.
#
# SRC_DIR holds the authors' lap_solver/ folder (as for build_guthe.sh). CUDA 13 removed
# cudaDeviceProp::computeMode, which core/cuda/lap_worksharing.h reads; a patched copy in a
# temporary folder treats every device as usable. Takes ~3 min on 2 cores; the binary (sm_90)
# runs on the GPU machine as it is.
set -euo pipefail

if [ $# -ne 2 ]; then
    echo "usage: $0 SRC_DIR OUT_BINARY" >&2
    exit 2
fi
src_dir=$1
out=$(realpath -m "$2")
if [ ! -f "$src_dir/lap_solver/test/test_gpu.cu" ]; then
    echo "$0: no lap_solver/test/test_gpu.cu under $src_dir" >&2
    exit 2
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp -r "$src_dir/lap_solver" "$work/"
header="$work/lap_solver/core/cuda/lap_worksharing.h"
sed -i 's/deviceProp\.computeMode != cudaComputeModeProhibited/true/' "$header"
if grep -q computeMode "$header"; then
    echo "$0: $header still reads computeMode: the authors' code changed; patch it by hand" >&2
    exit 1
fi
mkdir -p "$(dirname "$out")"
cd "$work/lap_solver"
set -x
nvcc -O3 -std=c++17 --extended-lambda -arch="${GUTHE_ARCH:-sm_90}" -Xcompiler -fopenmp -I. test/test_gpu.cu -o "$out"
