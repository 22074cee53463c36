// Streamed passes over any cost source of kernels/costs.cuh (the launcher puts that text in front
// of this file): a dense work matrix, or two point sets whose costs are computed from the
// coordinates as they are read (no k x m matrix is stored).
//
// row_min: for every row i, min over j of c(i, j) - v[j] and the lowest column that attains it.
//   With v = 0 on the columns' side of two point sets (rows and columns swapped) it is
//   Jonker-Volgenant's column reduction (each column's minimum and its lowest row); with an
//   auction's duals it tells which rows are tight, the hand-over to the searches; with the final
//   duals it is the certificate's read pass (u[i] <= min_j c(i, j) - v[j]).
// pair_costs: c(i, col[i]) for every row, computed by the same code as the search's costs.

#define PASSES_FULL_MASK 0xffffffffu

// One warp per row, grid-stride over the rows: lane l scans columns l, l + 32, ... (coalesced).
// A NaN (a NaN dual) wins the minimum, so that it fails the certificate.
template <typename Source>
__global__ void row_min(const void* first, const void* second, long long stride, double p, double sign,
                        int k, int m, const double* __restrict__ v, double* __restrict__ out_min,
                        int* __restrict__ out_arg) {
    Source source(first, second, stride, p, sign);
    const int lane = threadIdx.x & 31;
    const int warps = (blockDim.x >> 5) * gridDim.x;
    for (int i = (blockIdx.x * blockDim.x + threadIdx.x) >> 5; i < k; i += warps) {
        source.load_row(i);
        double best = __longlong_as_double(0x7ff0000000000000LL);  // +inf
        int best_j = m;
        for (int j = lane; j < m; j += 32) {
            const double d = source.at(j) - (v != nullptr ? v[j] : 0.0);
            if (best == best && (d != d || d < best)) {  // once NaN, it stays
                best = d;
                best_j = j;
            }
        }
        for (int offset = 16; offset > 0; offset >>= 1) {
            const double other = __shfl_xor_sync(PASSES_FULL_MASK, best, offset);
            const int other_j = __shfl_xor_sync(PASSES_FULL_MASK, best_j, offset);
            const bool here_nan = best != best, there_nan = other != other;
            if (!here_nan && (there_nan || other < best || (other == best && other_j < best_j))) {
                best = other;
                best_j = other_j;
            }
        }
        if (lane == 0) {
            out_min[i] = best;
            if (out_arg != nullptr) out_arg[i] = best_j;
        }
    }
}

template <typename Source>
__global__ void pair_costs(const void* first, const void* second, long long stride, double p, double sign,
                           int k, const int* __restrict__ col, double* __restrict__ out) {
    const Source source(first, second, stride, p, sign);
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < k; i += blockDim.x * gridDim.x)
        out[i] = source.pair(i, col[i]);
}
