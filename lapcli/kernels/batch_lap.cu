// Many small rectangular linear assignment problems (n <= m, minimise) in ONE launch: a GROUP of
// THREADS threads per problem (half a warp, a warp, or a block of THREADS / 32 warps), the hardware
// block scheduler handing out the problems (grid = one block per 1, 2 or 4 problems, so no
// persistent loop is needed).
//
// Algorithm: shortest augmenting path, as scipy's linear_sum_assignment (Crouse 2016, after
// Jonker-Volgenant 1987). For each free row (in order 0..n-1) a Dijkstra over the columns on reduced
// costs c[i][j] - u[i] - v[j]:
//   S1  scan row i: for every unscanned column j, d = (c[i][j] - v[j]) + (minVal - u[i]);
//       if d < spc[j]: spc[j] = d, path[j] = i;
//   S2  j* = argmin of spc over unscanned columns (ties: a free column first, then the lowest index);
//       minVal = spc[j*]; scan j*; if j* is free it is the sink, else i = row4col[j*] and go to S1;
//   S3  dual update: v[j] -= minVal - spc[j] for scanned j (u is not stored, see below);
//   S4  augment along path[] from the sink back to the root.
// For n < m, v starts at 0 and is lowered only on taken columns (the row reduction in batch_lap,
// below, assigns rows at their row minima and transfers their margins to their columns' v); then
// it only decreases, and only on scanned (hence assigned, and assigned for good) columns: at the
// end v <= 0 and v == 0 on every column no row took, which with
// c - u - v >= 0 everywhere and == 0 on the assignment certifies optimality of the rectangular
// problem (complementary slackness). A square problem has no such column constraints and starts
// from JV's column reduction instead (in batch_lap, below), or from the caller's warm start.
//
// u is never stored: every assigned row is tight, u[i] = c[i][col4row[i]] - v[col4row[i]], so the
// scan of row i = row4col[j*] computes u[i] from the cost of (i, j*) and v[j*]; the root of a
// search uses u = 0 (it only shifts all distances of that search by a constant). The returned u
// is computed the same way at the end.
//
// Layout: thread t of a group owns columns j = t + k*G (k < K, G = THREADS): spc, v and
// path of those columns live in registers, the scanned / assigned flags in two bit masks. Shared
// memory holds row4col, col4row (the walk of S4 and the next row of S2), v (the S2 winner's dual)
// and path (written once per search, for S4). A row scan is K coalesced loads per thread; the
// argmin is three __reduce_min_sync per warp (64-bit key split in two halves, then the tag; for a
// half-warp group over its 16 lanes) -- one, on a packed 32-bit word, for integer duals (PACKED in
// batch_lap) -- plus, for WARPS = THREADS / 32 > 1, one __syncthreads after which every thread
// scans the per-warp winners (up to 4 warps; beyond, a second warp argmin over them), with
// double-buffered scratch, so one barrier per iteration (two where a packed argmin saturates and
// the 64-bit one follows).
//
// ABI: lapcli/cuda/batch_lap.py defines the status codes and the certificate's slots once and
// passes them as -D options (kernel_defines()); batch_lap's parameters are its KERNEL_PARAMETERS,
// in order. The kernel refuses to compile without them.
//
// Types: T is the stored cost (int, long long, float, double); D the dual / distance type (long
// long for integer costs: exact; double for float costs).

// Status codes, one per problem (batch_lap.py STATUSES): STATUS_OK; STATUS_NO_COLUMN, S2 found no
// unscanned column with a finite distance (NaN or inf costs); STATUS_TIMEOUT, the launch ran past
// its time limit and this problem was abandoned; STATUS_PATH_CAP, a search or an augmenting walk
// ran longer than m / n steps (a bug). The certificate's slots: STAT_* and SUMMARY_* (below).
#if !defined(STATUS_OK) || !defined(STATUS_NO_COLUMN) || !defined(STATUS_TIMEOUT) || !defined(STATUS_PATH_CAP) \
    || !defined(CERTIFY_STATS) || !defined(STAT_OBJECTIVE) || !defined(STAT_MIN_SLACK) \
    || !defined(STAT_MAX_ASSIGNED_SLACK) || !defined(STAT_TOLERANCE) || !defined(STAT_PROVED) \
    || !defined(STAT_NONFINITE) || !defined(SUMMARY_SLOTS) || !defined(SUMMARY_STAMP) \
    || !defined(SUMMARY_NOT_PROVED) || !defined(SUMMARY_NONFINITE) || !defined(SUMMARY_MIN_SLACK) \
    || !defined(SUMMARY_MAX_ASSIGNED_SLACK) || !defined(SUMMARY_TOLERANCE)
#error "compile with the -D options of lapcli.cuda.batch_lap.kernel_defines()"
#endif

#define BATCH_FULL_MASK 0xffffffffu

template <typename D> struct DualTraits;
template <> struct DualTraits<long long> {
    static __device__ __forceinline__ long long inf() { return 0x7fffffffffffffffLL; }
    // Order-preserving map to unsigned 64 bits (for __reduce_min_sync on the two halves).
    static __device__ __forceinline__ unsigned long long key(long long x) {
        return (unsigned long long)x ^ 0x8000000000000000ull;
    }
    static __device__ __forceinline__ long long value(unsigned long long k) {
        return (long long)(k ^ 0x8000000000000000ull);
    }
};
template <> struct DualTraits<double> {
    static __device__ __forceinline__ double inf() { return __longlong_as_double(0x7ff0000000000000LL); }
    static __device__ __forceinline__ unsigned long long key(double x) {
        const unsigned long long b = (unsigned long long)__double_as_longlong(x + 0.0);  // -0 -> +0
        return b ^ ((b >> 63) ? ~0ull : 0x8000000000000000ull);
    }
    static __device__ __forceinline__ double value(unsigned long long k) {
        const unsigned long long b = (k >> 63) ? (k ^ 0x8000000000000000ull) : ~k;
        return __longlong_as_double((long long)b);
    }
};

