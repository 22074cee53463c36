// The release pass of kernels/auction.cu on a point source, tiled (the launcher, lapcli.cuda.
// auction_release, puts costs.cuh, passes.cu and auction.cu in front of this file): the same rule
// (auction_release_row) in three launches.
//
// Why: auction_release gives each row that bid one warp, which reads every column's coordinates
// and dual for that row alone: a round of a few thousand such rows at 65,536 points reads some
// 10 GB through L2, 1.2-2 ms (H200), and a phase of few free rows is thousands of rounds. Here a
// block stages a tile of columns (coordinates and duals) in shared memory once and each thread
// scans its own row against it, so a column is read once a block of rows, and a cost is a few
// operations on registers and broadcast shared loads.
//
//   auction_release_list    the free rows go to the round's list as before; assigned rows marked
//                           fresh go to `checks` (a row a thread, a warp's appends in one atomic).
//   auction_release_scan    for each listed row and each chunk of the columns, the least c - v
//                           (the lowest column on ties), into scratch: work items are (a tile of
//                           rows, a chunk of columns), taken by a grid that fills the GPU.
//   auction_release_finish  a warp a listed row merges its chunks and applies the rule.
// The counts live on the device: the grid of each launch is fixed, and each kernel reads how many
// rows were listed (auction_release_chunks gives scan and finish the same split).

#if !defined(AUCTION_RELEASE_THREADS) || !defined(AUCTION_RELEASE_MAX_CHUNKS) || !defined(AUCTION_RELEASE_MIN_CHUNK)
#error "compile kernels/auction_release.cu with lapcli.cuda.auction_release.kernel_defines()"
#endif

// Appends `value` to list[] where `mine`, a warp's appends in one atomic (every lane calls it).
__device__ __forceinline__ void auction_append(bool mine, int value, int* list, int* count, int lane) {
    const unsigned mask = __ballot_sync(AUCTION_FULL_MASK, mine);
    if (mask == 0) return;
    int at = 0;
    if (lane == 0) at = atomicAdd(count, __popc(mask));
    at = __shfl_sync(AUCTION_FULL_MASK, at, 0);
    if (mine) list[at + __popc(mask & ((1u << lane) - 1))] = value;
}

// The column chunks a scan of `count` listed rows splits n columns into: two work items a block of
// a grid of `blocks`, chunks of at least AUCTION_RELEASE_MIN_CHUNK columns, at most
// AUCTION_RELEASE_MAX_CHUNKS of them, chunks x count within the scratch's `capacity` (>= n).
__device__ __forceinline__ int auction_release_chunks(int count, int n, int blocks, long long capacity) {
    const int row_tiles = (count + AUCTION_RELEASE_THREADS - 1) / AUCTION_RELEASE_THREADS;
    long long chunks = (2LL * blocks + row_tiles - 1) / max(row_tiles, 1);
    chunks = min(chunks, (long long)AUCTION_RELEASE_MAX_CHUNKS);
    chunks = min(chunks, (long long)((n + AUCTION_RELEASE_MIN_CHUNK - 1) / AUCTION_RELEASE_MIN_CHUNK));
    chunks = min(chunks, capacity / max(count, 1));
    return (int)max(chunks, 1LL);
}

// A free row is listed for the bids; an assigned row marked fresh is listed in checks[] (a row a
// thread, grid-stride by whole warps); rows marked AUCTION_DEFERRED are neither.
__global__ void auction_release_list(int n, const int* __restrict__ col_of_row, const unsigned char* __restrict__ fresh,
                                     int* __restrict__ free_rows, int* __restrict__ free_count,
                                     int* __restrict__ checks, int* __restrict__ check_count) {
    const int lane = threadIdx.x & 31;
    for (int base = blockIdx.x * blockDim.x + threadIdx.x - lane; base < n; base += blockDim.x * gridDim.x) {
        const int i = base + lane;
        bool is_free = false, is_check = false;
        if (i < n && fresh[i] != AUCTION_DEFERRED) {
            const int own = col_of_row[i];
            is_free = own < 0;
            is_check = own >= 0 && fresh[i] != 0;
        }
        auction_append(is_free, i, free_rows, free_count, lane);
        auction_append(is_check, i, checks, check_count, lane);
    }
}

