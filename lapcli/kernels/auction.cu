// Bertsekas' auction with epsilon-scaling, asynchronous (Gauss-Seidel) on the GPU, over any cost
// source of kernels/costs.cuh (the launcher puts that text in front of this file). Square n x n,
// minimise: a row bids for the column of least reduced cost c(i, j) - v[j] by lowering that
// column's dual v[j] (the auction's price is -v[j]) so that the pair's reduced cost becomes the
// row's second best plus eps, and takes the column from its previous owner.
//
// After a phase every row is assigned and 2 eps-complementary slackness holds over ALL columns:
// c(i, s(i)) - v[s(i)] <= min_j (c(i, j) - v[j]) + 2 eps (Bertsekas 1988, "The auction algorithm:
// a distributed relaxation method": each bid makes it true with eps for its row, v only falls
// afterwards, which only raises the other columns' reduced costs, and the release pass checks it
// with 2 eps, room for rounding). With u[i] = c(i, s(i)) - v[s(i)] every reduced cost is >= -2 eps:
// the duals of the last phase are the certificate's.
//
// The columns' state is one 16-byte word each, (v, owner), replaced by one 128-bit compare-and-swap
// (sm_90): a bid succeeds only against the state it was computed for, so the column, its dual and
// its owner change together. Each warp holds one free row; a successful bid hands the warp the row
// it evicted, so every free row is held by exactly one warp and none waits on another. A row's scan
// may read other columns' duals while they fall; that only makes its second best too low and its
// bid smaller, never wrong (the bid column's own state, read in the scan, is checked by the swap).
//
// A bid scans only the row's candidates: each lane's four cheapest columns among its 1/32 of the
// row (auction_candidates: 128 near columns; a full scan refills all, below) and up to 32 columns
// found later. A phase ends only
// when the release pass, which scans every column, finds every row within 2 eps of its best: when
// a row's best column is not a candidate it becomes one, and the row bids again. So a bid costs
// one read of 160 entries whatever n is, and the guarantee above still holds for all n columns.
// Past AUCTION_DENSE_AFTER bids in a phase a row's candidates may hold too few columns for a
// matching (every row's near columns the same few), and its bid scans all columns, but only where
// its candidates cannot prove their best the row's best:
//
// A full scan refills all of the row's candidates and leaves it a floor: lane l (columns l, l + 32,
// ...; a block a row gives the same) keeps its AUCTION_SLOTS least reduced costs' columns in slots
// l, 32 + l, ..., and floors[row] = the least of the lanes' next ones, at or below every column
// that is now no candidate. Duals only fall, so every column outside the candidates stays at or
// above the floor. A later bid that finds a candidate at or below the floor has the row's true
// best, and min(the candidates' second best, floor) bounds its true second best from below: the
// bid is the one a full scan would allow or smaller, never wrong, at the cost of 160 reads. Only a
// best above the floor scans all columns again: in a price war the candidates' reduced costs rise
// bid by bid until their best passes the floor, and a lane's sixth least reduced cost lies further
// above the row's best than its second (a floor under each lane's best alone, as this kernel had:
// 65,536 points on an H200, 3,161-58,927 full scans on cityblock against 242-946 now).
// The release pass, which puts a column into a found-later slot, drops the floor to -inf.
// On point sets a full scan reads only the tiles of columns that may cost less than its threshold
// (auction_scan_by_tiles): the lanes keep their least among the columns read, and the floor is
// also at or below the bound of every tile skipped.

// The launcher (lapcli.cuda.auction.kernel_defines) sets AUCTION_TILES_MAX_DIM, the most coordinates
// of points whose full scans go by tiles (auction_scan_by_tiles), AUCTION_NEAR, the near-column slots a
// lane, AUCTION_DENSE_AFTER, a row's bids in a phase before its floor rules, and AUCTION_DEFERRED,
// the mark in fresh[] of a row a price war left to the exact searches: its twin reads the same
// numbers.
#if !defined(AUCTION_NEAR) || !defined(AUCTION_DENSE_AFTER) || !defined(AUCTION_DEFERRED) || \
    !defined(AUCTION_TILES_MAX_DIM)
#error "compile kernels/auction.cu with lapcli.cuda.auction.kernel_defines()"
#endif
#define AUCTION_FULL_MASK 0xffffffffu
#define AUCTION_SLOTS (AUCTION_NEAR + 1)                   // and one a release pass fills
#define AUCTION_CANDIDATES (32 * AUCTION_SLOTS)            // a row's candidate columns
#define AUCTION_INF __longlong_as_double(0x7ff0000000000000LL)

struct __align__(16) AuctionColumn {
    double v;        // the column's dual (minus the auction's price)
    long long owner; // the row holding it, -1 if none
};

