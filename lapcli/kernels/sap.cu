// One k x m linear assignment problem (k <= m, minimise) of any size that fits one thread-block
// cluster's shared memory, its costs read from a dense matrix or computed from two point sets
// (a source of kernels/costs.cuh, which the launcher puts in front of this file), by shortest augmenting paths, each Dijkstra search spread over the
// CLUSTER blocks of one cluster (Hopper: the blocks of a cluster run at once on one GPC, read and
// write each other's shared memory -- distributed shared memory -- and meet at a hardware barrier
// far cheaper than a grid-wide one).
//
// Algorithm: Jonker-Volgenant's shortest augmenting path (1987), in scipy's form (Crouse 2016), the
// same steps and tie-break as kernels/batch_lap.cu, so lapcli.twins.reference_stack is this
// kernel's specification too. For each free row, in ascending order, a Dijkstra over the columns
// on the reduced costs c[i][j] - u[i] - v[j]:
//   S1  scan row i: for every unscanned column j, d = (c[i][j] - v[j]) + (minVal - u[i]);
//       if d < spc[j]: spc[j] = d, path[j] = i;
//   S2  j* = argmin of spc over the unscanned columns (ties: a free column first, then the lowest
//       index); minVal = spc[j*]; scan j*; a free j* is the sink, else i = row4col[j*], go to S1;
//   S3  dual update: v[j] -= minVal - spc[j] for the scanned j;
//   S4  augment along path[] from the sink back to the root.
// The start (v and a partial assignment whose every assigned row is tight at its row's minimum of
// c - v) is the caller's: the classical kernel's auction for a square problem, v = 0 and the
// row minima for a rectangular one (v must then stay <= 0 and 0 on untaken columns, which S3
// keeps). u is not stored: an assigned row's u is c[i][col] - v[col]; each column keeps the cost of
// its assigned pair, so the S2 winner brings the next row's u with it.
//
// Layout: column j belongs to block (j / THREADS) % CLUSTER, thread j % THREADS, slot
// j / (THREADS * CLUSTER), so a warp's S1 loads are 32 consecutive costs. A column's state (spc,
// v, the cost of its pair, path, row4col, scanned) lives in its block's shared memory at
// slot * THREADS + thread: during a search only its owner thread touches it; the augmenting walk
// (one thread) reads path and writes row4col and the pair's cost through distributed shared memory.
//
// One Dijkstra step: each thread scans its slots (S1) and keeps its (distance, tag) minimum; a
// warp reduces with three __reduce_min_sync (the key's two halves, then the tag); __syncthreads;
// every warp reduces its block's warp winners, thread 0 publishes the block's; cluster barrier;
// every warp reduces the CLUSTER block winners, read through distributed shared memory. Two
// barriers a step (one when CLUSTER is 1), their scratch double-buffered by the step's parity (a
// block cannot be two steps ahead of a reader). The end of a search costs one more cluster
// barrier: block 0's thread 0 walks the path, finds the next free row and decides whether time
// is up, and every thread reads that.
//
// Statuses (lapcli.cuda.sap_cluster.STATUSES): SAP_OK; SAP_NO_COLUMN, S2 found no unscanned column
// at a finite distance (the problem is infeasible: the caller's work matrix has none); SAP_TIMEOUT,
// the time limit passed (checked between searches); SAP_PATH_CAP, an augmenting walk ran longer
// than k steps (a bug).
#if !defined(CLUSTER) || !defined(THREADS) || !defined(SAP_OK) || !defined(SAP_NO_COLUMN) \
    || !defined(SAP_TIMEOUT) || !defined(SAP_PATH_CAP)
#error "compile with the -D options of lapcli.cuda.sap_cluster.kernel_defines()"
#endif

#include <cooperative_groups.h>

namespace cg = cooperative_groups;

#define SAP_FULL_MASK 0xffffffffu
#define SAP_WARPS (THREADS / 32)
#define SAP_NO_TAG 0xffffffffu
#define SAP_LOADS 4  // a thread's S1 loads in flight at once

