// A C entry point to Guthe & Thuerck's OpenMP LAP solver (ACM TOMS Algorithm 1015,
// github.com/sguthe/lap-solver) for `lap bench --solvers guthe-omp` (lapcli/bench/guthe.py).
//
// Our own code: it includes the authors' headers (lap_solver/lap.h) from a checkout that is never
// copied into this repository; benchmarks/peers/build_guthe.sh compiles it into a shared library.
//
// It solves a dense n x m table (n <= m, row-major, host memory) as the OpenMP table runs of the
// authors' test program do (lap_solver/test/test_cpu.cpp, solveTableOMP):
//   * the same defines (LAP_OPENMP, LAP_QUIET, LAP_MINIMIZE_V);
//   * the costs copied in parallel into lap::omp::TableCost (each thread its own block of columns,
//     first touch), through lap::omp::SimpleCostFunction and Worksharing(m, 8): part of this call's
//     time, as a user of the library pays it;
//   * lap::omp::solve with epsilon scaling on: the test program's default (-epsilon) and the
//     setting of the published measurements;
//   * all of omp_get_max_threads(), but at most m / 8 threads, so that every thread owns columns
//     (Worksharing hands out blocks of 8; a thread with none reads an empty allocation). The OpenMP
//     solver needs two threads at least (thread 1 flips the augmenting path), so a table narrower
//     than 16 columns, or a single-thread run, is solved by the authors' sequential lap::solve;
//   * n < m as the solver does it (m - n virtual rows of zeros); n > m is the caller's transpose;
//   * when epsilon scaling leaves no matching (a NaN epsilon: see solve_with_fallback), the same
//     table solved again without it, in the same call.
//
// Cost types: the table keeps the caller's type (TC); the solver's type (SC: duals, distances) is
//   float32 -> float,  float64 -> double  (as the test program's random tables: <C, C>)
//   int32   -> long long                  (the test program's integer tables keep int costs and
//   int64   -> long long                   take SC from -int/-long/-float/-double; an int SC would
//                                          overflow in c - v for costs near 2^31, a floating SC
//                                          rounds the epsilon-scaled duals: int64 is exact)
// int64 costs must stay well inside 2^62 (c - v and path lengths are formed in int64).
// Costs must be finite: the solver has no notion of a forbidden pair.
//
// Each function returns 0 and writes column_of_row[0..n) on success; 1 for a bad shape
// (n < 0, m < n), 2 when the solver threw (e.g. std::bad_alloc), 3 when its answer is not a
// matching (every row a distinct column in [0, m)), with epsilon scaling and without.

#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>

#include <omp.h>

#define LAP_OPENMP
#define LAP_QUIET
#define LAP_MINIMIZE_V
#include "lap.h"

namespace {

// Sets this thread's OpenMP thread count (the ICV that omp_get_max_threads reads) for one solve.
struct ThreadCount {
    int before;
    explicit ThreadCount(int threads) : before(omp_get_max_threads()) { omp_set_num_threads(threads); }
    ~ThreadCount() { omp_set_num_threads(before); }
};

// Whether rowsol[0..n) is a matching into [0, m); if so, copied to column_of_row.
bool take_matching(const std::vector<int>& rowsol, int n, int m, int* column_of_row)
{
    std::vector<char> taken(m, 0);
    for (int i = 0; i < n; i++) {
        const int j = rowsol[i];
        if (j < 0 || j >= m || taken[j]) return false;
        taken[j] = 1;
    }
    for (int i = 0; i < n; i++) column_of_row[i] = rowsol[i];
    return true;
}

// solve(rowsol, use_epsilon) on one table: with epsilon scaling, and once more without it when that
// left no matching. The authors' epsilon estimate divides 0 by 0 when the identity is row-wise
// minimal (every n = 1, often n = 2, any table whose diagonal holds each row's minimum): epsilon
// becomes NaN and the solver returns without touching rowsol (integer SC casts the NaN and runs).
template <class SOLVE>
int solve_with_fallback(SOLVE solve, int n, int m, int* column_of_row)
{
    std::vector<int> rowsol(m, -1);  // the solver writes m entries (virtual rows when n < m)
    solve(rowsol.data(), true);
    if (take_matching(rowsol, n, m, column_of_row)) return 0;
    std::fill(rowsol.begin(), rowsol.end(), -1);
    solve(rowsol.data(), false);
    return take_matching(rowsol, n, m, column_of_row) ? 0 : 3;
}

template <class SC, class TC>
int solve_table(const TC* cost, int n, int m, int* column_of_row)
{
    if (n < 0 || m < n) return 1;
    if (n == 0) return 0;
    try {
        auto get_cost = [cost, m](int x, int y) -> TC { return cost[(long long)x * m + y]; };
        const int threads = std::min(omp_get_max_threads(), m / 8);
        if (threads >= 2) {
            ThreadCount scope(threads);
            lap::omp::SimpleCostFunction<TC, decltype(get_cost)> cost_function(get_cost);
            lap::omp::Worksharing ws(m, 8);
            lap::omp::TableCost<TC> table(n, m, cost_function, ws);
            lap::omp::DirectIterator<TC, lap::omp::TableCost<TC>> iterator(table, ws);
            return solve_with_fallback([&](int* rowsol, bool epsilon) {
                lap::omp::solve<SC>(n, m, table, iterator, rowsol, epsilon);
            }, n, m, column_of_row);
        }
        lap::SimpleCostFunction<TC, decltype(get_cost)> cost_function(get_cost);
        lap::TableCost<TC> table(n, m, cost_function);
        lap::DirectIterator<TC, lap::TableCost<TC>> iterator(table);
        return solve_with_fallback([&](int* rowsol, bool epsilon) {
            lap::solve<SC>(n, m, table, iterator, rowsol, epsilon);
        }, n, m, column_of_row);
    } catch (...) {
        return 2;
    }
}

}  // namespace

extern "C" {

int guthe_omp_solve_i32(const int32_t* cost, int n, int m, int* column_of_row)
{
    return solve_table<long long, int>(reinterpret_cast<const int*>(cost), n, m, column_of_row);
}

int guthe_omp_solve_i64(const int64_t* cost, int n, int m, int* column_of_row)
{
    return solve_table<long long, long long>(reinterpret_cast<const long long*>(cost), n, m, column_of_row);
}

int guthe_omp_solve_f32(const float* cost, int n, int m, int* column_of_row)
{
    return solve_table<float, float>(cost, n, m, column_of_row);
}

int guthe_omp_solve_f64(const double* cost, int n, int m, int* column_of_row)
{
    return solve_table<double, double>(cost, n, m, column_of_row);
}

}