// For listed row s and chunk c: chunk_best[c * count + s] = the least c(row, j) - v[j] over the
// chunk's columns, chunk_best_j the lowest j attaining it (n: none below +inf; a NaN never wins).
// Nothing bids during a release pass, so the duals are fixed.
template <typename Source>
__global__ void
auction_release_scan(const void* first, const void* second, long long stride, double p, double sign, int n,
                     const AuctionColumn* __restrict__ columns, const int* __restrict__ checks,
                     const int* __restrict__ check_count, long long capacity, double* __restrict__ chunk_best,
                     int* __restrict__ chunk_best_j) {
    constexpr int DIM = Source::DIMENSIONS;
    constexpr int TILE = DIM <= 8 ? 256 : 2048 / DIM;  // columns staged at a time: 16 KB or less
    __shared__ double tile_v[TILE];
    __shared__ double tile_y[TILE * DIM];
    const Source source(first, second, stride, p, sign);
    const int count = *check_count;
    const int chunks = auction_release_chunks(count, n, gridDim.x, capacity);
    const int row_tiles = (count + AUCTION_RELEASE_THREADS - 1) / AUCTION_RELEASE_THREADS;
    const int width = ((n + chunks - 1) / chunks + TILE - 1) / TILE * TILE;
    for (int item = blockIdx.x; item < row_tiles * chunks; item += gridDim.x) {
        const int chunk = item / row_tiles;
        const int slot = (item % row_tiles) * AUCTION_RELEASE_THREADS + threadIdx.x;
        const bool live = slot < count;
        double x[DIM];  // the row's point, in registers
        if (live) {
            const int i = checks[slot];
#pragma unroll
            for (int c = 0; c < DIM; ++c) x[c] = source.record(i, c);
        }
        double best = AUCTION_INF;
        int best_j = n;
        const int end = min(n, (chunk + 1) * width);
        for (int base = chunk * width; base < end; base += TILE) {
            const int span = min(TILE, end - base);
            __syncthreads();  // the last tile's reads are done
            for (int t = threadIdx.x; t < span; t += AUCTION_RELEASE_THREADS) {
                tile_v[t] = __ldcg(&columns[base + t].v);
                source.column(base + t, &tile_y[t * DIM]);
            }
            __syncthreads();
            if (live) {
#pragma unroll 4
                for (int t = 0; t < span; ++t) {  // ascending columns: a strict < keeps the lowest on ties
                    const double reduced = source.cost(x, base + t, &tile_y[t * DIM]) - tile_v[t];
                    if (reduced < best) {
                        best = reduced;
                        best_j = base + t;
                    }
                }
            }
        }
        if (live) {
            chunk_best[(long long)chunk * count + slot] = best;
            chunk_best_j[(long long)chunk * count + slot] = best_j;
        }
    }
}

// A warp a listed row (grid-stride): its best over the chunks, then auction_release_row; a released
// row joins the round's list. scan_blocks: the scan's grid, for its split.
template <typename Source>
__global__ void auction_release_finish(const void* first, const void* second, long long stride, double p, double sign,
                                       int n, AuctionColumn* __restrict__ columns, const int* __restrict__ col_of_row,
                                       int* __restrict__ candidates, int* __restrict__ added, double eps,
                                       int* __restrict__ free_rows, int* __restrict__ free_count,
                                       unsigned char* __restrict__ fresh, double* __restrict__ floors,
                                       const int* __restrict__ checks, const int* __restrict__ check_count,
                                       long long capacity, int scan_blocks, const double* __restrict__ chunk_best,
                                       const int* __restrict__ chunk_best_j) {
    const Source source(first, second, stride, p, sign);
    const int lane = threadIdx.x & 31;
    const int warps = (blockDim.x >> 5) * gridDim.x;
    const int count = *check_count;
    const int chunks = auction_release_chunks(count, n, scan_blocks, capacity);
    for (int s = (blockIdx.x * blockDim.x + threadIdx.x) >> 5; s < count; s += warps) {
        const int i = checks[s];
        const int own = col_of_row[i];
        double best = AUCTION_INF, second_best = AUCTION_INF;
        int best_j = n;
        for (int c = lane; c < chunks; c += 32)
            auction_merge(best, best_j, second_best, chunk_best[(long long)c * count + s],
                          chunk_best_j[(long long)c * count + s], AUCTION_INF);
        auction_warp_best(best, best_j, second_best);
        const bool release = auction_release_row(i, own, source.pair(i, own) - __ldcg(&columns[own].v), best, best_j,
                                                 eps, lane, columns, candidates, added, fresh, floors);
        if (release && lane == 0) free_rows[atomicAdd(free_count, 1)] = i;
    }
}
