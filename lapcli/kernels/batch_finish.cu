// The end of a batch solve in ONE launch (lapcli/engines/cuda_batch.py, run_batch): for every
// problem of the (B, r, c) work stack, a warp
//   - proves the answer optimal (lapcli/certificate.py, here fused): with scale = max |cost| and
//     tol = c * scale * 2^-50 (0 for integers), checks cost - u - v >= -tol everywhere,
//     |cost - u - v| <= tol on the assigned pairs, and for c > r that v <= tol and that v is 0
//     (within tol) on the columns no row took (complementary slackness of the rectangular problem);
//   - sums the objective of the work values (exact in int64 for integer costs), plus the row
//     offsets the float reduction subtracted (row_offset may be null);
//   - writes the caller's columns: out[b, i] = col[i], or for a transposed problem (work rows are
//     the caller's columns) out[b, col[i]] = i with -1 for the caller's rows no column took.
// A block per problem (one pass over its costs, coalesced), a grid-stride loop over problems.
// Per problem, stats[k * batch + b] for k = objective, min slack, max assigned slack, tol, proved,
// non-finite (one row per statistic, so the host reduces each row contiguously): proved
// is 1, or 0 when the solve reported a status or a check failed; non-finite is 1 when some cost is
// NaN or infinite (the caller then checks the entries it skipped and solves again).
#define FINISH_STATS 6

#define FINISH_WARPS 4
#define FINISH_MAX_COLUMNS 2048

template <typename D> __device__ __forceinline__ D finish_largest();
template <> __device__ __forceinline__ long long finish_largest<long long>() { return 0x7fffffffffffffffLL; }
template <> __device__ __forceinline__ double finish_largest<double>() { return __longlong_as_double(0x7ff0000000000000LL); }

template <typename D> __device__ __forceinline__ D warp_reduce_min(D x) {
    for (int offset = 16; offset > 0; offset >>= 1) x = min(x, __shfl_xor_sync(0xffffffffu, x, offset));
    return x;
}
template <typename D> __device__ __forceinline__ D warp_reduce_max(D x) {
    for (int offset = 16; offset > 0; offset >>= 1) x = max(x, __shfl_xor_sync(0xffffffffu, x, offset));
    return x;
}
template <typename D> __device__ __forceinline__ D warp_reduce_sum(D x) {
    for (int offset = 16; offset > 0; offset >>= 1) x += __shfl_xor_sync(0xffffffffu, x, offset);
    return x;
}

// Block-wide reductions through one slot per warp (FINISH_WARPS warps per block).
template <typename D, typename Op> __device__ __forceinline__ D block_reduce(D x, D* slots, Op warp_op) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    x = warp_op(x);
    __syncthreads();  // the slots may still be read by the previous reduction
    if (lane == 0) slots[warp] = x;
    __syncthreads();
    D y = slots[0];
    for (int w = 1; w < FINISH_WARPS; ++w) y = warp_op.combine(y, slots[w]);
    return y;
}
struct MinOp {
    template <typename D> __device__ D operator()(D x) const { return warp_reduce_min(x); }
    template <typename D> __device__ D combine(D a, D b) const { return min(a, b); }
};
struct MaxOp {
    template <typename D> __device__ D operator()(D x) const { return warp_reduce_max(x); }
    template <typename D> __device__ D combine(D a, D b) const { return max(a, b); }
};
struct SumOp {
    template <typename D> __device__ D operator()(D x) const { return warp_reduce_sum(x); }
    template <typename D> __device__ D combine(D a, D b) const { return a + b; }
};

