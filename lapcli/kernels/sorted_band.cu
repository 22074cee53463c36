// Engine sorted's band programme on the GPU (the host's: lapcli/engines/cpu/sorted_band.py, whose
// docstring gives the why): k sorted rows matched in order to k of m columns, row r to one of the
// columns r .. r + width - 1 (width = m - k + 1). Row r's table
//     F_r(t) = min(F_r(t - 1), F_{r-1}(t) + w(r, r + t)),  F_{-1} = 0,
// is a prefix minimum of taking(t) = F_{r-1}(t) + w(r, r + t): the rows in turn (the next row
// needs all of this one's), each spread over the GPU. Bit t of row r is set where F_r(t) came
// from taking(t) (t = 0, or taking(t) < F_r(t - 1): ties keep the leftmost column, as on the
// host), and band_back reads the pairs back from the last row up. The source is
// kernels/costs.cuh's Points<METRIC, 1> (x = the rows' points, columns_t = the columns'), so a
// cost is the number the certificate reads. Sums past float64's range become +-inf, and every
// total through them passes it too.

#include <cooperative_groups.h>

#if !defined(BAND_THREADS) || !defined(BAND_MIN_BLOCKS)
#error "compile kernels/sorted_band.cu with lapcli.cuda.sorted_band.kernel_defines()"
#endif

#define BAND_FULL_MASK 0xffffffffu

// Rows r0 .. r1 - 1 of the programme in one cooperative grid of up to BAND_THREADS-thread blocks; least
// holds F_{r0-1} on entry (zeros for r0 = 0) and F_{r1-1} on exit; took[r * words + t / 32] bit
// t % 32 as above. The grid's warps own consecutive segments of t (segment a multiple of 32), their
// lanes 32 consecutive t at a time, so that every load and store is coalesced and each bit word is
// one warp's ballot. A row: taking(t) and each segment's minimum; each block's minimum, by warp 0's
// exclusive scan of its warps'; one grid barrier (a block's, where one block holds the band); the
// minimum of the earlier blocks' (two slots a block, by the row's parity: a slot is written again
// two barriers later, after every block read it); then each warp's prefix minimum over its segment
// from its carry, F_r(begin - 1).
template <typename Source>
__global__ void __launch_bounds__(BAND_THREADS, BAND_MIN_BLOCKS)
band_rows(const void* first, const void* second, long long stride, double p, double sign, int r0, int r1, int width,
          int segment, double* __restrict__ least, unsigned int* __restrict__ took, long long words,
          double* __restrict__ block_minima) {
    const double inf = __longlong_as_double(0x7ff0000000000000LL);
    cooperative_groups::grid_group grid = cooperative_groups::this_grid();
    Source source(first, second, stride, p, sign);
    __shared__ double carries[32];  // the block's warps' minima, then each one's carry within the block
    __shared__ double before_block;  // the earlier blocks' minimum
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
    const int begin = (int)min((long long)(blockIdx.x * warps + warp) * segment, (long long)width);
    const int end = min(begin + segment, width);
    for (int r = r0; r < r1; ++r) {
        double* minima = block_minima + (r & 1) * gridDim.x;
        source.load_row(r);
        double lowest = inf;
#pragma unroll 2
        for (int t = begin + lane; t < end; t += 32) {
            const double taking = least[t] + source.at(r + t);
            least[t] = taking;
            lowest = fmin(lowest, taking);
        }
        for (int offset = 16; offset > 0; offset >>= 1)
            lowest = fmin(lowest, __shfl_xor_sync(BAND_FULL_MASK, lowest, offset));
        if (lane == 0) carries[warp] = lowest;
        __syncthreads();
        if (warp == 0) {  // the warps' minima, scanned exclusively; the block's minimum
            double total = lane < warps ? carries[lane] : inf;
            for (int offset = 1; offset < 32; offset <<= 1) {
                const double before = __shfl_up_sync(BAND_FULL_MASK, total, offset);
                if (lane >= offset) total = fmin(total, before);
            }
            const double earlier = __shfl_up_sync(BAND_FULL_MASK, total, 1);
            if (lane < warps) carries[lane] = lane == 0 ? inf : earlier;
            if (lane == 31) minima[blockIdx.x] = total;
        }
        if (gridDim.x == 1)  // a thin band: one block holds the row, and a block's barrier is enough
            __syncthreads();
        else
            grid.sync();
        if (warp == 0) {
            double earlier = inf;
            for (int b = lane; b < (int)blockIdx.x; b += 32) earlier = fmin(earlier, minima[b]);
            for (int offset = 16; offset > 0; offset >>= 1)
                earlier = fmin(earlier, __shfl_xor_sync(BAND_FULL_MASK, earlier, offset));
            if (lane == 0) before_block = earlier;
        }
        __syncthreads();
        double carry = fmin(carries[warp], before_block);  // F_r(begin - 1)
        unsigned int* bits = took + (long long)r * words;
#pragma unroll 2
        for (int base = begin; base < end; base += 32) {
            const int t = base + lane;
            const double taking = t < end ? least[t] : inf;
            double inclusive = taking;
            for (int offset = 1; offset < 32; offset <<= 1) {
                const double before = __shfl_up_sync(BAND_FULL_MASK, inclusive, offset);
                if (lane >= offset) inclusive = fmin(inclusive, before);
            }
            double exclusive = __shfl_up_sync(BAND_FULL_MASK, inclusive, 1);
            exclusive = fmin(lane == 0 ? inf : exclusive, carry);  // F_r(t - 1)
            const unsigned int word = __ballot_sync(BAND_FULL_MASK, t < end && (t == 0 || taking < exclusive));
            if (t < end) least[t] = fmin(inclusive, carry);
            if (lane == 0) bits[base >> 5] = word;
            carry = fmin(carry, __shfl_sync(BAND_FULL_MASK, inclusive, 31));
        }
    }
}

// The pairs of rows r1 - 1 down to r0 (one thread; launched from the last slice up): row r takes
// r + t for the highest set bit t at or below the bound the row after it left (width - 1 for the
// last row, else what row r1 took). Bit 0 is always set.
__global__ void band_back(const unsigned int* __restrict__ took, int k, int r0, int r1, int width, long long words,
                          long long* __restrict__ cols) {
    int t = r1 == k ? width - 1 : (int)(cols[r1] - r1);
    for (int r = r1 - 1; r >= r0; --r) {
        const unsigned int* bits = took + (long long)r * words;
        int w = t >> 5;
        const int top = t & 31;
        unsigned int word = bits[w] & (top == 31 ? BAND_FULL_MASK : (1u << (top + 1)) - 1u);
        while (word == 0) word = bits[--w];
        t = (w << 5) + 31 - __clz(word);
        cols[r] = (long long)r + t;
    }
}
