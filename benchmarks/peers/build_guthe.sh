#!/usr/bin/env bash
# Build the guthe-omp bench peer: Guthe & Thuerck's OpenMP LAP solver (github.com/sguthe/lap-solver)
# behind guthe_omp.cpp's C functions, as a shared library for lapcli/bench/guthe.py.
#
#   benchmarks/peers/build_guthe.sh SRC_DIR OUT_SO
#   LAPCLI_GUTHE_OMP=OUT_SO lap bench --solvers scipy,guthe-omp ...
#
# SRC_DIR holds the authors' lap_solver/ folder (lap.h, core/...), e.g. from a clone or
#   git -C lap-solver.git archive HEAD lap_solver | tar -x -C SRC_DIR
# Their code is never copied into this repository. Needs g++ with OpenMP (C++17); -march=native
# tunes for the machine it runs on, so build on the machine that benchmarks.
set -euo pipefail

if [ $# -ne 2 ]; then
    echo "usage: $0 SRC_DIR OUT_SO" >&2
    exit 2
fi
src_dir=$1
out_so=$2
if [ ! -f "$src_dir/lap_solver/lap.h" ]; then
    echo "$0: no lap_solver/lap.h under $src_dir" >&2
    exit 2
fi
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
mkdir -p "$(dirname "$out_so")"
set -x
"${CXX:-g++}" -std=c++17 -O3 -march=native -fopenmp -shared -fPIC -DNDEBUG -Wall \
    -I "$src_dir/lap_solver" "$here/guthe_omp.cpp" -o "$out_so"