template <typename T, typename D>
__global__ void __launch_bounds__(32 * FINISH_WARPS) batch_finish(
        const T* __restrict__ cost, int batch, int r, int c, const int* __restrict__ col_of_row,
        const D* __restrict__ u, const D* __restrict__ v, const int* __restrict__ status,
        const double* __restrict__ row_offset, int transposed, int n_out, int exact,
        long long* __restrict__ out, double* __restrict__ stats, long long* __restrict__ objective_exact) {
    __shared__ unsigned taken[FINISH_MAX_COLUMNS / 32];
    __shared__ D slots_d[FINISH_WARPS];
    __shared__ double slots_f[FINISH_WARPS];
    __shared__ int slots_i[FINISH_WARPS];
    const int threads = 32 * FINISH_WARPS, words = (c + 31) / 32;
    for (int b = blockIdx.x; b < batch; b += gridDim.x) {  // a block per problem
        const T* costs = cost + (long long)b * r * c;
        const D* ub = u + (long long)b * r;
        const D* vb = v + (long long)b * c;
        const int* col = col_of_row + (long long)b * r;
        for (int w = threadIdx.x; w < words; w += threads) taken[w] = 0u;
        // dual feasibility and the scale of the costs: one pass over the problem, coalesced
        D smallest = finish_largest<D>();
        double scale = 0.0;
        int nonfinite = 0;
        const int size = r * c;  // r <= c <= FINISH_MAX_COLUMNS: fits an int
        for (int q = threadIdx.x; q < size; q += threads) {
            const int i = q / c, j = q - i * c;
            const T x = costs[q];
            smallest = min(smallest, (D)x - ub[i] - vb[j]);
            scale = fmax(scale, fabs((double)x));
            nonfinite |= !isfinite((double)x);  // NaN or +-inf: the entries were not checked
        }
        smallest = block_reduce(smallest, slots_d, MinOp());
        scale = block_reduce(scale, slots_f, MaxOp());
        nonfinite = block_reduce(nonfinite, slots_i, MaxOp());
        const double tol = exact ? 0.0 : (double)c * scale * 0x1p-50;
        // tight pairs, objective, taken columns
        D loosest = 0, total = 0;
        double offsets = 0.0;
        int bad = 0;
        for (int i = threadIdx.x; i < r; i += threads) {
            const int j = col[i];
            if (j < 0 || j >= c) { bad = 1; continue; }
            const D x = (D)costs[(long long)i * c + j];
            const D s = x - ub[i] - vb[j];
            loosest = max(loosest, s < 0 ? -s : s);
            total += x;
            if (row_offset) offsets += row_offset[(long long)b * r + i];
            atomicOr(&taken[j >> 5], 1u << (j & 31));
        }
        loosest = block_reduce(loosest, slots_d, MaxOp());
        total = block_reduce(total, slots_d, SumOp());
        offsets = block_reduce(offsets, slots_f, SumOp());  // its barriers also publish `taken`
        // the columns' own constraints (rectangular): v <= tol, v == 0 on free columns
        if (c > r) {
            for (int j = threadIdx.x; j < c; j += threads) {
                const double vj = (double)vb[j];
                const bool free_column = !((taken[j >> 5] >> (j & 31)) & 1u);
                if (vj > tol || (free_column && fabs(vj) > tol)) bad = 1;
            }
        }
        bad = block_reduce(bad, slots_i, MaxOp());
        const bool good = !bad && !nonfinite && status[b] == 0 && (double)smallest >= -tol && (double)loosest <= tol;
        // the caller's columns
        long long* row_out = out + (long long)b * n_out;
        if (transposed) {
            for (int i = threadIdx.x; i < n_out; i += threads) row_out[i] = -1;
            __syncthreads();
            for (int i = threadIdx.x; i < r; i += threads) { const int j = col[i]; if (j >= 0 && j < c) row_out[j] = i; }
        } else {
            for (int i = threadIdx.x; i < r; i += threads) row_out[i] = col[i];
        }
        if (threadIdx.x == 0) {
            double* mine = stats + b;
            mine[0] = (double)total + offsets;
            mine[1LL * batch] = (double)smallest;
            mine[2LL * batch] = (double)loosest;
            mine[3LL * batch] = tol;
            mine[4LL * batch] = good ? 1.0 : 0.0;
            mine[5LL * batch] = nonfinite ? 1.0 : 0.0;
            if (objective_exact) objective_exact[b] = (long long)total;
        }
        __syncthreads();  // taken and the slots are reused by the next problem of this block
    }
}
