// Many small rectangular linear assignment problems (n <= m, minimise) in ONE launch: a GROUP of
// threads per problem (one warp, or a block of WARPS warps), the hardware block scheduler handing
// out the problems (grid = one block per 1 or 2 problems, so no persistent loop is needed).
//
// Algorithm: shortest augmenting path, as scipy's linear_sum_assignment (Crouse 2016, after
// Jonker-Volgenant). For each free row (in order 0..n-1) a Dijkstra over the columns on reduced
// costs c[i][j] - u[i] - v[j]:
//   S1  scan row i: for every unscanned column j, d = (c[i][j] - v[j]) + (minVal - u[i]);
//       if d < spc[j]: spc[j] = d, path[j] = i;
//   S2  j* = argmin of spc over unscanned columns (ties: a free column first, then the lowest index);
//       minVal = spc[j*]; scan j*; if j* is free it is the sink, else i = row4col[j*] and go to S1;
//   S3  dual update: v[j] -= minVal - spc[j] for scanned j (u is not stored, see below);
//   S4  augment along path[] from the sink back to the root.
// Starting from v = 0, v only decreases, and only on scanned (hence assigned, and assigned for
// good) columns: at the end v <= 0 and v == 0 on every column no row took, which with
// c - u - v >= 0 everywhere and == 0 on the assignment certifies optimality of the rectangular
// problem (complementary slackness).
//
// u is never stored: every assigned row is tight, u[i] = c[i][col4row[i]] - v[col4row[i]], so the
// scan of row i = row4col[j*] computes u[i] from the cost of (i, j*) and v[j*]; the root of a
// search uses u = 0 (it only shifts all distances of that search by a constant). The returned u
// is computed the same way at the end.
//
// Layout: thread t of a group owns columns j = t + k*G (k < K, G = 32*WARPS threads): spc, v and
// path of those columns live in registers, the scanned / assigned flags in two bit masks. Shared
// memory holds row4col, col4row (the walk of S4 and the next row of S2), v (the S2 winner's dual)
// and path (written once per search, for S4). A row scan is K coalesced loads per thread; the
// argmin is three __reduce_min_sync per warp (64-bit key split in two halves, then the tag), plus,
// for WARPS > 1, one __syncthreads after which every thread scans the per-warp winners
// (double-buffered scratch, so one barrier per iteration). Switches for measurements: BATCH_SHFL,
// BATCH_BLOCK_SCAN, BATCH_PREFETCH below.
//
// Types: T is the stored cost (int, long long, float, double); D the dual / distance type (long
// long for integer costs: exact; double for float costs).

#define BATCH_FULL_MASK 0xffffffffu

// Status codes, one per problem (lapcli/engines/cuda_batch.py STATUS_MESSAGES).
#define BATCH_OK 0
#define BATCH_NO_COLUMN 1   // S2 found no unscanned column with a finite distance (NaN or inf costs)
#define BATCH_TIMEOUT 2     // the launch ran past its time limit; this problem was abandoned
#define BATCH_PATH_CAP 3    // a search or an augmenting walk ran longer than m / n steps (a bug)

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

#ifndef BATCH_SHFL
#define BATCH_SHFL 0       // 1: warp argmin by a shuffle butterfly instead of __reduce_min_sync
#endif
#ifndef BATCH_BLOCK_SCAN
#define BATCH_BLOCK_SCAN 2 // WARPS > 1: 1 every thread scans the WARPS per-warp winners itself, 0 a second
                           // warp argmin over them, 2 the first up to 4 warps, the second beyond
#endif
#ifndef BATCH_PREFETCH
#define BATCH_PREFETCH 0   // 1: (WARPS > 1) each warp prefetches its winner's row into L1 before the
                           // barrier; measured slower at n = 1024 and no faster at 256 (docs/batch-notes.md)
#endif

__device__ __forceinline__ bool key_less(unsigned long long k1, unsigned t1, unsigned long long k2, unsigned t2) {
    return k1 < k2 || (k1 == k2 && t1 < t2);
}

// Lexicographic minimum of (key, tag) over the warp, returned to every lane.
__device__ __forceinline__ void warp_argmin(unsigned long long& key, unsigned& tag) {
#if BATCH_SHFL
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) {
        const unsigned long long k2 = __shfl_xor_sync(BATCH_FULL_MASK, key, offset);
        const unsigned t2 = __shfl_xor_sync(BATCH_FULL_MASK, tag, offset);
        if (key_less(k2, t2, key, tag)) { key = k2; tag = t2; }
    }