__device__ __forceinline__ unsigned long long auction_timer_ns() {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

// How a row's bid scans: its candidates (AUCTION_SPARSE) for its first AUCTION_DENSE_AFTER bids in
// a phase; after them the candidates where the floor proves their best (AUCTION_PROVED), else all
// columns (AUCTION_DENSE).
#define AUCTION_SPARSE 0
#define AUCTION_DENSE 1
#define AUCTION_PROVED 2

// The column's state as it is in L2 now: plain loads may be served from an SM's L1, which other
// multiprocessors' swaps do not update.
__device__ __forceinline__ AuctionColumn auction_read(const AuctionColumn* column) {
    const longlong2 raw = __ldcg(reinterpret_cast<const longlong2*>(column));
    AuctionColumn state;
    state.v = __longlong_as_double(raw.x);
    state.owner = raw.y;
    return state;
}

// One lane's (best, its column, second best) takes a reduced cost x of column j.
__device__ __forceinline__ void auction_take(double x, int j, double& best, int& best_j, double& second) {
    if (x < best || (x == best && j < best_j)) {
        second = best;
        best = x;
        best_j = j;
    } else if (x < second) {
        second = x;
    }
}

// Merges another scan's (best, its column, second best) into (best, best_j, second): the lower
// best (the lowest column on ties) and the least of the rest. True where the other's best won.
__device__ __forceinline__ bool auction_merge(double& best, int& best_j, double& second, double other, int other_j,
                                              double other_second) {
    if (other < best || (other == best && other_j < best_j)) {
        second = fmin(best, other_second);
        best = other;
        best_j = other_j;
        return true;
    }
    second = fmin(second, other);
    return false;
}

// The warp's (best, lowest column attaining it, second best): every lane gets them.
__device__ __forceinline__ void auction_warp_best(double& best, int& best_j, double& second) {
    for (int offset = 16; offset > 0; offset >>= 1) {
        const double other = __shfl_xor_sync(AUCTION_FULL_MASK, best, offset);
        const int other_j = __shfl_xor_sync(AUCTION_FULL_MASK, best_j, offset);
        const double other_second = __shfl_xor_sync(AUCTION_FULL_MASK, second, offset);
        auction_merge(best, best_j, second, other, other_j, other_second);
    }
}

// A full scan's share of one lane or thread: its AUCTION_SLOTS least reduced costs, ascending (the
// lowest column first on ties; column -1: none), and `beyond`, the least of the rest: the row's
// refilled candidates and its floor (above). take() takes a column; a merge takes another's entries
// and the least of its `beyond`.
struct AuctionKept {
    double x[AUCTION_SLOTS];
    int j[AUCTION_SLOTS];
    double beyond;
    __device__ __forceinline__ AuctionKept() : beyond(AUCTION_INF) {
#pragma unroll
        for (int s = 0; s < AUCTION_SLOTS; ++s) {
            x[s] = AUCTION_INF;
            j[s] = -1;
        }
    }
    __device__ __forceinline__ bool take(double value, int column) {  // false: not kept
        constexpr int LAST = AUCTION_SLOTS - 1;
        if (!(value < x[LAST] || (value == x[LAST] && column < j[LAST]))) {
            beyond = fmin(beyond, value);  // fmin: a NaN never becomes the floor
            return false;
        }
        beyond = fmin(beyond, x[LAST]);  // the one that drops out
#pragma unroll
        for (int s = 0; s < AUCTION_SLOTS; ++s) {  // insertion: the larger one moves down
            if (value < x[s] || (value == x[s] && column < j[s])) {
                const double moved = x[s];
                const int moved_j = j[s];
                x[s] = value;
                j[s] = column;
                value = moved;
                column = moved_j;
            }
        }
        return true;
    }
};

// A bid's scan so far, one thread's share: its least c - v (lowest column on ties) with that
// column's cost and state (the thread holding the group's best bids with them, with no second
// read), and its second least. scan(j, state, c) takes column j, read as `state` with cost c.
struct AuctionScan {
    double best, second_best, best_c;
    int best_j;
    AuctionColumn best_state;
    __device__ __forceinline__ explicit AuctionScan(int n)
        : best(AUCTION_INF), second_best(AUCTION_INF), best_c(0.0), best_j(n), best_state{0.0, -1} {}
    __device__ __forceinline__ void operator()(int j, const AuctionColumn& state, double c) {
        const double x = c - state.v;
        if (x < best || (x == best && j < best_j)) {
            second_best = best;
            best = x;
            best_j = j;
            best_c = c;
            best_state = state;
        } else if (x < second_best) {
            second_best = x;
        }
    }
};

// A full scan's share of one thread that also refills (above): its AuctionKept, and the cost and
// state of its best column, for the bid. scan() gives them as an AuctionScan.
struct AuctionRefillScan {
    AuctionKept kept;
    double best_c = 0.0;
    AuctionColumn best_state{0.0, -1};
    __device__ __forceinline__ void operator()(int j, const AuctionColumn& state, double c) {
        const double x = c - state.v;
        if (x < kept.x[0] || (x == kept.x[0] && j < kept.j[0])) {
            best_c = c;
            best_state = state;
        }
        kept.take(x, j);
    }
    __device__ __forceinline__ AuctionScan scan(int n) const {
        AuctionScan scan(n);
        if (kept.j[0] >= 0) {
            scan.best = kept.x[0];
            scan.best_j = kept.j[0];
            scan.best_c = best_c;
            scan.best_state = best_state;
        }
        scan.second_best = kept.x[1];
        return scan;
    }
};

// A full scan's share of one thread: columns first, first + step, ..., each given to `scan`.
// Four columns' loads are issued before any is compared: one after another, a scan of n columns
// would be n / step memory latencies in a row.
template <typename Source, typename Scan>
__device__ __forceinline__ void auction_scan_all(Source& source, const AuctionColumn* columns, int n, int first, int step,
                                                 Scan& scan) {
    int j = first;
    for (; j + 3 * step < n; j += 4 * step) {
        AuctionColumn state[4];
        double c[4];
#pragma unroll
        for (int k = 0; k < 4; ++k) {
            state[k] = auction_read(&columns[j + step * k]);
            c[k] = source.at(j + step * k);
        }
#pragma unroll
        for (int k = 0; k < 4; ++k) scan(j + step * k, state[k], c[k]);
    }
    for (; j < n; j += step) scan(j, auction_read(&columns[j]), source.at(j));
}

// The columns in tiles of 32 consecutive ones (lapcli.cuda.auction_tiles puts point sets' columns in
// a spatial order first, so that a tile is a small box): tile t's box (its columns' least and largest
// coordinates, 2 DIMENSIONS doubles at boxes + 2 DIMENSIONS t) and its largest dual v[t] as of the
// round's start. Duals only fall during the bids, so source.box_bound(box) - v[t] stays at or below
// every reduced cost of the tile the whole round. count 0: no tiles (a dense matrix).
struct AuctionTiles {
    const double* __restrict__ boxes;
    const double* __restrict__ v;
    int count;
};

// A full scan of one warp's share by tiles: warp w of `warps` takes tiles w * 32, w * 32 + 1, ...
// in groups of 32 (group g, then g + 32 warps, ...), lane l bounds tile g + l, and the warp scans
// only the tiles whose bound is at or below `threshold`, lane l column l of each (the same columns
// a lane takes in auction_scan_all, so its refill keeps the same meaning). Every column of a skipped
// tile has a reduced cost above the threshold and at or above the returned least of the lane's
// skipped bounds: a lower bound the floor takes in.
// On clustered points a price war makes a row's full scans many (1.1 M on one set of 65,536 points),
// and its competitors lie in the row's own region: most of the columns are far and stay skipped.
template <typename Source, typename Scan>
__device__ __forceinline__ double auction_scan_tiles(Source& source, const AuctionColumn* columns, int n,
                                                     const AuctionTiles& tiles, double threshold, int lane,
                                                     int warp, int warps, Scan& scan) {
    double skipped = AUCTION_INF;
    for (int group = warp * 32; group < tiles.count; group += warps * 32) {
        const int t = group + lane;
        bool take = false;
        if (t < tiles.count) {
            const double bound = source.box_bound(tiles.boxes + 2LL * Source::DIMENSIONS * t) - tiles.v[t];
            take = !(bound > threshold);  // a NaN bound is scanned
            if (!take) skipped = fmin(skipped, bound);
        }
        unsigned chosen = __ballot_sync(AUCTION_FULL_MASK, take);
        while (chosen) {  // four tiles' loads issued before any compare, as in auction_scan_all
            int j[4];
#pragma unroll
            for (int k = 0; k < 4; ++k) {
                j[k] = chosen ? (group + __ffs(chosen) - 1) * 32 + lane : n;
                chosen &= chosen - 1;
            }
            AuctionColumn state[4];
            double c[4];
#pragma unroll
            for (int k = 0; k < 4; ++k)
                if (j[k] < n) {
                    state[k] = auction_read(&columns[j[k]]);
                    c[k] = source.at(j[k]);
                }
#pragma unroll
            for (int k = 0; k < 4; ++k)
                if (j[k] < n) scan(j[k], state[k], c[k]);
        }
    }
    return skipped;
}

// auction_scan_tiles where the source has boxes (up to AUCTION_TILES_MAX_DIM coordinates) and the
// launcher gave tiles, else every column (auction_scan_all): then no column is skipped (inf).
template <typename Source, typename Scan>
__device__ __forceinline__ double auction_scan_by_tiles(Source& source, const AuctionColumn* columns, int n,
                                                        const AuctionTiles& tiles, double threshold, int lane,
                                                        int warp, int warps, Scan& scan) {
    if constexpr (Source::BOXES && Source::DIMENSIONS <= AUCTION_TILES_MAX_DIM) {  // lapcli.cuda.auction_tiles.tiled
        if (tiles.count > 0) return auction_scan_tiles(source, columns, n, tiles, threshold, lane, warp, warps, scan);
    }
    auction_scan_all(source, columns, n, warp * 32 + lane, warps * 32, scan);
    return AUCTION_INF;
}

// The threshold of a full scan that follows a bid whose candidates could not prove their best
// (`best`, the least of their reduced costs; `top`, the largest): the tiles whose bound is at or
// below their largest reduced cost. The candidates' best column lies in one of those tiles, so the
// scan finds the row's best, and the floor it leaves is about as far above the best as the
// candidates reached: a floor just above the best would send the row's next bid to a full scan
// again. No candidate (best inf): every tile.
__device__ __forceinline__ double auction_full_scan_threshold(double best, double top) {
    return best < AUCTION_INF ? fmax(top, best) : AUCTION_INF;
}

// The bid of `row` for column best_j, whose state the scan read as `seen` with cost best_c, the
// row's second best reduced cost being second_best: the pair's reduced cost becomes the second best
// + eps (one candidate: its own + eps), by a compare-and-swap retried while the column's dual still
// leaves it the row's best. Returns 1 where it does not (outbid since the scan: scan again), else 0
// with the column's previous owner in `evicted` (-1: none).
__device__ __forceinline__ int auction_place_bid(AuctionColumn* columns, int best_j, AuctionColumn seen, double best_c,
                                                 double second_best, double eps, int row, unsigned char* fresh,
                                                 int& evicted) {
    while (true) {
        if (!(best_c - seen.v <= second_best)) return 1;
        AuctionColumn bid;
        bid.v = (second_best < AUCTION_INF ? best_c - second_best : seen.v) - eps;
        bid.owner = row;
        const AuctionColumn was = atomicCAS(&columns[best_j], seen, bid);
        if (__double_as_longlong(was.v) == __double_as_longlong(seen.v) && was.owner == seen.owner) {
            evicted = (int)seen.owner;
            fresh[row] = 1;  // its bid read only candidates: the next release pass scans it
            return 0;
        }
        seen = was;
    }
}

// Each row's near columns by cost: lane l's AUCTION_NEAR cheapest among columns l, l + 32, ...
// (slots l, 32 + l, ...); the added slots start empty (-1); spread[i] = the largest minus the
// smallest cost among them. One warp a row. Ties go to the first column met, and row i's lanes
// meet their columns from column i on, wrapping: where costs tie (repeated points, all points
// equal) row i's candidates are about columns i to i + 127 (the last rows' wrap to the lowest) and
// most rows' first bids go to their own column i; from the lowest columns on, every tied row's
// would be the same 128, their prices bid up eps at a time.
template <typename Source>
__global__ void auction_candidates(const void* first, const void* second, long long stride, double p,
                                   double sign, int n, int* __restrict__ candidates, double* __restrict__ spread) {
    Source source(first, second, stride, p, sign);
    const int lane = threadIdx.x & 31;
    const int warps = (blockDim.x >> 5) * gridDim.x;
    const int per_lane = (n + 31) / 32;  // lane l's columns: k * 32 + l, k < per_lane (and < n)
    for (int i = (blockIdx.x * blockDim.x + threadIdx.x) >> 5; i < n; i += warps) {
        source.load_row(i);
        double near[AUCTION_NEAR];  // the lane's cheapest costs, ascending, and their columns
        int near_j[AUCTION_NEAR];
#pragma unroll
        for (int s = 0; s < AUCTION_NEAR; ++s) {
            near[s] = AUCTION_INF;
            near_j[s] = -1;
        }
        int k = i > lane ? (i - lane + 31) / 32 : 0;  // the lane's first column at or after i
        if (k >= per_lane) k = 0;
        for (int step = 0; step < per_lane; ++step, k = k + 1 == per_lane ? 0 : k + 1) {
            const int j = k * 32 + lane;
            if (j >= n) continue;
            const double c = source.at(j);
            // insertion from the last slot up: the kept ones above c move down a slot, c goes below
            // those it does not beat (ties: the first met stays first)
#pragma unroll
            for (int s = AUCTION_NEAR - 1; s > 0; --s) {
                if (c < near[s - 1]) {
                    near[s] = near[s - 1];
                    near_j[s] = near_j[s - 1];
                } else if (c < near[s]) {
                    near[s] = c;
                    near_j[s] = j;
                }
            }
            if (c < near[0]) {
                near[0] = c;
                near_j[0] = j;
            }
        }
        int* row = candidates + (long long)i * AUCTION_CANDIDATES;
        double low = near[0], high = -AUCTION_INF;  // a lane with no column (n < 32) adds nothing
#pragma unroll
        for (int s = 0; s < AUCTION_NEAR; ++s) {
            row[s * 32 + lane] = near_j[s];
            if (near_j[s] >= 0) high = near[s];
        }
        row[AUCTION_NEAR * 32 + lane] = -1;
        // the row's cost spread over its candidates: the scale of the first phase's eps
        for (int offset = 16; offset > 0; offset >>= 1) {
            low = fmin(low, __shfl_xor_sync(AUCTION_FULL_MASK, low, offset));
            high = fmax(high, __shfl_xor_sync(AUCTION_FULL_MASK, high, offset));
        }
        if (lane == 0) spread[i] = high - low;
    }
}

// The release rule of an assigned row i whose column `own` has reduced cost own_reduced, its best
// over all n columns being `best` at best_j (the lowest column on ties), every lane of a warp
// holding them: the row is released (true) where its column is no longer within 2 eps of its best,
// its column left ownerless and its best column made a candidate if it is not one; else it is
// within 2 eps over all columns until it bids again (fresh 0). The launcher lists the released rows.
__device__ __forceinline__ bool auction_release_row(int i, int own, double own_reduced, double best, int best_j,
                                                    double eps, int lane, AuctionColumn* columns, int* candidates,
                                                    int* added, unsigned char* fresh, double* floors) {
    // 2 eps, not eps: a bid leaves its pair exactly eps above the second best, and the rounding of
    // c - (c - second - eps) must not release the row again
    const bool release = own_reduced > best + 2.0 * eps;
    if (release) {
        int* row = candidates + (long long)i * AUCTION_CANDIDATES;
        bool known = false;
#pragma unroll
        for (int s = 0; s < AUCTION_SLOTS; ++s) known |= row[s * 32 + lane] == best_j;
        if (lane == 0) columns[own].owner = -1;
        if (!__any_sync(AUCTION_FULL_MASK, known) && lane == 0) {
            row[AUCTION_NEAR * 32 + (added[i]++ & 31)] = best_j;
            floors[i] = -AUCTION_INF;  // the slot it took may have held a column the floor left out
        }
    } else if (lane == 0) {
        fresh[i] = 0;
    }
    return release;
}

// The start of a round of a phase of tolerance eps: every row that is free, or whose column is no
// longer within 2 eps of its row's best over all n columns, is released and listed
// (auction_release_row). One warp a row;
// nothing bids meanwhile, so the duals are fixed.
// Only rows marked fresh are scanned (the launcher marks all of them at a phase's start, a bid
// marks its row): a row that kept its column since its last scan is still within 2 eps, since the
// bids since then only lowered other columns' v, which raises their reduced costs, and its own
// column's v changes only with a bid that takes the column from it. So after a phase's first
// round a pass reads the rows that bid, not all n^2 costs.
// A row marked AUCTION_DEFERRED is never listed: a price war left it free for the exact searches
// that follow the last phase, and it holds no column, so no bid evicts it and none marks it fresh.
// On point sets the launcher runs the same rule tiled (kernels/auction_release.cu).
template <typename Source>
__global__ void auction_release(const void* first, const void* second, long long stride, double p, double sign,
                                int n, AuctionColumn* __restrict__ columns, const int* __restrict__ col_of_row,
                                int* __restrict__ candidates, int* __restrict__ added, double eps,
                                int* __restrict__ free_rows, int* __restrict__ free_count,
                                unsigned char* __restrict__ fresh, double* __restrict__ floors) {
    Source source(first, second, stride, p, sign);
    const int lane = threadIdx.x & 31;
    const int warps = (blockDim.x >> 5) * gridDim.x;
    for (int i = (blockIdx.x * blockDim.x + threadIdx.x) >> 5; i < n; i += warps) {
        if (fresh[i] == AUCTION_DEFERRED) continue;  // warp-uniform: one row a warp
        const int own = col_of_row[i];
        bool release = own < 0;
        if (!release && fresh[i]) {
            source.load_row(i);
            double best = AUCTION_INF, second_best = AUCTION_INF;
            int best_j = n;
            for (int j = lane; j < n; j += 32) auction_take(source.at(j) - __ldcg(&columns[j].v), j, best, best_j, second_best);
            auction_warp_best(best, best_j, second_best);
            release = auction_release_row(i, own, source.at(own) - __ldcg(&columns[own].v), best, best_j, eps, lane,
                                          columns, candidates, added, fresh, floors);
        }
        if (release && lane == 0) free_rows[atomicAdd(free_count, 1)] = i;
    }
}

// One round's bidding: warps take the listed free rows in turn and follow each eviction chain
// until every row is assigned. A bid scans the row's candidates; a row's bids past
// AUCTION_DENSE_AFTER in one phase scan all n columns where its floor cannot prove the candidates'
// best (above): when the candidates of the rows in play hold too few columns (a perfect matching
// needs others), sparse chains would bid their prices down forever. A full scan leaves the row a
// new floor; floors[row] -inf: none. A warp whose chain reaches max_chain bids (0: no
// limit) leaves the row it holds free and takes the next listed one: the last few free rows of a
// phase are a price war one warp wages alone, bid after dependent bid, and the launcher decides
// what becomes of them. counters: [0] bids made, [1] scans repeated because the bid column's state
// changed meanwhile, [2] the longest eviction chain one warp followed, [3] rows left free at
// max_chain, [4] bids that scanned all columns, [5] bids past AUCTION_DENSE_AFTER the floor proved
// from the candidates. status: 0, or 1 past timeout_ns (rows are then left free).
template <typename Source>
__global__ void auction_bid(const void* first, const void* second, long long stride, double p, double sign,
                            int n, AuctionColumn* __restrict__ columns, int* __restrict__ candidates,
                            int* __restrict__ row_bids, const int* __restrict__ free_rows,
                            int free_count, int* __restrict__ next, double eps, long long timeout_ns,
                            long long max_chain, unsigned long long* __restrict__ counters,
                            int* __restrict__ status, unsigned char* __restrict__ fresh,
                            double* __restrict__ floors, const double* __restrict__ tile_boxes,
                            const double* __restrict__ tile_v, int tile_count) {
    Source source(first, second, stride, p, sign);
    const AuctionTiles tiles{tile_boxes, tile_v, tile_count};
    const int lane = threadIdx.x & 31;
    const unsigned long long began = auction_timer_ns();
    unsigned long long bids = 0, rescans = 0, longest = 0, parked = 0;
    unsigned full_scans = 0, proved = 0;
    while (true) {
        int slot = 0;
        if (lane == 0) slot = atomicAdd(next, 1);
        slot = __shfl_sync(AUCTION_FULL_MASK, slot, 0);
        if (slot >= free_count) break;
        int row = free_rows[slot];
        unsigned long long chain = 0;
        while (row >= 0) {
            if (max_chain > 0 && (long long)chain >= max_chain) {  // warp-uniform: the row stays free
                ++parked;
                break;
            }
            int late = lane == 0 && timeout_ns > 0 && (long long)(auction_timer_ns() - began) > timeout_ns;
            if (__shfl_sync(AUCTION_FULL_MASK, late, 0)) {
                if (lane == 0) *status = 1;
                break;
            }
            source.load_row(row);
            int* mine = candidates + (long long)row * AUCTION_CANDIDATES;
            // L2 reads: the slots (a full scan refills them all) and the floor may have been written on another
            // multiprocessor, before a fence and the compare-and-swap that handed this row here
            // (these loads' addresses depend on that swap's result, so they follow it)
            int j_of[AUCTION_SLOTS];
#pragma unroll
            for (int s = 0; s < AUCTION_SLOTS; ++s) j_of[s] = __ldcg(&mine[s * 32 + lane]);
            int kind = 0;  // the warp holds the row alone: its counter and floor need no atomic
            if (lane == 0) kind = (++row_bids[row] > AUCTION_DENSE_AFTER ? AUCTION_PROVED : AUCTION_SPARSE);
            kind = __shfl_sync(AUCTION_FULL_MASK, kind, 0);
            double row_floor = kind == AUCTION_PROVED ? __ldcg(&floors[row]) : -AUCTION_INF;
            double threshold = AUCTION_INF;  // a full scan's (auction_scan_by_tiles)
            while (true) {
                AuctionScan scan(n);
                AuctionRefillScan refill;
                double top = -AUCTION_INF;  // the lane's candidates' largest reduced cost
                if (kind == AUCTION_DENSE) {
                    const double skipped = auction_scan_by_tiles(source, columns, n, tiles, threshold, lane, 0, 1, refill);
                    refill.kept.beyond = fmin(refill.kept.beyond, skipped);
                    scan = refill.scan(n);
                } else {
#pragma unroll
                    for (int s = 0; s < AUCTION_SLOTS; ++s)
                        if (j_of[s] >= 0) {
                            const AuctionColumn state = auction_read(&columns[j_of[s]]);
                            const double c = source.at(j_of[s]);
                            scan(j_of[s], state, c);
                            top = fmax(top, c - state.v);
                        }
                }
                const int my_j = scan.best_j;
                const double my_best = scan.best;
                double best = scan.best, second_best = scan.second_best;
                int best_j = scan.best_j;
                auction_warp_best(best, best_j, second_best);
                if (kind == AUCTION_PROVED) {  // warp-uniform
                    if (!(best <= row_floor)) {  // a column outside the candidates may be better
                        for (int offset = 16; offset > 0; offset >>= 1)
                            top = fmax(top, __shfl_xor_sync(AUCTION_FULL_MASK, top, offset));
                        threshold = auction_full_scan_threshold(best, top);
                        kind = AUCTION_DENSE;
                        continue;
                    }
                    second_best = fmin(second_best, row_floor);
                }
                if (kind == AUCTION_DENSE) {  // the refill and the floor (above)
                    double floor_now = refill.kept.beyond;
                    for (int offset = 16; offset > 0; offset >>= 1)
                        floor_now = fmin(floor_now, __shfl_xor_sync(AUCTION_FULL_MASK, floor_now, offset));
                    if (!(best <= floor_now)) {  // outbid past the threshold meanwhile: scan every tile
                        threshold = AUCTION_INF;
                        continue;
                    }
                    second_best = fmin(second_best, floor_now);  // a skipped tile's bound may be below it
                    row_floor = floor_now;
#pragma unroll
                    for (int s = 0; s < AUCTION_SLOTS; ++s) {
                        j_of[s] = refill.kept.j[s];
                        __stcg(&mine[s * 32 + lane], refill.kept.j[s]);
                    }
                    if (lane == 0) __stcg(&floors[row], row_floor);
                    __threadfence();  // the slots and the floor before the bid, which may hand the row on
                    __syncwarp();
                }
                // the lowest lane holding the winner (its own best is the warp's)
                const int holder = __ffs(__ballot_sync(AUCTION_FULL_MASK, my_j == best_j && my_best == best)) - 1;
                int evicted = -1;
                int rescan = 0;
                if (lane == holder)
                    rescan = auction_place_bid(columns, best_j, scan.best_state, scan.best_c, second_best, eps, row,
                                               fresh, evicted);
                if (__shfl_sync(AUCTION_FULL_MASK, rescan, holder)) {
                    ++rescans;
                    continue;
                }
                row = __shfl_sync(AUCTION_FULL_MASK, evicted, holder);
                break;
            }
            ++bids;
            ++chain;
            full_scans += kind == AUCTION_DENSE;
            proved += kind == AUCTION_PROVED;
        }
        longest = chain > longest ? chain : longest;
        if (*(volatile int*)status != 0) break;
    }
    if (lane == 0) {
        atomicAdd(&counters[0], bids);
        atomicAdd(&counters[1], rescans);
        atomicMax(&counters[2], longest);
        atomicAdd(&counters[3], parked);
        atomicAdd(&counters[4], (unsigned long long)full_scans);
        atomicAdd(&counters[5], (unsigned long long)proved);
    }
}

// auction_bid with a block a row, for a round of few rows (the launcher decides): the same bids,
// each scan spread over the block. A phase's last rows bid in long eviction chains, many of them
// full scans (a row past AUCTION_DENSE_AFTER bids), and one warp scanning all n columns is n / 128
// memory latencies in a row (H100, 65,536 points: ~200 us a bid, rounds of 0.7-1 s with ~35 rows
// in play and most multiprocessors idle); a block of 16 warps scans them 16 times as wide.
// blockDim.x: a multiple of 32, at most AUCTION_BLOCK_MAX. Thread 0 takes the rows and counts; warp
// 0 scans the candidates as auction_bid's warp does, and a full scan is the block's. A full scan
// leaves the warp's refill and floor: thread t scans columns
// t, t + width, ..., so the threads of lane l in every warp together scan lane l's columns of a
// warp's scan (l, l + 32, ...); warp 0 merges their kept entries by lane, as in auction_bid. (Each
// warp's best alone, 16 slots, left a lower floor than each lane's best, the rule before the refill:
// in the NumPy twin at 4,096 uniform cityblock points 14,907 full scans against 187.)
#define AUCTION_BLOCK_MAX 512
// the shared arrays of a full scan (kept_x, kept_beyond, kept_j) within the 48 KB of static shared memory
static_assert((AUCTION_SLOTS + 1) * AUCTION_BLOCK_MAX * sizeof(double) + AUCTION_SLOTS * AUCTION_BLOCK_MAX * sizeof(int)
                  <= 44 * 1024,
              "auction_bid_blocks' shared arrays outgrow static shared memory: fewer AUCTION_NEAR or AUCTION_BLOCK_MAX");
template <typename Source>
__global__ void auction_bid_blocks(const void* first, const void* second, long long stride, double p, double sign,
                                   int n, AuctionColumn* __restrict__ columns, int* __restrict__ candidates,
                                   int* __restrict__ row_bids,
                                   const int* __restrict__ free_rows, int free_count, int* __restrict__ next,
                                   double eps, long long timeout_ns, long long max_chain,
                                   unsigned long long* __restrict__ counters, int* __restrict__ status,
                                   unsigned char* __restrict__ fresh, double* __restrict__ floors,
                                   const double* __restrict__ tile_boxes, const double* __restrict__ tile_v,
                                   int tile_count) {
    Source source(first, second, stride, p, sign);
    const AuctionTiles tiles{tile_boxes, tile_v, tile_count};
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, warps = blockDim.x >> 5;
    const int width = blockDim.x;
    __shared__ double warp_best[32], warp_second[32];
    __shared__ int warp_j[32];
    // a full scan's: each thread's AuctionKept (entry s of thread t at [s][t])
    __shared__ double kept_x[AUCTION_SLOTS][AUCTION_BLOCK_MAX], kept_beyond[AUCTION_BLOCK_MAX];
    __shared__ int kept_j[AUCTION_SLOTS][AUCTION_BLOCK_MAX];
    __shared__ int slots[AUCTION_CANDIDATES];  // the row's candidates, warp 0's (below)
    __shared__ int said[3];  // thread 0's word to the block: the row; how the bid scans, or -1: late; rescan
    __shared__ double row_floor;  // the row's floor (AUCTION_PROVED bids)
    // warp 0's word to the block after a scan: the block's best, its column, the second best the bid
    // takes, the warp holding the best; or that a full scan follows instead, at `block_threshold`
    __shared__ double block_best, block_second, block_threshold;
    __shared__ int block_j, block_winner, block_full_scan;
    const unsigned long long began = auction_timer_ns();
    unsigned long long bids = 0, rescans = 0, longest = 0, parked = 0;
    unsigned full_scans = 0, proved = 0;
    while (true) {
        if (tid == 0) {
            const int slot = *(volatile int*)status != 0 ? free_count : atomicAdd(next, 1);
            said[0] = slot < free_count ? free_rows[slot] : -2;
        }
        __syncthreads();
        int row = said[0];
        if (row == -2) break;
        unsigned long long chain = 0;
        while (row >= 0) {
            if (max_chain > 0 && (long long)chain >= max_chain) {  // block-uniform: the row stays free
                ++parked;
                break;
            }
            __syncthreads();  // every thread has read said[] before thread 0 rewrites it
            if (tid == 0) {
                const bool late = timeout_ns > 0 && (long long)(auction_timer_ns() - began) > timeout_ns;
                if (late) *status = 1;
                said[1] = late ? -1 : (++row_bids[row] > AUCTION_DENSE_AFTER ? AUCTION_PROVED : AUCTION_SPARSE);
                if (said[1] == AUCTION_PROVED) row_floor = __ldcg(&floors[row]);
            }
            source.load_row(row);
            int* mine = candidates + (long long)row * AUCTION_CANDIDATES;
            // Warp 0 alone holds and reads the candidates, as auction_bid's warp does (lane l: slots l,
            // 32 + l, ...): a bid of the candidates is one warp's 160 reads, and the block's other warps
            // wait at the barrier; merging 16 warps' bests in every thread was a third of the stall
            // samples of a 65,536-point clustered set's coarse war (ncu, H200). In shared memory: held
            // in registers through the full scan they took 130 at 16 coordinates, and 512 threads no
            // longer fitted an SM. L2 reads: a full scan on another multiprocessor may have refilled them.
            if (warp == 0)  // a lane reads back only its own slots: no barrier
#pragma unroll
                for (int s = 0; s < AUCTION_SLOTS; ++s) slots[s * 32 + lane] = __ldcg(&mine[s * 32 + lane]);
            __syncthreads();
            int kind = said[1];
            if (kind == -1) break;
            double threshold = AUCTION_INF;  // a full scan's (auction_scan_by_tiles)
            while (true) {
                AuctionScan scan(n);
                if (kind == AUCTION_DENSE) {
                    AuctionRefillScan refill;
                    const double skipped =
                        auction_scan_by_tiles(source, columns, n, tiles, threshold, lane, warp, warps, refill);
                    refill.kept.beyond = fmin(refill.kept.beyond, skipped);
                    scan = refill.scan(n);
#pragma unroll
                    for (int s = 0; s < AUCTION_SLOTS; ++s) {  // for the refill: warp 0 merges them by lane below
                        kept_x[s][tid] = refill.kept.x[s];
                        kept_j[s][tid] = refill.kept.j[s];
                    }
                    kept_beyond[tid] = refill.kept.beyond;
                    double best = scan.best, second_best = scan.second_best;
                    int best_j = scan.best_j;
                    auction_warp_best(best, best_j, second_best);
                    if (lane == 0) {
                        warp_best[warp] = best;
                        warp_second[warp] = second_best;
                        warp_j[warp] = best_j;
                    }
                    __syncthreads();
                    if (warp == 0) {
                        // the block's (best, lowest column, second best): lane w takes warp w's, merged as
                        // auction_warp_best merges lanes, with the warp that holds the best
                        double merged = lane < warps ? warp_best[lane] : AUCTION_INF;
                        double merged_second = lane < warps ? warp_second[lane] : AUCTION_INF;
                        int merged_j = lane < warps ? warp_j[lane] : n, winner = lane;
                        for (int offset = 16; offset > 0; offset >>= 1) {
                            const double other = __shfl_xor_sync(AUCTION_FULL_MASK, merged, offset);
                            const int other_j = __shfl_xor_sync(AUCTION_FULL_MASK, merged_j, offset);
                            const double other_second = __shfl_xor_sync(AUCTION_FULL_MASK, merged_second, offset);
                            const int other_winner = __shfl_xor_sync(AUCTION_FULL_MASK, winner, offset);
                            if (auction_merge(merged, merged_j, merged_second, other, other_j, other_second))
                                winner = other_winner;
                        }
                        // the refill and the floor: the threads of lane l in every warp together scanned
                        // lane l's columns of a warp's scan (l, l + 32, ...), so lane l merges their
                        // entries into the lane's AUCTION_SLOTS least, as auction_bid's lane keeps them
                        AuctionKept lane_kept;
                        for (int t = lane; t < width; t += 32) {
#pragma unroll
                            // a thread's entries ascend: past the first one not kept, none would be, and
                            // the first's value, now in beyond, is at most theirs
                            for (int s = 0; s < AUCTION_SLOTS; ++s)
                                if (!lane_kept.take(kept_x[s][t], kept_j[s][t])) break;
                            lane_kept.beyond = fmin(lane_kept.beyond, kept_beyond[t]);
                        }
                        double floor_now = lane_kept.beyond;
                        for (int offset = 16; offset > 0; offset >>= 1)
                            floor_now = fmin(floor_now, __shfl_xor_sync(AUCTION_FULL_MASK, floor_now, offset));
                        // outbid past the threshold meanwhile (warp-uniform): scan every tile
                        const bool again = !(merged <= floor_now);
                        if (!again) {  // the bid follows: the row's next bid reads the slots from memory
#pragma unroll
                            for (int s = 0; s < AUCTION_SLOTS; ++s) __stcg(&mine[s * 32 + lane], lane_kept.j[s]);
                            if (lane == 0) __stcg(&floors[row], floor_now);
                            __threadfence();  // the slots and the floor before the bid, which may hand the row on
                        }
                        if (lane == 0) {
                            block_best = merged;
                            block_second = fmin(merged_second, floor_now);  // a skipped tile's bound may be below it
                            block_j = merged_j;
                            block_winner = winner;
                            block_full_scan = again;
                            block_threshold = AUCTION_INF;
                        }
                    }
                } else if (warp == 0) {  // the candidates' scan
                    double top = -AUCTION_INF;  // the lane's candidates' largest reduced cost
#pragma unroll
                    for (int s = 0; s < AUCTION_SLOTS; ++s) {
                        const int j = slots[s * 32 + lane];
                        if (j >= 0) {
                            const AuctionColumn state = auction_read(&columns[j]);
                            const double c = source.at(j);
                            scan(j, state, c);
                            top = fmax(top, c - state.v);
                        }
                    }
                    double best = scan.best, second_best = scan.second_best;
                    int best_j = scan.best_j;
                    auction_warp_best(best, best_j, second_best);
                    bool full_scan = false;
                    if (kind == AUCTION_PROVED) {  // warp-uniform
                        for (int offset = 16; offset > 0; offset >>= 1)
                            top = fmax(top, __shfl_xor_sync(AUCTION_FULL_MASK, top, offset));
                        const double known_floor = row_floor;
                        full_scan = !(best <= known_floor);  // a column outside the candidates may be better
                        second_best = fmin(second_best, known_floor);
                    }
                    if (lane == 0) {
                        block_best = best;
                        block_second = second_best;
                        block_j = best_j;
                        block_winner = 0;
                        block_full_scan = full_scan;
                        block_threshold = auction_full_scan_threshold(best, top);
                    }
                }
                __syncthreads();
                if (block_full_scan) {  // block-uniform
                    threshold = block_threshold;
                    kind = AUCTION_DENSE;
                    continue;  // block_* are rewritten only after the next scan's barrier
                }
                if (warp == block_winner) {
                    const unsigned holders =
                        __ballot_sync(AUCTION_FULL_MASK, scan.best_j == block_j && scan.best == block_best);
                    if (lane == __ffs(holders) - 1) {
                        int evicted = -1;
                        said[2] = auction_place_bid(columns, block_j, scan.best_state, scan.best_c, block_second, eps,
                                                    row, fresh, evicted);
                        said[0] = evicted;
                    }
                }
                __syncthreads();
                if (said[2]) {
                    ++rescans;
                    continue;  // said[] is rewritten only after the next scan's barrier
                }
                row = said[0];
                break;
            }
            ++bids;
            ++chain;
            full_scans += kind == AUCTION_DENSE;
            proved += kind == AUCTION_PROVED;
        }
        longest = chain > longest ? chain : longest;
        __syncthreads();  // said[0] is read: thread 0 takes the next row
    }
    if (tid == 0) {
        atomicAdd(&counters[0], bids);
        atomicAdd(&counters[1], rescans);
        atomicMax(&counters[2], longest);
        atomicAdd(&counters[3], parked);
        atomicAdd(&counters[4], (unsigned long long)full_scans);
        atomicAdd(&counters[5], (unsigned long long)proved);
    }
}

// col_of_row from the columns' owners, once col_of_row is all -1: after a round with rows left
// free (a chain limit, a time limit, a release) a row's last column may belong to another row now.
__global__ void auction_rows_of_owners(const AuctionColumn* __restrict__ columns, int n, int* __restrict__ col_of_row) {
    for (int j = blockIdx.x * blockDim.x + threadIdx.x; j < n; j += blockDim.x * gridDim.x) {
        const long long owner = columns[j].owner;
        if (owner >= 0) col_of_row[owner] = j;
    }
}