template <typename D> struct SapTraits;
template <> struct SapTraits<long long> {
    static __device__ __forceinline__ long long inf() { return 0x7fffffffffffffffLL; }
    // Order-preserving maps to unsigned 64 bits, for __reduce_min_sync on the two halves.
    static __device__ __forceinline__ unsigned long long key(long long x) {
        return (unsigned long long)x ^ 0x8000000000000000ull;
    }
    static __device__ __forceinline__ long long value(unsigned long long k) {
        return (long long)(k ^ 0x8000000000000000ull);
    }
};
template <> struct SapTraits<double> {
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

// A candidate of S2: its distance as an ordered key, its tag ((assigned << 31) | column: a free
// column wins a tie, then the lower index), and what the next step needs if it wins: the row
// assigned to it and that row's u.
template <typename D> struct Candidate {
    unsigned long long key;
    unsigned tag;
    int row;
    D u_row;
};

__device__ __forceinline__ unsigned long long sap_global_timer_ns() {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

// The lexicographic (key, tag) minimum over a warp: every lane gets the winner and its payload.
template <typename D>
__device__ __forceinline__ Candidate<D> warp_min(Candidate<D> mine) {
    const unsigned hi = (unsigned)(mine.key >> 32), lo = (unsigned)mine.key;
    const unsigned min_hi = __reduce_min_sync(SAP_FULL_MASK, hi);
    const unsigned min_lo = __reduce_min_sync(SAP_FULL_MASK, hi == min_hi ? lo : 0xffffffffu);
    const bool key_wins = hi == min_hi && lo == min_lo;
    const unsigned min_tag = __reduce_min_sync(SAP_FULL_MASK, key_wins ? mine.tag : SAP_NO_TAG);
    const unsigned winners = __ballot_sync(SAP_FULL_MASK, key_wins && mine.tag == min_tag);
    const int lane = __ffs(winners) - 1;  // the tags are distinct columns; with no column at all, any lane
    Candidate<D> best;
    best.key = ((unsigned long long)min_hi << 32) | min_lo;
    best.tag = min_tag;
    best.row = __shfl_sync(SAP_FULL_MASK, mine.row, lane);
    best.u_row = __shfl_sync(SAP_FULL_MASK, mine.u_row, lane);
    return best;
}

// What block 0's thread 0 tells the cluster at the end of a search.
struct Control {
    int root;    // the next free row, or k when none is left
    int status;  // SAP_OK to go on
};

// After the augmenting walk from `root` (status `code`): the next free row, and SAP_TIMEOUT in
// place of SAP_OK where the time limit has passed and a row is left (checked between searches).
__device__ __forceinline__ Control sap_next_search(const int* col4row, int k, int root, int code,
                                                   unsigned long long began, long long timeout_ns) {
    int next = root + 1;
    while (next < k && col4row[next] >= 0) ++next;
    if (code == SAP_OK && next < k && sap_global_timer_ns() - began > (unsigned long long)timeout_ns)
        code = SAP_TIMEOUT;
    return Control{next, code};
}

// first, second, stride, p, sign: the cost source (kernels/costs.cuh), k x m. v (m, in: the start's
// duals; out: the final ones), col4row (k, in: the start's partial assignment, -1 free; out: the
// assignment). stats (int64 x 4, out): status, searches, Dijkstra steps, nanoseconds.
template <typename Source, typename D>
__global__ void __cluster_dims__(CLUSTER, 1, 1) __launch_bounds__(THREADS, 1)
sap_cluster(const void* first, const void* second, long long stride, double p, double sign, int k, int m,
            D* v_global, int* col4row, long long timeout_ns, long long* stats) {
    Source source(first, second, stride, p, sign);
    cg::cluster_group cluster = cg::this_cluster();
    const int rank = (int)cluster.block_rank();
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int slots = (m + THREADS * CLUSTER - 1) / (THREADS * CLUSTER);

    extern __shared__ __align__(16) unsigned char sap_shared[];
    D* spc = reinterpret_cast<D*>(sap_shared);
    D* v = spc + slots * THREADS;
    D* pair_cost = v + slots * THREADS;  // c[row4col[j]][j], for the u of the row assigned to j
    int* path = reinterpret_cast<int*>(pair_cost + slots * THREADS);
    int* row4col = path + slots * THREADS;
    unsigned char* scanned = reinterpret_cast<unsigned char*>(row4col + slots * THREADS);
    __shared__ Candidate<D> warp_best[2][SAP_WARPS];
    __shared__ Candidate<D> block_best[2];
    __shared__ Control control;

    const D inf = SapTraits<D>::inf();
    // The start: each owner loads its columns' duals; the assigned pairs come from col4row.
    for (int s = 0; s < slots; ++s) {
        const int j = (s * CLUSTER + rank) * THREADS + tid, at = s * THREADS + tid;
        spc[at] = inf;
        scanned[at] = 0;
        row4col[at] = -1;
        v[at] = j < m ? v_global[j] : D(0);
        pair_cost[at] = D(0);
    }
    __syncthreads();
    for (int i = tid; i < k; i += THREADS) {  // every block sees every row: it keeps its own columns
        const int j = col4row[i];
        if (j >= 0 && (j / THREADS) % CLUSTER == rank) {
            const int at = (j / (THREADS * CLUSTER)) * THREADS + j % THREADS;
            row4col[at] = i;
            pair_cost[at] = source.pair(i, j);
        }
    }
    unsigned long long began = 0;
    if (rank == 0 && tid == 0) {
        began = sap_global_timer_ns();
        int root = 0;
        while (root < k && col4row[root] >= 0) ++root;
        control.root = root;
        control.status = SAP_OK;
    }
    cluster.sync();  // every block has started (distributed shared memory is safe) and is loaded
    Control* control0 = cluster.map_shared_rank(&control, 0);
    Control now = *control0;
    long long searches = 0, steps = 0;
    int parity = 0;
    int status = SAP_OK;
    while (now.status == SAP_OK && now.root < k) {
        const int root = now.root;
        int i = root, sink = -1;
        D u_i = D(0), min_val = D(0);
        while (sink < 0) {
            // S1 and this thread's part of S2.
            source.load_row(i);
            const D shift = min_val - u_i;
            Candidate<D> mine;
            mine.key = ~0ull;
            mine.tag = SAP_NO_TAG;
            mine.row = -1;
            mine.u_row = D(0);
            for (int group = 0; group < slots; group += SAP_LOADS) {
                D loaded[SAP_LOADS];  // all loads of a group issued before any is used
#pragma unroll
                for (int q = 0; q < SAP_LOADS; ++q) {
                    const int j = ((group + q) * CLUSTER + rank) * THREADS + tid;
                    loaded[q] = group + q < slots && j < m ? source.at(j) : D(0);
                }
#pragma unroll
                for (int q = 0; q < SAP_LOADS; ++q) {
                    const int s = group + q, j = (s * CLUSTER + rank) * THREADS + tid, at = s * THREADS + tid;
                    if (s >= slots || j >= m || scanned[at]) continue;
                    const D d = (loaded[q] - v[at]) + shift;
                    D best = spc[at];
                    if (d < best) {
                        best = d;
                        spc[at] = d;
                        path[at] = i;
                    }
                    const unsigned long long key = SapTraits<D>::key(best);
                    const int owner_row = row4col[at];
                    const unsigned tag = (owner_row >= 0 ? 0x80000000u : 0u) | (unsigned)j;
                    if (key < mine.key || (key == mine.key && tag < mine.tag)) {
                        mine.key = key;
                        mine.tag = tag;
                        mine.row = owner_row;
                        mine.u_row = pair_cost[at] - v[at];
                    }
                }
            }
            Candidate<D> best = warp_min(mine);
            if constexpr (SAP_WARPS > 1) {  // a block of one warp has its winner already
                if (lane == 0) warp_best[parity][warp] = best;
                __syncthreads();
                Candidate<D> theirs = warp_best[parity][lane < SAP_WARPS ? lane : 0];
                if (lane >= SAP_WARPS) { theirs.key = ~0ull; theirs.tag = SAP_NO_TAG; }
                best = warp_min(theirs);
            }
            if constexpr (CLUSTER > 1) {
                if (tid == 0) block_best[parity] = best;
                cluster.sync();
                Candidate<D> remote = *cluster.map_shared_rank(&block_best[parity], lane < CLUSTER ? lane : 0);
                if (lane >= CLUSTER) { remote.key = ~0ull; remote.tag = SAP_NO_TAG; }
                best = warp_min(remote);
            }
            parity ^= 1;
            ++steps;
            min_val = SapTraits<D>::value(best.key);
            if (best.tag == SAP_NO_TAG || !(min_val < inf)) {  // every thread sees the same winner
                status = SAP_NO_COLUMN;
                break;
            }
            const int j_star = (int)(best.tag & 0x7fffffffu);
            if ((j_star / THREADS) % CLUSTER == rank && j_star % THREADS == tid)
                scanned[(j_star / (THREADS * CLUSTER)) * THREADS + tid] = 1;
            if (best.row < 0) {
                sink = j_star;
            } else {
                i = best.row;
                u_i = best.u_row;
            }
        }
        if (status != SAP_OK) break;
        ++searches;
        // S3 on this thread's columns; and the scan state reset for the next search.
        for (int s = 0; s < slots; ++s) {
            const int at = s * THREADS + tid;
            if (scanned[at]) {
                v[at] -= min_val - spc[at];
                scanned[at] = 0;
            }
            spc[at] = inf;
        }
        if (rank == 0 && tid == 0) {
            // S4: the walk from the sink back to the root, through the owners' shared memory.
            int j = sink, walked = 0, code = SAP_OK;
            while (true) {
                const int owner = (j / THREADS) % CLUSTER, at = (j / (THREADS * CLUSTER)) * THREADS + j % THREADS;
                const int r = *cluster.map_shared_rank(path + at, owner);
                *cluster.map_shared_rank(row4col + at, owner) = r;
                *cluster.map_shared_rank(pair_cost + at, owner) = source.pair(r, j);
                const int previous = col4row[r];
                col4row[r] = j;
                j = previous;
                if (r == root) break;
                if (++walked > k) { code = SAP_PATH_CAP; break; }
            }
            control = sap_next_search(col4row, k, root, code, began, timeout_ns);
        }
        cluster.sync();
        now = *control0;
        status = now.status;
        // block 0 rewrites control only after the next search's first cluster barrier, by which
        // every thread has read it
    }
    // The duals back, and block 0's account of the run.
    for (int s = 0; s < slots; ++s) {
        const int j = (s * CLUSTER + rank) * THREADS + tid;
        if (j < m) v_global[j] = v[s * THREADS + tid];
    }
    if (rank == 0 && tid == 0) {
        stats[0] = status;
        stats[1] = searches;
        stats[2] = steps;
        stats[3] = (long long)(sap_global_timer_ns() - began);
    }
    cluster.sync();  // no block leaves while another may still read its shared memory
}
