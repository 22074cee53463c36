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
//                           rows, a chunk of columns), taken by a grid that fills the GPU. Where
//                           the columns are in tiles (lapcli.cuda.auction_tiles), a row reads only
//                           the tiles that could release it (auction_release_needs).
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

// Which of the `group` tiles of 32 columns from `first_tile` the row `source` has loaded must read,
// a bit a tile: those whose bound (the metric to the tile's box less its largest dual,
// lapcli.cuda.auction_tiles) is at or below `own`, the row's reduced cost on its own column. The
// rule releases a row only for a column more than 2 eps below `own`: every column of a skipped
// tile is above it, so a released row's best column (and the lowest of its ties) lies in a tile
// read, and a row with no column below `own` is kept either way. The tiles' largest duals were
// taken at the start of this round: nothing has bid since, so each bound is at or below its
// tile's reduced costs. Its NumPy twin: lapcli.twins.tiles.tiles_read_in_release.
template <typename Source>
__device__ __forceinline__ unsigned auction_release_needs(const Source& source, const AuctionTiles& tiles,
                                                          int first_tile, int group, double own) {
    unsigned needs = 0;
    for (int g = 0; g < group && first_tile + g < tiles.count; ++g) {
        const int t = first_tile + g;
        const double bound = source.box_bound(tiles.boxes + 2LL * Source::DIMENSIONS * t) - tiles.v[t];
        needs |= (unsigned)!(bound > own) << g;  // a NaN bound is read
    }
    return needs;
}

// For listed row s and chunk c: chunk_best[c * count + s] = the least c(row, j) - v[j] over the
// chunk's columns, chunk_best_j the lowest j attaining it (n: none below +inf; a NaN never wins).
// Nothing bids during a release pass, so the duals are fixed. With tiles (tile_count > 0; point
// sources of up to AUCTION_TILES_MAX_DIM coordinates) a row reads only the tiles
// auction_release_needs keeps (a chunk of a row whose tiles are all skipped stays +inf), and a
// block stages a group of columns only where one of its rows needs it. After a bid a row's rivals
// are its own region's columns; reading all n for each of the ~10^5 rows a round of a price war
// lists took 95 % of the kernel time of 1,048,576 clustered points' coarse phase (H200).
template <typename Source>
__global__ void
auction_release_scan(const void* first, const void* second, long long stride, double p, double sign, int n,
                     const AuctionColumn* __restrict__ columns, const int* __restrict__ col_of_row,
                     const int* __restrict__ checks, const int* __restrict__ check_count, long long capacity,
                     double* __restrict__ chunk_best, int* __restrict__ chunk_best_j,
                     const double* __restrict__ tile_boxes, const double* __restrict__ tile_v, int tile_count) {
    constexpr int DIM = Source::DIMENSIONS;
    constexpr int TILE = DIM <= 8 ? 256 : 2048 / DIM;  // columns staged at a time: 16 KB or less
    constexpr bool BY_TILES = Source::BOXES && DIM <= AUCTION_TILES_MAX_DIM;
    constexpr int GROUP = TILE / 32;  // the tiles of a staged group of columns (8 where there are tiles)
    static_assert(!BY_TILES || GROUP * 32 == TILE, "a staged group is whole tiles");
    __shared__ double tile_v_staged[TILE];
    __shared__ double tile_y[TILE * DIM];
    Source source(first, second, stride, p, sign);
    const AuctionTiles tiles{tile_boxes, tile_v, BY_TILES ? tile_count : 0};
    const int count = *check_count;
    const int chunks = auction_release_chunks(count, n, gridDim.x, capacity);
    const int row_tiles = (count + AUCTION_RELEASE_THREADS - 1) / AUCTION_RELEASE_THREADS;
    const int width = ((n + chunks - 1) / chunks + TILE - 1) / TILE * TILE;
    for (int item = blockIdx.x; item < row_tiles * chunks; item += gridDim.x) {
        const int chunk = item / row_tiles;
        const int slot = (item % row_tiles) * AUCTION_RELEASE_THREADS + threadIdx.x;
        const bool live = slot < count;
        double x[DIM];  // the row's point, in registers
        double own = -AUCTION_INF;  // the row's reduced cost on its column (with tiles)
        if (live) {
            const int i = checks[slot];
#pragma unroll
            for (int c = 0; c < DIM; ++c) x[c] = source.record(i, c);
            if constexpr (BY_TILES) {
                if (tiles.count > 0) {  // a listed row holds a column (auction_release_list)
                    const int held = col_of_row[i];
                    source.load_row(i);  // box_bound's point
                    own = source.pair(i, held) - __ldcg(&columns[held].v);
                }
            }
        }
        double best = AUCTION_INF;
        int best_j = n;
        const int end = min(n, (chunk + 1) * width);
        for (int base = chunk * width; base < end; base += TILE) {
            const int span = min(TILE, end - base);
            unsigned needs = ~0u;  // a bit a tile of 32 columns of the group
            if constexpr (BY_TILES) {
                if (tiles.count > 0) needs = live ? auction_release_needs(source, tiles, base / 32, GROUP, own) : 0u;
            }
            // the last group's reads are done; and a group no row of the block needs is not staged
            if (!__syncthreads_or(needs != 0)) continue;
            for (int t = threadIdx.x; t < span; t += AUCTION_RELEASE_THREADS) {
                tile_v_staged[t] = __ldcg(&columns[base + t].v);
                source.column(base + t, &tile_y[t * DIM]);
            }
            __syncthreads();
            if (live && needs == ~0u) {
#pragma unroll 4
                for (int t = 0; t < span; ++t) {  // ascending columns: a strict < keeps the lowest on ties
                    const double reduced = source.cost(x, base + t, &tile_y[t * DIM]) - tile_v_staged[t];
                    if (reduced < best) {
                        best = reduced;
                        best_j = base + t;
                    }
                }
            } else if (live) {
                for (unsigned left = needs; left; left &= left - 1) {  // the tiles it needs, ascending
                    const int from = 32 * (__ffs(left) - 1), to = min(from + 32, span);
#pragma unroll 4
                    for (int t = from; t < to; ++t) {
                        const double reduced = source.cost(x, base + t, &tile_y[t * DIM]) - tile_v_staged[t];
                        if (reduced < best) {
                            best = reduced;
                            best_j = base + t;
                        }
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