#else
    const unsigned hi = (unsigned)(key >> 32), lo = (unsigned)key;
    const unsigned min_hi = __reduce_min_sync(BATCH_FULL_MASK, hi);
    const unsigned min_lo = __reduce_min_sync(BATCH_FULL_MASK, hi == min_hi ? lo : 0xffffffffu);
    const bool best = hi == min_hi && lo == min_lo;
    tag = __reduce_min_sync(BATCH_FULL_MASK, best ? tag : 0xffffffffu);
    key = ((unsigned long long)min_hi << 32) | min_lo;
#endif
}

template <int WARPS>
__device__ __forceinline__ void group_sync() {
    if constexpr (WARPS == 1) __syncwarp(); else __syncthreads();
}

template <typename T, typename D, int K, int WARPS>
__global__ void __launch_bounds__(WARPS == 1 ? 64 : 32 * WARPS)
batch_lap(const T* __restrict__ cost, int B, int n, int m,
          int* __restrict__ col_of_row, D* __restrict__ u_out, D* __restrict__ v_out,
          int* __restrict__ status, unsigned long long* __restrict__ launch_start,
          unsigned long long time_limit_ns) {
    static_assert(K >= 1 && K <= 32, "K columns per thread, one bit each in the masks");
    typedef DualTraits<D> DT;
    constexpr int G = 32 * WARPS;                 // threads per problem
    constexpr int M = G * K;                      // most columns a group handles
    constexpr int GPB = WARPS == 1 ? 2 : 1;       // problems per block
    static_assert(M <= 65536, "a column index must fit the 16 bits of the tag");

    __shared__ int row4col_s[GPB][M];
    __shared__ int col4row_s[GPB][M];
    __shared__ int path_s[GPB][M];
    __shared__ D v_s[GPB][M];
    __shared__ unsigned long long red_key[2][WARPS];
    __shared__ unsigned red_tag[2][WARPS];
    __shared__ int abort_s[GPB];
    __shared__ unsigned long long start_s[GPB];

    const int group = WARPS == 1 ? (int)(threadIdx.x >> 5) : 0;
    const int t = WARPS == 1 ? (int)(threadIdx.x & 31) : (int)threadIdx.x;
    const int lane = threadIdx.x & 31, warp = t >> 5;
    const long long b = (long long)blockIdx.x * GPB + group;
    if (b >= B) return;  // WARPS == 1: the whole warp; WARPS > 1: the whole block
    int* row4col = row4col_s[group];
    int* col4row = col4row_s[group];
    int* path_sh = path_s[group];
    D* v_sh = v_s[group];
    const T* problem = cost + b * (long long)n * m;

    // The launch's start: the first group to arrive stamps it; every group measures against it.
    if (t == 0) {
        const unsigned long long now = batch_global_timer_ns();
        const unsigned long long first = atomicCAS(launch_start, 0ull, now);
        start_s[group] = first ? first : now;
    }
    for (int j = t; j < M; j += G) { row4col[j] = -1; col4row[j] = -1; v_sh[j] = 0; }
    if (t == 0) abort_s[group] = 0;

    D v[K], spc[K];
    int path[K];
    unsigned dead = 0, assigned = 0;  // bit k: column t + k*G (dead: >= m, never scanned)
#pragma unroll
    for (int k = 0; k < K; ++k) {
        v[k] = 0; spc[k] = DT::inf(); path[k] = -1;
        if (t + k * G >= m) dead |= 1u << k;
    }
    group_sync<WARPS>();  // start_s and the shared arrays (no block-wide barrier in warp mode:
                          // the other warp of the block may have returned above)
    const unsigned long long start = start_s[group];

    int st = BATCH_OK;
    int parity = 0;
    for (int root = 0; root < n; ++root) {
        // ---- S1/S2: Dijkstra from the free row `root` ------------------------------------------
        unsigned scanned = dead;
#pragma unroll
        for (int k = 0; k < K; ++k) spc[k] = DT::inf();
        D min_val = 0, v_prev = 0;
        int i = root, j_prev = -1, sink = -1;
        for (int iteration = 0; iteration <= m; ++iteration) {
            const T* row = problem + (long long)i * m;
            T c[K];
#pragma unroll
            for (int k = 0; k < K; ++k) if (!((dead >> k) & 1)) c[k] = __ldg(row + t + k * G);
            // u[i] of the tight pair (i, j_prev); 0 for the root.
            const D ui = j_prev >= 0 ? (D)__ldg(row + j_prev) - v_prev : (D)0;
            const D off = min_val - ui;  // d = (c - v) + (minVal - u[i]): one add after the loads
            D best_d = DT::inf();
            unsigned best_tag = 0xffffffffu;
#pragma unroll
            for (int k = 0; k < K; ++k) {
                if ((scanned >> k) & 1) continue;
                const D d = ((D)c[k] - v[k]) + off;  // S1
                if (d < spc[k]) { spc[k] = d; path[k] = i; }
                const unsigned tag = (((assigned >> k) & 1u) << 16) | (unsigned)(t + k * G);
                if (spc[k] < best_d || (spc[k] == best_d && tag < best_tag)) { best_d = spc[k]; best_tag = tag; }
            }
            unsigned long long best_key = best_tag == 0xffffffffu ? ~0ull : DT::key(best_d);
            // S2: argmin over the group.
            warp_argmin(best_key, best_tag);
            if constexpr (WARPS > 1) {
                if (lane == 0) { red_key[parity][warp] = best_key; red_tag[parity][warp] = best_tag; }
#if BATCH_PREFETCH
                // The next row is row4col[j*]; this warp's winner is one of WARPS candidates: start
                // pulling its row into L1 while the block agrees on the winner.
                if ((best_tag >> 16) && best_key != ~0ull) {
                    const char* next = (const char*)(problem + (long long)row4col[best_tag & 0xffffu] * m);
                    for (int q = lane * 128; q < m * (int)sizeof(T); q += 32 * 128)
                        asm volatile("prefetch.global.L1 [%0];" ::"l"(next + q));
                }
#endif
                __syncthreads();
                if constexpr (BATCH_BLOCK_SCAN == 1 || (BATCH_BLOCK_SCAN == 2 && WARPS <= 4)) {
                best_key = red_key[parity][0];
                best_tag = red_tag[parity][0];
#pragma unroll
                for (int w = 1; w < WARPS; ++w) {
                    const unsigned long long k2 = red_key[parity][w];
                    const unsigned t2 = red_tag[parity][w];
                    if (key_less(k2, t2, best_key, best_tag)) { best_key = k2; best_tag = t2; }
                }
                } else {
                best_key = lane < WARPS ? red_key[parity][lane] : ~0ull;
                best_tag = lane < WARPS ? red_tag[parity][lane] : 0xffffffffu;
                warp_argmin(best_key, best_tag);
                }
                parity ^= 1;
            }
            if (best_key == ~0ull || best_key == DT::key(DT::inf())) { st = BATCH_NO_COLUMN; break; }
            const int jw = (int)(best_tag & 0xffffu);
            min_val = DT::value(best_key);
            if ((jw & (G - 1)) == t) scanned |= 1u << (jw / G);
            if (!(best_tag >> 16)) { sink = jw; break; }
            i = row4col[jw];
            v_prev = v_sh[jw];
            j_prev = jw;
        }
        if (st == BATCH_OK && sink < 0) st = BATCH_PATH_CAP;
        if (st != BATCH_OK) break;  // uniform over the group: every thread saw the same winners

        // ---- S3: dual update of the scanned columns; publish v and path for S4 ------------------
        group_sync<WARPS>();  // every thread is done reading v_sh / row4col of this search
#pragma unroll
        for (int k = 0; k < K; ++k) {
            if (((scanned & ~dead) >> k) & 1) {
                v[k] -= min_val - spc[k];
                v_sh[t + k * G] = v[k];
                path_sh[t + k * G] = path[k];
            }
        }
        if ((sink & (G - 1)) == t) assigned |= 1u << (sink / G);
        group_sync<WARPS>();
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
                if (++steps > n || j < 0) { failed = BATCH_PATH_CAP; break; }
            }
            if (!failed && time_limit_ns && batch_global_timer_ns() - start > time_limit_ns) failed = BATCH_TIMEOUT;
            abort_s[group] = failed;
        }
        group_sync<WARPS>();
        if (abort_s[group]) { st = abort_s[group]; break; }
    }

    // ---- outputs: col_of_row, u = c - v on the assignment, v ------------------------------------
    group_sync<WARPS>();
    for (int j = t; j < m; j += G) v_out[b * m + j] = v_sh[j];
    for (int r = t; r < n; r += G) {
        const int j = col4row[r];
        col_of_row[b * n + r] = j;
        u_out[b * n + r] = j >= 0 ? (D)problem[(long long)r * m + j] - v_sh[j] : (D)0;
    }
    if (t == 0) status[b] = st;
}
