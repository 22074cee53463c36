// The point auction's tiles of columns (kernels/auction.cu's AuctionTiles; the launcher is
// lapcli.cuda.auction_tiles, the rule's NumPy twin lapcli.twins.tiles): the columns put in Morton's
// order, cut into tiles of 32 consecutive ones, each tile's box and, each round, its largest dual.
// The launcher puts this text after kernels/auction.cu. Coordinates are read from the columns'
// transposed copy (dim x stride), so that consecutive threads read consecutive columns.

#ifndef AUCTION_TILES_THREADS
#error "compile kernels/auction_tiles.cu with lapcli.cuda.auction_tiles.kernel_defines()"
#endif

// range[c] = the least of coordinate c over the m columns, range[dim + c] = its largest less the
// least (1 where that is 0): the scale of Morton's code. One block of AUCTION_TILES_THREADS.
__global__ void auction_tiles_range(const double* __restrict__ columns_t, long long stride, int m, int dim,
                                    double* __restrict__ range) {
    __shared__ double low[AUCTION_TILES_THREADS], high[AUCTION_TILES_THREADS];
    for (int c = 0; c < dim; ++c) {
        double lo = AUCTION_INF, hi = -AUCTION_INF;
        for (int j = threadIdx.x; j < m; j += blockDim.x) {
            const double x = columns_t[c * stride + j];
            lo = fmin(lo, x);
            hi = fmax(hi, x);
        }
        low[threadIdx.x] = lo;
        high[threadIdx.x] = hi;
        __syncthreads();
        for (int half = blockDim.x / 2; half > 0; half >>= 1) {
            if (threadIdx.x < half) {
                low[threadIdx.x] = fmin(low[threadIdx.x], low[threadIdx.x + half]);
                high[threadIdx.x] = fmax(high[threadIdx.x], high[threadIdx.x + half]);
            }
            __syncthreads();
        }
        if (threadIdx.x == 0) {
            const double span = __dsub_rn(high[0], low[0]);
            range[c] = low[0];
            range[dim + c] = span > 0.0 ? span : 1.0;
        }
        __syncthreads();  // low[0] and high[0] are read before the next coordinate's
    }
}

// Each column's Morton code: coordinate c of its first min(dim, 63) scaled to an integer of
// bits = min(63 / used, 52) bits (2^bits - 1 exact in a double: 2^63 - 1 would round to 2^63, whose
// top bit no code holds), ((x - least) / span) * (2^bits - 1) clamped and truncated, and bit b of
// coordinate c put at b * used + (used - 1 - c): the highest bits first, coordinate 0's first
// among them. Each operation rounded on its own, as the twin computes it.
__global__ void auction_tiles_codes(const double* __restrict__ columns_t, long long stride, int m, int dim,
                                    const double* __restrict__ range, unsigned long long* __restrict__ codes) {
    const int used = dim < 63 ? dim : 63;
    const int bits = 63 / used < 52 ? 63 / used : 52;
    const double top = (double)((1ull << bits) - 1);
    for (int j = blockIdx.x * blockDim.x + threadIdx.x; j < m; j += blockDim.x * gridDim.x) {
        unsigned long long code = 0;
        for (int c = 0; c < used; ++c) {
            const double scaled = __dmul_rn(__ddiv_rn(__dsub_rn(columns_t[c * stride + j], range[c]), range[dim + c]), top);
            const unsigned long long q = (unsigned long long)fmin(fmax(scaled, 0.0), top);
            for (int b = 0; b < bits; ++b) code |= ((q >> b) & 1ull) << (b * used + (used - 1 - c));
        }
        codes[j] = code;
    }
}

// The columns in their order (column j of the result is column order[j]), row-major (m x dim) and
// transposed (dim x stride_t), and tile t's box: boxes[2 dim t + c] the least coordinate c of its
// columns, boxes[2 dim t + dim + c] the largest. A warp a tile, lane l its column 32 t + l.
__global__ void auction_tiles_gather(const double* __restrict__ columns, const long long* __restrict__ order, int m,
                                     int dim, double* __restrict__ sorted, double* __restrict__ sorted_t,
                                     long long stride_t, double* __restrict__ boxes, int tiles) {
    const int lane = threadIdx.x & 31;
    const int warps = (blockDim.x >> 5) * gridDim.x;
    for (int t = (blockIdx.x * blockDim.x + threadIdx.x) >> 5; t < tiles; t += warps) {
        const int j = t * 32 + lane;
        const bool here = j < m;
        const long long from = here ? order[j] : 0;
        for (int c = 0; c < dim; ++c) {
            const double x = here ? columns[from * dim + c] : 0.0;
            if (here) {
                sorted[(long long)j * dim + c] = x;
                sorted_t[c * stride_t + j] = x;
            }
            double lo = here ? x : AUCTION_INF, hi = here ? x : -AUCTION_INF;
            for (int offset = 16; offset > 0; offset >>= 1) {
                lo = fmin(lo, __shfl_xor_sync(AUCTION_FULL_MASK, lo, offset));
                hi = fmax(hi, __shfl_xor_sync(AUCTION_FULL_MASK, hi, offset));
            }
            if (lane == 0) {
                boxes[2LL * dim * t + c] = lo;
                boxes[2LL * dim * t + dim + c] = hi;
            }
        }
    }
}

// Each tile's largest dual, at the start of a round (before its release pass): duals only fall
// during the bids, so it bounds the tile's duals the whole round (AuctionTiles). A warp a tile.
__global__ void auction_tile_duals(const AuctionColumn* __restrict__ columns, int n, double* __restrict__ tile_v,
                                   int tiles) {
    const int lane = threadIdx.x & 31;
    const int warps = (blockDim.x >> 5) * gridDim.x;
    for (int t = (blockIdx.x * blockDim.x + threadIdx.x) >> 5; t < tiles; t += warps) {
        const int j = t * 32 + lane;
        double v = j < n ? columns[j].v : -AUCTION_INF;
        for (int offset = 16; offset > 0; offset >>= 1) v = fmax(v, __shfl_xor_sync(AUCTION_FULL_MASK, v, offset));
        if (lane == 0) tile_v[t] = v;
    }
}