__device__ __forceinline__ unsigned long long batch_global_timer_ns() {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

template <typename A, typename B> struct same_type { static constexpr bool value = false; };
template <typename A> struct same_type<A, A> { static constexpr bool value = true; };

// Bits that hold every column index below m, for the packed argmin.
__host__ __device__ constexpr int index_bits(int m) { return m <= 1 ? 0 : 1 + index_bits((m + 1) / 2); }

__device__ __forceinline__ bool key_less(unsigned long long k1, unsigned t1, unsigned long long k2, unsigned t2) {
    return k1 < k2 || (k1 == k2 && t1 < t2);
}

// A group of THREADS threads solves one problem. THREADS < 32: 32 / THREADS problems share a warp,
// every warp-level step (barrier, shuffle, redux.sync) restricted to the group's lanes by its
// membermask; the groups of a warp run independently (one may finish its search, or its problem,
// before the other), as cooperative groups' 16-thread tiles do (they, too, reduce with a tile-mask
// redux.sync). THREADS >= 64: a block of THREADS / 32 warps per problem.
template <int THREADS> struct Group {
    // A power of two: a column's owner is j & (THREADS - 1). Groups of 320 threads for 300 columns
    // (the owner as j % THREADS) measured within 1 % of 512 on an H100, not worth more programs.
    static_assert(THREADS == 16 || THREADS == 32 || (THREADS >= 64 && THREADS <= 1024 && (THREADS & (THREADS - 1)) == 0),
                  "group size");
    static constexpr int WARPS = THREADS >= 32 ? THREADS / 32 : 1;  // warps that reduce into one winner
    static constexpr int WIDTH = THREADS < 32 ? THREADS : 32;       // lanes of a warp-level reduction
    static constexpr int BLOCK = THREADS >= 64 ? THREADS : 64;      // threads per block
    static constexpr int PER_BLOCK = BLOCK / THREADS;               // problems per block
    // the lanes of this thread's group within its warp
    static __device__ __forceinline__ unsigned lanes() {
        if constexpr (THREADS >= 32) return BATCH_FULL_MASK;
        else return ((1u << THREADS) - 1u) << ((threadIdx.x & 31) & ~(THREADS - 1));
    }
    static __device__ __forceinline__ void sync(unsigned mask) {
        if constexpr (THREADS <= 32) __syncwarp(mask); else __syncthreads();
    }
};

// Minimum of a 64-bit key over the `mask` lanes (WIDTH of them, aligned), returned to each of
// them as its (high, low) halves: the high halves' minimum, then the low halves' among the lanes
// that hold it.
__device__ __forceinline__ uint2 warp_min_halves(unsigned long long key, unsigned mask) {
    const unsigned hi = (unsigned)(key >> 32), lo = (unsigned)key;
    const unsigned min_hi = __reduce_min_sync(mask, hi);
    return make_uint2(min_hi, __reduce_min_sync(mask, hi == min_hi ? lo : 0xffffffffu));
}

__device__ __forceinline__ unsigned long long warp_min(unsigned long long key, unsigned mask) {
    const uint2 least = warp_min_halves(key, mask);
    return ((unsigned long long)least.x << 32) | least.y;
}

// Lexicographic minimum of (key, tag) over the `mask` lanes, returned to each of them.
__device__ __forceinline__ void warp_argmin(unsigned long long& key, unsigned& tag, unsigned mask) {
    const uint2 least = warp_min_halves(key, mask);
    const bool best = (unsigned)(key >> 32) == least.x && (unsigned)key == least.y;
    tag = __reduce_min_sync(mask, best ? tag : 0xffffffffu);
    key = ((unsigned long long)least.x << 32) | least.y;
}

// ---- The certificate, fused into the solve (CERTIFY): each group proves its own problem --------
// Once a group has solved problem b, it re-reads the problem's costs and checks the LP optimality
// conditions of its answer (lapcli/certificate.py states them): with u[i] = c[i][col[i]] - v[col[i]]
// (tight by definition), c - u - v >= -tol on every pair; col a one-to-one map of the rows into the
// columns; for m > n, v <= tol and v == 0 (within tol) on the columns no row took (complementary
// slackness of the rectangular problem). tol = m * max|c| * 2^-50 for float costs, 0 for integers.
// It also sums the objective (exact in long long for integer costs, plus the row offsets a float64
// reduction subtracted) and writes the caller's columns (int64; for a transposed problem the work
// rows are the caller's columns: out[col[i]] = i, -1 where no work row took a caller's row).
// Per problem: stats[k * B + b] for k = STAT_OBJECTIVE, STAT_MIN_SLACK, STAT_MAX_ASSIGNED_SLACK,
// STAT_TOLERANCE, STAT_PROVED (1 or 0), STAT_NONFINITE (a non-finite cost seen). For the whole
// launch (so that the host copies 48 bytes, not 48 per problem): summary[SUMMARY_STAMP] the launch
// stamp (the launcher points launch_start there), [SUMMARY_NOT_PROVED] problems not proved,
// [SUMMARY_NONFINITE] problems with a non-finite cost, [SUMMARY_MIN_SLACK] ~key(min slack),
// [SUMMARY_MAX_ASSIGNED_SLACK] key(max assigned slack), [SUMMARY_TOLERANCE] key(max tol)
// (atomicMax on the order-preserving keys of DualTraits<double>; the host decodes them).
// objective_out[b]: the objective as a long long for integer costs, else the bits of its double.
static_assert(STAT_OBJECTIVE < CERTIFY_STATS && STAT_MIN_SLACK < CERTIFY_STATS
              && STAT_MAX_ASSIGNED_SLACK < CERTIFY_STATS && STAT_TOLERANCE < CERTIFY_STATS
              && STAT_PROVED < CERTIFY_STATS && STAT_NONFINITE < CERTIFY_STATS, "a stats slot past CERTIFY_STATS");
static_assert(SUMMARY_STAMP < SUMMARY_SLOTS && SUMMARY_NOT_PROVED < SUMMARY_SLOTS && SUMMARY_NONFINITE < SUMMARY_SLOTS
              && SUMMARY_MIN_SLACK < SUMMARY_SLOTS && SUMMARY_MAX_ASSIGNED_SLACK < SUMMARY_SLOTS
              && SUMMARY_TOLERANCE < SUMMARY_SLOTS, "a summary slot past SUMMARY_SLOTS");

// Column j of a row: a ragged member's columns lie cs elements apart (cs > 1: a tall member's
// transpose); a stack's are contiguous. `j` is deliberately not parenthesised in the stack's
// branch: COLUMN(row, t + k * G) is then row + t + k * G, pointer steps the compiler folds into
// constant load offsets, the code the stacks' kernels had before ragged members (as an int sum it
// costs a 64-bit multiply and add per load).
#define COLUMN(row, j) (RAGGED ? (row) + (long long)(j) * cs : (row) + j)
// Row i of the problem: m apart in a stack, rs in a ragged member (1 for a tall one's transpose).
#define ROW(i) (RAGGED ? problem + (long long)(i) * rs : problem + (long long)(i) * m)
// Cost (i, j): a staged row's from shared memory (RAGGED: the kernel's staging, below), else in place.
#define COST(i, j) ((RAGGED && (i) < staged_rows) ? staged[(i) * sp + (j)] : __ldg(COLUMN(ROW(i), j)))

__device__ __forceinline__ unsigned long long to_bits(long long x) { return (unsigned long long)x; }
__device__ __forceinline__ unsigned long long to_bits(double x) { return (unsigned long long)__double_as_longlong(x); }
__device__ __forceinline__ unsigned long long to_bits(int x) { return (unsigned long long)(unsigned)x; }
template <typename X> __device__ __forceinline__ X from_bits(unsigned long long b);
template <> __device__ __forceinline__ long long from_bits<long long>(unsigned long long b) { return (long long)b; }
template <> __device__ __forceinline__ double from_bits<double>(unsigned long long b) { return __longlong_as_double((long long)b); }
template <> __device__ __forceinline__ int from_bits<int>(unsigned long long b) { return (int)(unsigned)b; }

struct MinOf { template <typename X> __device__ X operator()(X a, X b) const { return a < b ? a : b; } };
struct MaxOf { template <typename X> __device__ X operator()(X a, X b) const { return a > b ? a : b; } };
struct SumOf { template <typename X> __device__ X operator()(X a, X b) const { return a + b; } };

// Reduce x over the group (its lanes of a warp, or the block for THREADS >= 64, through `scratch`
// of one slot per warp).
template <int THREADS, typename X, typename Op>
__device__ __forceinline__ X group_reduce(X x, Op op, unsigned long long* scratch, unsigned mask) {
    constexpr int WARPS = Group<THREADS>::WARPS;
#pragma unroll
    for (int offset = Group<THREADS>::WIDTH / 2; offset > 0; offset >>= 1) x = op(x, __shfl_xor_sync(mask, x, offset));
    if constexpr (THREADS <= 32) {
        return x;
    } else {
        __syncthreads();  // the slots may still be read by the previous reduction
        if ((threadIdx.x & 31) == 0) scratch[threadIdx.x >> 5] = to_bits(x);
        __syncthreads();
        X y = from_bits<X>(scratch[0]);
#pragma unroll
        for (int w = 1; w < WARPS; ++w) y = op(y, from_bits<X>(scratch[w]));
        return y;
    }
}

template <typename T, typename D, int K, int THREADS, bool RAGGED>
__device__ __forceinline__ void certify_problem(
        const T* __restrict__ problem, long long rs, long long cs, const T* staged, int sp, int staged_rows,
        long long b, int B, int n, int m, int t,
        unsigned mask, int st, const D (&v)[K], unsigned dead, const int* col4row, int* taken, const D* v_sh,
        unsigned long long* scratch, const double* __restrict__ row_offset, bool flip, int n_out, int exact,
        long long* __restrict__ out, double* __restrict__ stats, long long* __restrict__ objective_out,
        unsigned long long* __restrict__ summary, int caller_rows, long long pair_start,
        long long* __restrict__ pair_rows, long long* __restrict__ pair_cols, long long row_start,
        long long* __restrict__ flat_out) {
    typedef DualTraits<D> DT;
    constexpr int G = THREADS;
    // taken[j]: the row that took column j, -1 for none (the path array: the walks are over)
    for (int j = t; j < G * K; j += G) taken[j] = -1;
    Group<THREADS>::sync(mask);
    int bad = st != STATUS_OK;
    for (int r = t; r < n; r += G) {
        const int j = col4row[r];
        if (j < 0 || j >= m || atomicExch(&taken[j], r) != -1) bad = 1;  // unassigned, or a column twice
    }
    Group<THREADS>::sync(mask);
    // One pass over the costs, ROWS rows at a time: every load of a chunk is issued before the first
    // use (each thread its K columns, coalesced; v in registers), so a block-per-problem layout
    // whose costs have left L2 waits one memory latency per chunk, not per row.
    // Two rows, not more: the pass is inlined into the solve's kernel, and its registers are the
    // launch's. 8 or 16 rows in flight took the certified launch from 40-72 to 106-184 registers per
    // thread (ptxas, sm_90): 3 instead of 9 blocks per SM at 256 columns, so a batch of 500 ran in
    // two waves where the solve alone ran in one (H100: 4.02 against 2.85 ms at 500 x 256, 0.456
    // against 0.311 at 2000 x 64). With two rows the certified launch needs 56-80 registers.
    constexpr int ROWS = 2;
    // Two rows in flight wait one latency per two rows where the costs have left L2 (a block per
    // problem of 1024 columns: 25.5 against 24.0 ms with 8 rows at 64 x 1024); an L2 prefetch of
    // the row 8 ahead, one instruction per 128-byte line and no register, takes that back (24.3).
    // Below 256 threads it cost 1-2 % (the problem is still in L1/L2 from its solve).
    constexpr int AHEAD = THREADS >= 256 ? 8 : 0;
    D smallest = DT::inf(), loosest = 0, total = 0;
    double scale = 0.0, offsets = 0.0;
    int nonfinite = 0;
    for (int i0 = 0; i0 < n; i0 += ROWS) {
        T x[ROWS][K];
        D ui[ROWS];
        int ji[ROWS];
        if constexpr (AHEAD > 0) {
#pragma unroll
            for (int q = 0; q < ROWS; ++q) {
                const int ahead = i0 + q + AHEAD;
                if (ahead < n && ahead >= staged_rows && cs == 1 && t * 128 < m * (int)sizeof(T))
                    asm volatile("prefetch.global.L2 [%0];" ::"l"((const char*)ROW(ahead) + t * 128));
            }
        }
#pragma unroll
        for (int q = 0; q < ROWS; ++q) {
            const int i = min(i0 + q, n - 1);  // past the last row: reload it, skipped below
            const T* row = ROW(i);
            ji[q] = col4row[i];
            const bool ok = ji[q] >= 0 && ji[q] < m;
            // (written out, not through COST: a stack kernel then compiles as before, no spill)
            if (RAGGED && i < staged_rows) {
                const T* here = staged + i * sp;
                ui[q] = ok ? (D)here[ji[q]] - v_sh[ji[q]] : (D)0;
#pragma unroll
                for (int k = 0; k < K; ++k) x[q][k] = ((dead >> k) & 1) ? (T)0 : here[t + k * G];
            } else {
                ui[q] = ok ? (D)__ldg(COLUMN(row, ji[q])) - v_sh[ji[q]] : (D)0;
#pragma unroll
                for (int k = 0; k < K; ++k) x[q][k] = ((dead >> k) & 1) ? (T)0 : __ldg(COLUMN(row, t + k * G));
            }
        }
#pragma unroll
        for (int q = 0; q < ROWS; ++q) {
            if (i0 + q >= n) break;
#pragma unroll
            for (int k = 0; k < K; ++k) {
                if ((dead >> k) & 1) continue;
                const D slack = (D)x[q][k] - ui[q] - v[k];
                smallest = slack < smallest ? slack : smallest;
                scale = fmax(scale, fabs((double)x[q][k]));
                nonfinite |= !isfinite((double)x[q][k]);  // NaN or +-inf: the entries were not checked
                if (t + k * G == ji[q]) {
                    loosest = max(loosest, slack < 0 ? -slack : slack);
                    total += (D)x[q][k];
                }
            }
        }
    }
    if (row_offset)
        for (int r = t; r < n; r += G) offsets += row_offset[b * n + r];
    smallest = group_reduce<THREADS>(smallest, MinOf(), scratch, mask);
    loosest = group_reduce<THREADS>(loosest, MaxOf(), scratch, mask);
    total = group_reduce<THREADS>(total, SumOf(), scratch, mask);
    scale = group_reduce<THREADS>(scale, MaxOf(), scratch, mask);
    offsets = group_reduce<THREADS>(offsets, SumOf(), scratch, mask);
    nonfinite = group_reduce<THREADS>(nonfinite, MaxOf(), scratch, mask);
    const double tol = exact ? 0.0 : (double)m * (scale * 0x1p-50);  // scaled first: m * scale may overflow
    if (m > n) {  // the columns' own constraints: v <= tol, v == 0 on the columns no row took
#pragma unroll
        for (int k = 0; k < K; ++k) {
            if ((dead >> k) & 1) continue;
            const double vj = (double)v[k];
            if (vj > tol || (taken[t + k * G] < 0 && fabs(vj) > tol)) bad = 1;
        }
    }
    bad = group_reduce<THREADS>(bad, MaxOf(), scratch, mask);
    const bool good = !bad && !nonfinite && (double)smallest >= -tol && (double)loosest <= tol;
    // the caller's columns: for a flipped problem the work rows are the caller's columns
    long long* row_out = out + b * n_out;
    if constexpr (RAGGED) {  // a member may have fewer rows than n_out: the rest are -1
        if (flip || n < n_out) {
            for (int i = t; i < n_out; i += G) row_out[i] = -1;
            Group<THREADS>::sync(mask);
            for (int r = t; r < n; r += G) {
                const int j = col4row[r];
                if (j >= 0 && j < m) row_out[flip ? j : r] = flip ? r : j;
            }
        } else {
            for (int r = t; r < n; r += G) row_out[r] = col4row[r];
        }
    } else if (flip) {
        for (int i = t; i < n_out; i += G) row_out[i] = -1;
        Group<THREADS>::sync(mask);
        for (int r = t; r < n; r += G) { const int j = col4row[r]; if (j >= 0 && j < m) row_out[j] = r; }
    } else {
        for (int r = t; r < n; r += G) row_out[r] = col4row[r];
    }
    if constexpr (RAGGED) Group<THREADS>::sync(mask);  // row_out written by the whole group
    // A list's answer, one member's columns after another's (each its own rows), from row_start on.
    if (RAGGED && flat_out)
        for (int i = t; i < caller_rows; i += G) flat_out[row_start + i] = row_out[i];
    // DETR's pairs (lapcli.match): the caller's assigned rows in order and their columns, from
    // pair_start on; one warp (or the half-warp group) compacts the row just written, a ballot per
    // WIDTH rows.
    if (RAGGED && pair_rows) {
        constexpr int WIDTH = Group<THREADS>::WIDTH;
        if (t < WIDTH) {
            const unsigned lanes = THREADS >= 32 ? BATCH_FULL_MASK : mask;
            const unsigned below = (1u << (threadIdx.x & 31)) - 1u;
            int base = 0;
            for (int start = 0; start < caller_rows; start += WIDTH) {
                const int i = start + t;
                const long long j = i < caller_rows ? row_out[i] : -1;
                const unsigned ballot = __ballot_sync(lanes, j >= 0) & lanes;
                const int at = base + __popc(ballot & below);
                if (j >= 0 && at < n) { pair_rows[pair_start + at] = i; pair_cols[pair_start + at] = j; }
                base += __popc(ballot);
            }
        }
    }
    if (t == 0) {
        double* mine = stats + b;
        mine[STAT_OBJECTIVE * (long long)B] = (double)total + offsets;
        mine[STAT_MIN_SLACK * (long long)B] = (double)smallest;
        mine[STAT_MAX_ASSIGNED_SLACK * (long long)B] = (double)loosest;
        mine[STAT_TOLERANCE * (long long)B] = tol;
        mine[STAT_PROVED * (long long)B] = good ? 1.0 : 0.0;
        mine[STAT_NONFINITE * (long long)B] = nonfinite ? 1.0 : 0.0;
        objective_out[b] = exact ? (long long)total : __double_as_longlong((double)total + offsets);
        if (!good) atomicAdd(summary + SUMMARY_NOT_PROVED, 1ull);
        if (nonfinite) atomicAdd(summary + SUMMARY_NONFINITE, 1ull);
        atomicMax(summary + SUMMARY_MIN_SLACK, ~DualTraits<double>::key((double)smallest));
        atomicMax(summary + SUMMARY_MAX_ASSIGNED_SLACK, DualTraits<double>::key((double)loosest));
        atomicMax(summary + SUMMARY_TOLERANCE, DualTraits<double>::key(tol));
    }
}

// Row reduction, the rectangular problems' start (n < m, no warm start): with v = 0, row i
// claims the column of its row minimum (lowest column on ties) and each column goes to the
// lowest row claiming it. Only the rows that lost their claim are searched from: on a
// matcher's 50 x 300 member (U[0, 1)) about 4 of 50, where each search cost ~2,000 cycles
// of barriers and reductions even when its first step found a free column (ncu on the H100:
// 5 cycles per issued instruction, ~4 warps per SM; memory latency was not the limit).
// Then the reduction transfer (Jonker & Volgenant 1987): a row that kept its column j lowers
// v[j] by the gap to its second-smallest cost, v[j] = c[i][j] - second_i <= 0. Row i stays tight
// at the minimum of c - v over its row (every other v is <= 0, so c - v >= c >= second_i there),
// all the searches ask of an assigned row; v < 0 only on assigned columns (assigned for good) and
// 0 on the rest, so the rectangular certificate's column conditions hold as for the cold start.
// A taken column now costs the other rows its owner's margin more, and the searches reach a free
// column sooner: the largest member of a 16 x 300 x 300 matcher block took 1,156 -> 927 Dijkstra
// steps, 896 -> 675 and 761 -> 573 on three draws (NumPy twin, lapcli.twins.row_reduction).
// One warp (or the half-warp group) per row: its lanes scan the row, one warp argmin, a second
// for the row's second-smallest cost, one atomicMin claim. A row whose minimum is not finite
// claims nothing, and one whose second is not finite transfers nothing (the launch's answer is
// then not used: such costs are checked and solved again, see certify_problem's STAT_NONFINITE).
// Not inlined: in the kernel's body it changed the registers of the searches (64 -> 70 a thread
// on a 300 x 300 stack) and slowed square stacks that never run it.
template <typename T, typename D, int K, int THREADS, bool RAGGED>
__device__ __noinline__ void row_reduction(const T* __restrict__ problem, long long rs, long long cs, const T* staged,
                                           int sp, int staged_rows, int n, int m, int* col4row, int* row4col,
                                           D* v_sh) {
    typedef DualTraits<D> DT;
    constexpr int G = THREADS, WIDTH = Group<THREADS>::WIDTH, WARPS = Group<THREADS>::WARPS;
    const int t = (int)threadIdx.x % G;  // as the kernel's (fewer arguments: a call's registers)
    const unsigned mask = Group<THREADS>::lanes();
    const int lane_in_group = t % WIDTH, warp = t / 32;
    for (int j = t; j < m; j += G) row4col[j] = 0x7fffffff;  // the claims: column -> lowest row claiming it
    Group<THREADS>::sync(mask);
    for (int r = warp; r < n; r += WARPS) {
        unsigned long long key = ~0ull, second = ~0ull;  // this lane's least and next keys
        unsigned tag = 0xffffffffu;
#pragma unroll 8
        for (int j = lane_in_group; j < m; j += WIDTH) {  // ascending: the lowest column on ties
            const unsigned long long here = DT::key((D)COST(r, j));
            if (here < key) { second = key; key = here; tag = (unsigned)j; }
            else if (here < second) second = here;
        }
        const unsigned mine = tag;
        const unsigned long long least = key;
        warp_argmin(key, tag, mask);
        // the row's second: every lane's next, and every other lane's least
        const unsigned long long next = warp_min(mine == tag ? second : least, mask);
        if (lane_in_group == 0 && tag < (unsigned)m && isfinite((double)DT::value(key))) {
            col4row[r] = (int)tag;
            atomicMin(&row4col[tag], r);
            // row-indexed until the claims are settled (below): the transfer if this row keeps its column
            v_sh[r] = isfinite((double)DT::value(next)) ? DT::value(key) - DT::value(next) : (D)0;
        }
    }
    Group<THREADS>::sync(mask);
    for (int r = t; r < n; r += G) {  // a row that lost its claim is free
        const int j = col4row[r];
        if (j < 0 || row4col[j] != r) col4row[r] = -1;
    }
    Group<THREADS>::sync(mask);
    D transfer[K];  // v of this thread's columns: their rows' transfers, 0 where no row claimed one
#pragma unroll
    for (int k = 0; k < K; ++k) {
        const int j = t + k * G, r = j < m ? row4col[j] : 0x7fffffff;
        transfer[k] = r != 0x7fffffff ? v_sh[r] : (D)0;
    }
    Group<THREADS>::sync(mask);  // every row-indexed transfer read before the columns' v is written
#pragma unroll
    for (int k = 0; k < K; ++k) {
        const int j = t + k * G;
        if (j >= m) continue;
        v_sh[j] = transfer[k];
        if (row4col[j] == 0x7fffffff) row4col[j] = -1;  // claimed by none
    }
}

// The parameters, in order, are lapcli/cuda/batch_abi.py's KERNEL_PARAMETERS (the driver launch packs
// them by their kinds there; a test compares the two lists).
template <typename T, typename D, int K, int THREADS, bool CERTIFY, bool RAGGED>
__global__ void __launch_bounds__(Group<THREADS>::BLOCK)
batch_lap(const T* __restrict__ cost, int B, int n_stack, int m_stack,
          int* __restrict__ col_of_row, D* __restrict__ u_out, D* __restrict__ v_out,
          int* __restrict__ status, unsigned long long* __restrict__ launch_start,
          unsigned long long time_limit_ns,
          // A warm start (engine cuda-sap, square problems; null: none): the duals v (B, m) and the
          // columns (B, n) of a partial assignment whose every assigned row is tight at a minimum of
          // c - v over its row, as the auction of kernels/hungarian.cu leaves them. Only the rows it
          // leaves free are searched from.
          const D* __restrict__ v_start, const int* __restrict__ col_start,
          // CERTIFY only (see certify_problem): where the caller's answer and the proof go
          const double* __restrict__ row_offset, int transposed, int n_out, int exact,
          long long* __restrict__ out, double* __restrict__ stats, long long* __restrict__ objective_out,
          unsigned long long* __restrict__ summary,
          // RAGGED (with CERTIFY) only: problem b is member b of the table (kernels/ragged_table.cuh),
          // read where it lies, n_stack and m_stack the most rows and columns of a member oriented;
          // the pairs of lapcli.match go to pair_rows / pair_cols, a list's answer to flat_out (null:
          // none).
          const long long* __restrict__ members, long long* __restrict__ pair_rows,
          long long* __restrict__ pair_cols, long long* __restrict__ flat_out) {
    static_assert(K >= 1 && K <= 32, "K columns per thread, one bit each in the masks");
    typedef DualTraits<D> DT;
    constexpr int G = THREADS;                    // threads per problem
    constexpr int WARPS = Group<THREADS>::WARPS;  // warps per problem (1 also when THREADS < 32)
    constexpr int M = G * K;                      // most columns a group handles
    constexpr int GPB = Group<THREADS>::PER_BLOCK;  // problems per block
    static_assert(M <= 65536, "a column index must fit the 16 bits of the tag");
    // The packed argmin (integer duals): from the second step of a search on, every open column's
    // distance is >= minVal (the last scanned one's: reduced costs are >= 0, exactly, in integers),
    // so (spc - minVal, assigned, index) packs into one 32-bit word whose minimum is S2's winner
    // with its tie-break, and a group agrees on it with one redux.sync per level instead of three.
    // A distance too far above minVal for the word's bits saturates; if the winner is saturated
    // (or at a search's first step) the step takes the 64-bit argmin below.
    constexpr bool PACKED = same_type<D, long long>::value;
    constexpr int IDX_BITS = index_bits(M);
    constexpr int TAG_BITS = IDX_BITS + 1;  // the assigned flag above the index
    static_assert(!PACKED || TAG_BITS <= 20, "12+ bits of the packed word left for the distance");
    constexpr unsigned long long REL_LIMIT = (1ull << (32 - TAG_BITS)) - 1;  // rel below this packs

    __shared__ int row4col_s[GPB][M];
    __shared__ int col4row_s[GPB][M];
    __shared__ int path_s[GPB][M];
    __shared__ D v_s[GPB][M];
    __shared__ unsigned long long red_key[2 * WARPS];  // per-warp winners, double-buffered: [parity * WARPS + warp]
    __shared__ unsigned red_tag[2 * WARPS];
    __shared__ unsigned red_packed[2 * WARPS];  // the same for the packed argmin
    __shared__ int abort_s[GPB];
    __shared__ unsigned long long start_s[GPB];

    const int group = GPB > 1 ? (int)threadIdx.x / G : 0;
    const int t = GPB > 1 ? (int)threadIdx.x % G : (int)threadIdx.x;
    const int lane = threadIdx.x & 31, warp = t >> 5;
    const unsigned mask = Group<THREADS>::lanes();
    const long long b = (long long)blockIdx.x * GPB + group;
    if (b >= B) return;  // the whole group: its lanes of a warp, or its whole block
    int* row4col = row4col_s[group];
    int* col4row = col4row_s[group];
    int* path_sh = path_s[group];
    D* v_sh = v_s[group];
    // The problem: element (i, j) at problem[i * rs + j * cs], n <= m. A stack's problem b is its
    // own slice; a ragged member is read in place, a tall one (rows > cols) through its transpose
    // (cs = its row stride: a row scan then reads one element per caller row).
    // A stack's kernels (RAGGED false) keep cs = 1 at compile time: their loads and registers are
    // those of a plain row-major slice.
    static_assert(!RAGGED || CERTIFY, "a ragged batch is read by the certified launch");
    int n = n_stack, m = m_stack;
    const T* problem = cost + b * (long long)n_stack * m_stack;
    long long rs = m_stack, member_cs = 1, pair_start = 0, row_start = 0;
    bool flip = transposed;
    int caller_rows = n_out;
    if constexpr (RAGGED) {
        const RaggedMember member(members, b);
        problem = reinterpret_cast<const T*>(member.address);
        flip = member.tall();
        n = member.real();
        m = member.wide();
        rs = flip ? 1 : member.stride;
        member_cs = flip ? member.stride : 1;
        pair_start = member.pair_start;
        row_start = member.row_start;
        caller_rows = member.rows;
        if (n == 0) {  // no rows or no columns: nothing to assign, nothing to prove
            if constexpr (CERTIFY) {
                for (int i = t; i < n_out; i += G) out[b * n_out + i] = -1;
                if (flat_out)
                    for (int i = t; i < member.rows; i += G) flat_out[row_start + i] = -1;
                if (t == 0) {
                    for (int k = 0; k < CERTIFY_STATS; ++k) stats[k * (long long)B + b] = 0.0;
                    stats[STAT_PROVED * (long long)B + b] = 1.0;
                    objective_out[b] = 0;
                    status[b] = STATUS_OK;
                }
            }
            return;
        }
    }
    const long long cs = RAGGED ? member_cs : 1;

    // Staging (RAGGED): the member's first staged_rows work rows are copied once into this group's
    // share of the launch's dynamic shared memory (sp elements a row, sp odd), and every later read
    // of those rows (column reduction, the searches' row scans, the certificate) is a shared-memory
    // load instead of a global one. A tall member's row scan in place reads one element per caller
    // row (a strided, uncoalesced load per column) and each search step waits for it; staged, a step
    // waits ~30 cycles, not an L2 round trip. The copy reads the caller's memory in its own order
    // (coalesced) with cp.async (no register holds a value in flight); an odd sp puts a transposing
    // copy's 32 writes of a warp in 32 banks. Rows past staged_rows (a member larger than its share)
    // are read in place. A launch without dynamic shared memory stages nothing.
    const T* staged = nullptr;
    int sp = 1, staged_rows = 0;
    if constexpr (RAGGED) {
        extern __shared__ __align__(16) unsigned char staging_area[];
        unsigned area_bytes;
        asm("mov.u32 %0, %%dynamic_smem_size;" : "=r"(area_bytes));
        const unsigned share = area_bytes / (unsigned)sizeof(T) / GPB;  // elements per group
        sp = m | 1;
        staged_rows = min(n, (int)(share / (unsigned)sp));
        T* area = reinterpret_cast<T*>(staging_area) + (size_t)group * share;
        staged = area;
        if (staged_rows > 0) {
            // inner: the caller-contiguous index (a tall member's work row, else its column)
            const int inner_count = flip ? staged_rows : m, outer_count = flip ? m : staged_rows;
            const int step_outer = G / inner_count, step_inner = G % inner_count;
            int inner = t % inner_count, outer = t / inner_count;
            while (outer < outer_count) {
                const int x = flip ? inner : outer, y = flip ? outer : inner;  // work row, work column
                const T* from = problem + (long long)x * rs + (long long)y * cs;
                const unsigned to = (unsigned)__cvta_generic_to_shared(area + x * sp + y);
                asm volatile("cp.async.ca.shared.global [%0], [%1], %2;" ::"r"(to), "l"(from), "n"(sizeof(T)));
                inner += step_inner;
                outer += step_outer;
                if (inner >= inner_count) { inner -= inner_count; ++outer; }
            }
            asm volatile("cp.async.wait_all;" ::: "memory");
        }
        Group<THREADS>::sync(mask);  // every staged element written before any thread reads one
    }

    // The launch's start: the first group to arrive stamps it; every group measures against it.
    if (t == 0) {
        const unsigned long long now = batch_global_timer_ns();
        const unsigned long long first = atomicCAS(launch_start, 0ull, now);
        start_s[group] = first ? first : now;
    }
    for (int j = t; j < M; j += G) {
        row4col[j] = -1;
        col4row[j] = -1;
        v_sh[j] = v_start && j < m ? v_start[b * m + j] : (D)0;
    }
    if (t == 0) abort_s[group] = 0;
    if (col_start) {
        Group<THREADS>::sync(mask);  // every row4col entry cleared before the start's are written
        for (int r = t; r < n; r += G) {
            const int j = col_start[b * n + r];
            col4row[r] = j;
            if (j >= 0) row4col[j] = r;
        }
    }

    // Column reduction (Jonker & Volgenant 1987, the first step of LAPJV), for square problems
    // without a warm start: v[j] = min_i c[i][j], and column j goes to the row of its minimum
    // (lowest row on ties; a row that is the minimum of several columns takes the lowest of them).
    // A row so assigned is tight (c - v = 0) at its row's minimum of c - v (>= 0 everywhere), all the
    // searches ask of an assigned row, so it is a warm start like the auction's (v_start above). It
    // reads the problem once with independent loads (no chain of dependent steps) and leaves ~n/e
    // rows free: on random problems the searches then take about half the Dijkstra steps (NumPy
    // count, 256 x 256: U[0, 1) 3010 -> 1809, integers in [0, 10n) 2566 -> 1316;
    // docs/design.md).
    // Only for n == m: with n < m it would leave v > 0 on columns no row takes.
    if (!v_start && !col_start && n == m) {
        T best[K];
        int arg[K];
#pragma unroll
        for (int k = 0; k < K; ++k) { best[k] = (T)0; arg[k] = -1; }
        for (int j = t; j < M; j += G) path_sh[j] = 0x7fffffff;  // claims: row -> lowest column
        constexpr int ROWS = K >= 8 ? 1 : 8 / K;  // rows whose K loads each are in flight before the compares
        int r = 0;
        for (; r + ROWS <= n; r += ROWS) {
            T c[ROWS][K];
#pragma unroll
            for (int q = 0; q < ROWS; ++q)
#pragma unroll
                for (int k = 0; k < K; ++k)
                    c[q][k] = t + k * G < m ? COST(r + q, t + k * G) : (T)0;
#pragma unroll
            for (int q = 0; q < ROWS; ++q)
#pragma unroll
                for (int k = 0; k < K; ++k)
                    if (arg[k] < 0 || c[q][k] < best[k]) { best[k] = c[q][k]; arg[k] = r + q; }
        }
        for (; r < n; ++r)
#pragma unroll
            for (int k = 0; k < K; ++k) {
                const T c = t + k * G < m ? COST(r, t + k * G) : (T)0;
                if (arg[k] < 0 || c < best[k]) { best[k] = c; arg[k] = r; }
            }
        Group<THREADS>::sync(mask);  // every claim cleared
#pragma unroll
        for (int k = 0; k < K; ++k)
            if (t + k * G < m) atomicMin(&path_sh[arg[k]], t + k * G);
        Group<THREADS>::sync(mask);
#pragma unroll
        for (int k = 0; k < K; ++k) {
            const int j = t + k * G;
            if (j >= m) continue;
            v_sh[j] = (D)best[k];
            if (path_sh[arg[k]] == j) { row4col[j] = arg[k]; col4row[arg[k]] = j; }
        }
    }
    if (!v_start && !col_start && n < m)
        row_reduction<T, D, K, THREADS, RAGGED>(problem, rs, cs, staged, sp, staged_rows, n, m, col4row, row4col,
                                                v_sh);

    D v[K], spc[K];
    int path[K];
    unsigned dead = 0, assigned = 0;  // bit k: column t + k*G (dead: >= m, never scanned)
#pragma unroll
    for (int k = 0; k < K; ++k) {
        v[k] = 0; spc[k] = DT::inf(); path[k] = -1;
        if (t + k * G >= m) dead |= 1u << k;
    }
    Group<THREADS>::sync(mask);  // start_s and the shared arrays (no block-wide barrier in warp mode:
                          // the other warp of the block may have returned above)
    const unsigned long long start = start_s[group];
    // a warm start, the column reduction or the row reduction: its v and columns
#pragma unroll
    for (int k = 0; k < K; ++k) {
        if ((dead >> k) & 1) continue;
        v[k] = v_sh[t + k * G];
        if (row4col[t + k * G] >= 0) assigned |= 1u << k;
    }

    int st = STATUS_OK;
    int parity = 0;  // 0 or WARPS: the half of red_key / red_tag this iteration writes
    for (int root = 0; root < n; ++root) {
        if (col4row[root] >= 0) continue;  // taken by the warm start (uniform: written before a sync)
        // ---- S1/S2: Dijkstra from the free row `root` ------------------------------------------
        unsigned scanned = dead;
#pragma unroll
        for (int k = 0; k < K; ++k) spc[k] = DT::inf();
        D min_val = 0, v_prev = 0;
        int i = root, j_prev = -1, sink = -1;
        for (int iteration = 0; iteration <= m; ++iteration) {
            T c[K];
            D ui;  // u[i] of the tight pair (i, j_prev); 0 for the root.
            if (RAGGED && i < staged_rows) {  // uniform over the group: one row for all
                const T* row = staged + i * sp;
#pragma unroll
                for (int k = 0; k < K; ++k) c[k] = ((dead >> k) & 1) ? (T)0 : row[t + k * G];
                ui = j_prev >= 0 ? (D)row[j_prev] - v_prev : (D)0;
            } else {
                const T* row = ROW(i);
#pragma unroll
                for (int k = 0; k < K; ++k) c[k] = ((dead >> k) & 1) ? (T)0 : __ldg(COLUMN(row, t + k * G));
                ui = j_prev >= 0 ? (D)__ldg(COLUMN(row, j_prev)) - v_prev : (D)0;
            }
            const D off = min_val - ui;  // d = (c - v) + (minVal - u[i]): one add after the loads
            // S1 for every open column, by selects (a scanned or dead column keeps its state), then
            // this thread's (key, tag) minimum as a tree of K - 1 comparisons: depth log2 K, and no
            // branches. Against one compare-and-branch chain (H100, kernel ms): 18-33 % faster on
            // batches of 64-1024 columns, 11 % on cuda-sap's searches at n = 1024
            // (docs/design.md)
#pragma unroll
            for (int k = 0; k < K; ++k) {
                const bool open = !((scanned >> k) & 1);
                const D d = ((D)c[k] - v[k]) + off;  // S1
                const bool better = open && d < spc[k];
                spc[k] = better ? d : spc[k];
                path[k] = better ? i : path[k];
            }
            // S2: argmin over the group, packed where it can be (PACKED above), else 64-bit.
            int jw = -1;
            bool reached_free = false;
            if constexpr (PACKED) {
                if (iteration > 0) {
                    unsigned best = ~0u;
#pragma unroll
                    for (int k = 0; k < K; ++k) {
                        // unsigned: an unreached column's inf - minVal wraps to a large value, not UB
                        const unsigned long long rel = (unsigned long long)spc[k] - (unsigned long long)min_val;
                        const unsigned word = (((scanned >> k) & 1) || rel >= REL_LIMIT) ? ~0u
                            : ((unsigned)rel << TAG_BITS) | (((assigned >> k) & 1u) << IDX_BITS) | (unsigned)(t + k * G);
                        best = min(best, word);
                    }
                    best = __reduce_min_sync(mask, best);
                    if constexpr (WARPS > 1) {
                        if (lane == 0) red_packed[parity + warp] = best;
                        __syncthreads();
                        if constexpr (WARPS <= 4) {
                            best = red_packed[parity];
#pragma unroll
                            for (int w = 1; w < WARPS; ++w) best = min(best, red_packed[parity + w]);
                        } else {
                            best = __reduce_min_sync(BATCH_FULL_MASK, lane < WARPS ? red_packed[parity + lane] : ~0u);
                        }
                        parity ^= WARPS;
                    }
                    if (best != ~0u) {  // else: every open distance saturated (or none open): 64-bit
                        jw = (int)(best & ((1u << IDX_BITS) - 1u));
                        reached_free = !((best >> IDX_BITS) & 1u);
                        min_val += (D)(best >> TAG_BITS);
                    }
                }
            }
            if (jw < 0) {
                unsigned long long keys[K];
                unsigned tags[K];
#pragma unroll
                for (int k = 0; k < K; ++k) {
                    const bool open = !((scanned >> k) & 1);
                    keys[k] = open ? DT::key(spc[k]) : ~0ull;
                    tags[k] = open ? ((((assigned >> k) & 1u) << 16) | (unsigned)(t + k * G)) : 0xffffffffu;
                }
#pragma unroll
                for (int s = 1; s < K; s *= 2)
#pragma unroll
                    for (int k = 0; k + s < K; k += 2 * s)
                        if (key_less(keys[k + s], tags[k + s], keys[k], tags[k])) { keys[k] = keys[k + s]; tags[k] = tags[k + s]; }
                unsigned long long best_key = keys[0];
                unsigned best_tag = tags[0];
                warp_argmin(best_key, best_tag, mask);
                if constexpr (WARPS > 1) {
                    if (lane == 0) { red_key[parity + warp] = best_key; red_tag[parity + warp] = best_tag; }
                    __syncthreads();
                    if constexpr (WARPS <= 4) {  // each thread scans the winners; beyond 4 warps, a warp argmin
                        best_key = red_key[parity];
                        best_tag = red_tag[parity];
#pragma unroll
                        for (int w = 1; w < WARPS; ++w) {
                            const unsigned long long k2 = red_key[parity + w];
                            const unsigned t2 = red_tag[parity + w];
                            if (key_less(k2, t2, best_key, best_tag)) { best_key = k2; best_tag = t2; }
                        }
                    } else {
                        best_key = lane < WARPS ? red_key[parity + lane] : ~0ull;
                        best_tag = lane < WARPS ? red_tag[parity + lane] : 0xffffffffu;
                        warp_argmin(best_key, best_tag, BATCH_FULL_MASK);
                    }
                    parity ^= WARPS;
                }
                if (best_key == ~0ull || best_key == DT::key(DT::inf())) { st = STATUS_NO_COLUMN; break; }
                jw = (int)(best_tag & 0xffffu);
                reached_free = !(best_tag >> 16);
                min_val = DT::value(best_key);
            }
            if ((jw & (G - 1)) == t) scanned |= 1u << (jw / G);
            if (reached_free) { sink = jw; break; }
            i = row4col[jw];
            v_prev = v_sh[jw];
            j_prev = jw;
        }
        if (st == STATUS_OK && sink < 0) st = STATUS_PATH_CAP;
        if (st != STATUS_OK) break;  // uniform over the group: every thread saw the same winners

        // ---- S3: dual update of the scanned columns; publish v and path for S4 ------------------
        Group<THREADS>::sync(mask);  // every thread is done reading v_sh / row4col of this search
#pragma unroll
        for (int k = 0; k < K; ++k) {
            if (((scanned & ~dead) >> k) & 1) {
                v[k] -= min_val - spc[k];
                v_sh[t + k * G] = v[k];
                path_sh[t + k * G] = path[k];
            }
        }
        if ((sink & (G - 1)) == t) assigned |= 1u << (sink / G);
        Group<THREADS>::sync(mask);
        // ---- S4: augment (one thread; the walk is as long as the search found rows) -------------
        if (t == 0) {
            int j = sink, steps = 0, failed = 0;
            while (true) {
                const int r = path_sh[j];
                row4col[j] = r;
                const int next = col4row[r];
                col4row[r] = j;
                if (r == root) break;
                j = next;
                if (++steps > n || j < 0) { failed = STATUS_PATH_CAP; break; }
            }
            if (!failed && time_limit_ns && batch_global_timer_ns() - start > time_limit_ns) failed = STATUS_TIMEOUT;
            abort_s[group] = failed;
        }
        Group<THREADS>::sync(mask);
        if (abort_s[group]) { st = abort_s[group]; break; }
    }

    Group<THREADS>::sync(mask);
    if constexpr (CERTIFY) {
#ifdef BATCH_CORRUPT_PROBLEM
        // The kernel's only optional define, for tests only (batch_lap.py's fault=(problem, mode)):
        // spoil problem BATCH_CORRUPT_PROBLEM's answer, two rows' columns swapped (mode 1) or one
        // column given twice (else), so that its certificate must fail.
        if (b == BATCH_CORRUPT_PROBLEM && t == 0 && n >= 2) {
            if (BATCH_CORRUPT_MODE == 1) { const int j = col4row[0]; col4row[0] = col4row[1]; col4row[1] = j; }
            else col4row[1] = col4row[0];  // one column twice
        }
        Group<THREADS>::sync(mask);
#endif
        certify_problem<T, D, K, THREADS, RAGGED>(problem, rs, cs, staged, sp, staged_rows, b, B, n, m, t, mask, st, v, dead, col4row, path_sh, v_sh,
                                        red_key, row_offset, flip, n_out, exact, out, stats, objective_out,
                                        summary, caller_rows, pair_start, pair_rows, pair_cols, row_start, flat_out);
        if (t == 0) status[b] = st;
        return;
    }
    // ---- outputs: col_of_row, u = c - v on the assignment, v ------------------------------------
    for (int j = t; j < m; j += G) v_out[b * m + j] = v_sh[j];
    for (int r = t; r < n; r += G) {
        const int j = col4row[r];
        col_of_row[b * n + r] = j;
        u_out[b * n + r] = j >= 0 ? (D)*COLUMN(ROW(r), j) - v_sh[j] : (D)0;
    }
    if (t == 0) status[b] = st;
}

