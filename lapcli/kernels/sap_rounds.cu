// The searches that finish a point auction (lapcli.engines.cuda.sap_points): one k x m problem
// (k <= m, minimise) on a point source of kernels/costs.cuh, over every multiprocessor in one
// cooperative launch (one block each), each search a label-correcting shortest-path computation
// that scans up to ROUND_ROWS rows a round where kernels/sap.cu (whose helpers this file uses: the
// launcher puts costs.cuh and sap.cu in front of it) scans one row a Dijkstra step.
//
// Why: after an auction every reduced cost is within a few epsilon of 0, so a free row's Dijkstra
// search settles tens of thousands of columns one at a time, each step a barrier and one row scan
// (H100, 65,536 points, a cluster of 16 blocks: 7-9 us a step, 15,000-40,000 steps a search).
// Scanning the rows of every column whose distance is within delta of the least pending one, at
// once, settles them in rounds (delta-stepping: Meyer and Sanders, "Delta-stepping: a
// parallelizable shortest path algorithm", J. Algorithms 2003); a column whose distance later falls
// is scanned again, so the distances end exact. A round is compute (its rows against every
// column), so it runs on the whole GPU and pays one grid barrier.
//
// A search from the free row `root` (u[root] = 0, as in kernels/sap.cu):
//   R0  the root's scan: spc[j] = c[root][j] - v[j], path[j] = root.
//   R1  pending: an assigned column reached (spc < inf) and not scanned since its spc last fell.
//       Reduce over the grid: mp = the least pending spc, F = the least spc of a free column
//       (ties: the lowest index). F < mp: that free column is the sink, every spc below F is
//       final (a shorter path would run through a pending column, at mp or more), go to S3.
//   R2  in the same pass as R1, before the grid barrier they share: select the pending columns
//       with spc <= the LAST round's mp + delta (the first ROUND_ROWS of them to take a slot of
//       the round's list), mark them scanned. mp never falls within a search (a clamped
//       relaxation never goes below the column it came from), so the last round's threshold only
//       selects fewer columns than this round's would (NumPy, 4,096 points: 1-2 % more rounds);
//       the round after R0 selects none. After the barrier, delta halves when more than
//       ROUND_NARROW_ABOVE qualified and doubles when fewer than ROUND_WIDEN_BELOW did (every
//       thread computes the same). A warp stops counting once the count passes ROUND_NARROW_ABOVE.
//       H100, 65,536 points: 9.2 us a round, against 10.4 with R2 after R1's barrier and a barrier
//       of its own.
//   R3  the next round scans their rows at once: d = spc[j'] + max((c[i][j] - v[j]) - u[i], 0)
//       for i assigned to the selected column j', u[i] = c[i][j'] - v[j']; where d < spc[j]:
//       spc[j] = d, path[j] = i, j pending again. Go to R1.
//   S3  v[j] -= F - spc[j] for every spc[j] < F (those are exact); S4 the augmenting walk.
// The reduced cost is clamped at 0 and added last, so a column's distance never falls below the
// distance it was reached from (floating point included): the path pointers then form a tree,
// never a cycle, which the Dijkstra order guaranteed by itself. The stop is strict (F < mp) for the
// same reason: a pending column at exactly F may still be on the sink's path.
//
// Layout: column j belongs to block (j / THREADS) % gridDim.x, thread j % THREADS, slot
// j / (THREADS * gridDim.x); its spc, v and flags (scanned, assigned) live in that block's shared
// memory, touched by the owner only. What crosses blocks is in global memory, read with ld.cg (an
// SM's L1 does not see other SMs' writes): path, row4col and the pair costs (S4 walks them, one
// thread), the blocks' R1 winners, R2's list and count, and the control word. The winners and
// the lists alternate between two buffers a round, the counts among three (block 0 clears the
// next round's before this round's barrier; the one it clears was last read two rounds ago).
//
// Statuses as kernels/sap.cu's; SAP_PATH_CAP also where a search runs more than 4m + 64 rounds.
#if !defined(ROUND_ROWS) || !defined(ROUND_NARROW_ABOVE) || !defined(ROUND_WIDEN_BELOW)
#error "compile with the -D options of lapcli.cuda.sap_rounds.kernel_defines()"
#endif

// A selected column's row: its index, the column's spc, the row's u, and the floor of its reduced
// costs (0, or -inf for the root, whose distances are plain c - v).
struct RoundEntry {
    int row;
    double spc;
    double u;
    double floor;
};

// R1's winner: the least pending key and the least (key, column) of a free column.
#define ROUND_BEST_LOADS 4  // the blocks' winners a lane of warp 0 loads at once
struct RoundBest {
    unsigned long long pending;
    unsigned long long free_key;
    unsigned free_tag;
};

__device__ __forceinline__ unsigned long long round_warp_min_key(unsigned long long key) {
    const unsigned hi = (unsigned)(key >> 32), lo = (unsigned)key;
    const unsigned min_hi = __reduce_min_sync(SAP_FULL_MASK, hi);
    const unsigned min_lo = __reduce_min_sync(SAP_FULL_MASK, hi == min_hi ? lo : 0xffffffffu);
    return ((unsigned long long)min_hi << 32) | min_lo;
}

__device__ __forceinline__ RoundBest round_warp_min(RoundBest mine) {
    RoundBest best;
    best.pending = round_warp_min_key(mine.pending);
    best.free_key = round_warp_min_key(mine.free_key);
    best.free_tag = __reduce_min_sync(SAP_FULL_MASK, mine.free_key == best.free_key ? mine.free_tag : SAP_NO_TAG);
    return best;
}

#define ROUND_SCANNED 1
#define ROUND_ASSIGNED 2

// A RoundEntry or RoundBest another block wrote: through L2 (ld.cg), a word at a time.
__device__ __forceinline__ RoundEntry round_load(const RoundEntry* entry) {
    RoundEntry e;
    e.row = __ldcg(&entry->row);
    e.spc = __ldcg(&entry->spc);
    e.u = __ldcg(&entry->u);
    e.floor = __ldcg(&entry->floor);
    return e;
}
__device__ __forceinline__ RoundBest round_load(const RoundBest* best) {
    RoundBest b;
    b.pending = __ldcg(&best->pending);
    b.free_key = __ldcg(&best->free_key);
    b.free_tag = __ldcg(&best->free_tag);
    return b;
}

// first, second, stride, p, sign: the point source; k x m. v (m, in: the start's duals; out: the
// final ones), col4row (k, in: the start's partial assignment, -1 free; out: the assignment).
// Global scratch: path, row4col (m ints), pair_cost (m doubles), bests (2 x gridDim.x), counts (3),
// lists (2 x ROUND_ROWS), control. delta: R2's first width. stats (int64 x 5, out): status,
// searches, rounds, rows scanned, nanoseconds.
template <typename Source>
__global__ void __launch_bounds__(THREADS, 1)
sap_rounds(const void* first, const void* second, long long stride, double p, double sign, int k, int m,
           double* v_global, int* col4row, int* path, int* row4col, double* pair_cost, RoundBest* bests,
           unsigned* counts, RoundEntry* lists, Control* control, double delta, long long timeout_ns,
           long long* stats) {
    constexpr int RECORD = Source::RECORD;
    constexpr int DIM = Source::DIMENSIONS;
    Source source(first, second, stride, p, sign);
    cg::grid_group grid = cg::this_grid();
    const int blocks = (int)gridDim.x, block = (int)blockIdx.x;
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int slots = (m + THREADS * blocks - 1) / (THREADS * blocks);

    extern __shared__ __align__(16) unsigned char sap_shared[];
    double* spc = reinterpret_cast<double*>(sap_shared);
    double* v = spc + slots * THREADS;
    unsigned char* flags = reinterpret_cast<unsigned char*>(v + slots * THREADS);
    __shared__ RoundBest warp_best[SAP_WARPS];
    __shared__ RoundBest round_best;  // R1's result over the grid, from warp 0
    __shared__ RoundEntry entries[ROUND_ROWS];  // the round's rows
    __shared__ double records[ROUND_ROWS * RECORD];

    const double inf = SapTraits<double>::inf();
    const int first_thread = block * THREADS + tid, all_threads = blocks * THREADS;
    for (int j = first_thread; j < m; j += all_threads) row4col[j] = -1;
    grid.sync();
    for (int i = first_thread; i < k; i += all_threads) {
        const int j = col4row[i];
        if (j >= 0) {
            row4col[j] = i;
            pair_cost[j] = source.pair(i, j);
        }
    }
    unsigned long long began = 0;
    if (block == 0 && tid == 0) {
        began = sap_global_timer_ns();
        int root = 0;
        while (root < k && col4row[root] >= 0) ++root;
        control->root = root;
        control->status = SAP_OK;
        counts[0] = counts[1] = counts[2] = 0;
    }
    grid.sync();
    for (int s = 0; s < slots; ++s) {
        const int j = (s * blocks + block) * THREADS + tid, at = s * THREADS + tid;
        spc[at] = inf;
        v[at] = j < m ? v_global[j] : 0.0;
        flags[at] = j < m && __ldcg(row4col + j) >= 0 ? ROUND_ASSIGNED : 0;
    }
    Control now{__ldcg(&control->root), __ldcg(&control->status)};
    long long searches = 0, rounds = 0, rows_scanned = 0;
    long long turn = 0;  // rounds so far: the buffers' index
    int status = SAP_OK;
    const long long round_cap = 4LL * m + 64;
    while (now.status == SAP_OK && now.root < k) {
        const int root = now.root;
        // R0: the root is the first round's only row.
        int count = 1;
        if (tid == 0) entries[0] = RoundEntry{root, 0.0, 0.0, -inf};
        for (int x = tid; x < RECORD; x += THREADS) records[x] = source.record(root, x);
        __syncthreads();
        double sink_distance = 0.0, threshold = -inf;  // the first round selects nothing
        int sink = -1;
        long long search_rounds = 0;
        while (true) {
            // R3 (R0 the first time): this thread's columns against the round's rows.
            double floor_all = inf;  // no entry improves a column already at or below its spc
            for (int e = 0; e < count; ++e) floor_all = fmin(floor_all, entries[e].spc + entries[e].floor);
            for (int s = 0; s < slots; ++s) {
                const int j = (s * blocks + block) * THREADS + tid, at = s * THREADS + tid;
                if (j >= m) continue;
                double best = spc[at];
                if (!(floor_all < best)) continue;
                double y[DIM];
                source.column(j, y);
                const double vj = v[at];
                int best_row = -1;
                for (int e = 0; e < count; ++e) {
                    const RoundEntry entry = entries[e];
                    if (!(entry.spc + entry.floor < best)) continue;
                    const double reduced = (source.cost(records + e * RECORD, j, y) - vj) - entry.u;
                    const double d = entry.spc + fmax(reduced, entry.floor);
                    if (d < best) {
                        best = d;
                        best_row = entry.row;
                    }
                }
                if (best_row >= 0) {
                    spc[at] = best;
                    path[j] = best_row;
                    flags[at] &= ~ROUND_SCANNED;
                }
            }
            rows_scanned += count;
            ++rounds;
            // R1's part in this block over the pending columns as they are, then R2 by the last
            // round's threshold: one grid barrier serves both.
            unsigned* count_now = counts + turn % 3;
            RoundEntry* list_now = lists + (turn & 1) * ROUND_ROWS;
            if (block == 0 && tid == 0) counts[(turn + 1) % 3] = 0;
            RoundBest mine{~0ull, ~0ull, SAP_NO_TAG};
            for (int s = 0; s < slots; ++s) {
                const int j = (s * blocks + block) * THREADS + tid, at = s * THREADS + tid;
                if (j >= m || !(spc[at] < inf)) continue;
                const unsigned long long key = SapTraits<double>::key(spc[at]);
                if (!(flags[at] & ROUND_ASSIGNED)) {
                    if (key < mine.free_key || (key == mine.free_key && (unsigned)j < mine.free_tag)) {
                        mine.free_key = key;
                        mine.free_tag = (unsigned)j;
                    }
                } else if (!(flags[at] & ROUND_SCANNED) && key < mine.pending) {
                    mine.pending = key;
                }
            }
            for (int s = 0; s < slots; ++s) {
                const int j = (s * blocks + block) * THREADS + tid, at = s * THREADS + tid;
                const bool wanted = j < m && flags[at] == ROUND_ASSIGNED && spc[at] <= threshold;
                const unsigned ballot = __ballot_sync(SAP_FULL_MASK, wanted);
                if (!ballot) continue;
                // past a full list a warp adds nothing but contention on the count (one lane reads
                // it, so that the whole warp takes the same branch to the shuffle below)
                unsigned seen = 0;
                if (lane == 0) seen = __ldcg(count_now);
                if (__shfl_sync(SAP_FULL_MASK, seen, 0) > ROUND_NARROW_ABOVE) continue;
                unsigned base = 0;
                if (lane == __ffs(ballot) - 1) base = atomicAdd(count_now, (unsigned)__popc(ballot));
                base = __shfl_sync(SAP_FULL_MASK, base, __ffs(ballot) - 1);
                const unsigned slot = base + __popc(ballot & ((1u << lane) - 1u));
                if (wanted && slot < ROUND_ROWS) {
                    list_now[slot] = RoundEntry{__ldcg(row4col + j), spc[at], __ldcg(pair_cost + j) - v[at], 0.0};
                    flags[at] |= ROUND_SCANNED;
                }
            }
            RoundBest best = round_warp_min(mine);
            if (lane == 0) warp_best[warp] = best;
            __syncthreads();
            RoundBest theirs = warp_best[lane < SAP_WARPS ? lane : 0];
            if (lane >= SAP_WARPS) theirs = RoundBest{~0ull, ~0ull, SAP_NO_TAG};
            best = round_warp_min(theirs);
            if (tid == 0) bests[(turn & 1) * blocks + block] = best;
            grid.sync();
            // Warp 0 reduces all blocks' winners and hands the result to its block. Every warp
            // reading them (the first form) sent 16 times the loads to the same few lines: H100,
            // 65,536 points, 8.8 of a round's 18.5 us. Loads are issued ROUND_BEST_LOADS at a time,
            // before any is compared.
            if (warp == 0) {
                RoundBest all{~0ull, ~0ull, SAP_NO_TAG};
                for (int first_b = 0; first_b < blocks; first_b += 32 * ROUND_BEST_LOADS) {
                    RoundBest got[ROUND_BEST_LOADS];
#pragma unroll
                    for (int x = 0; x < ROUND_BEST_LOADS; ++x) {
                        const int b = first_b + 32 * x + lane;
                        got[x] = b < blocks ? round_load(bests + (turn & 1) * blocks + b) : RoundBest{~0ull, ~0ull, SAP_NO_TAG};
                    }
#pragma unroll
                    for (int x = 0; x < ROUND_BEST_LOADS; ++x) {
                        if (got[x].pending < all.pending) all.pending = got[x].pending;
                        if (got[x].free_key < all.free_key || (got[x].free_key == all.free_key && got[x].free_tag < all.free_tag)) {
                            all.free_key = got[x].free_key;
                            all.free_tag = got[x].free_tag;
                        }
                    }
                }
                all = round_warp_min(all);
                if (lane == 0) round_best = all;
            }
            __syncthreads();
            best = round_best;
            ++turn;  // every exit below included: the next round or search takes fresh buffers
            const double least_pending = best.pending == ~0ull ? inf : SapTraits<double>::value(best.pending);
            if (best.free_tag != SAP_NO_TAG) {
                const double least_free = SapTraits<double>::value(best.free_key);
                if (least_free < least_pending) {
                    sink = (int)best.free_tag;
                    sink_distance = least_free;
                    break;  // the columns this round selected are not scanned: S3 clears their flags
                }
            }
            if (!(least_pending < inf)) {
                status = SAP_NO_COLUMN;
                break;
            }
            if (++search_rounds > round_cap) {
                status = SAP_PATH_CAP;
                break;
            }
            // Every block copies the list and its rows' records: the next round's R3.
            const unsigned qualified = __ldcg(count_now);
            count = (int)min(qualified, (unsigned)ROUND_ROWS);
            for (int e = tid; e < count; e += THREADS) entries[e] = round_load(list_now + e);
            for (int x = tid; x < count * RECORD; x += THREADS)
                records[x] = source.record(__ldcg(&list_now[x / RECORD].row), x % RECORD);
            if (threshold > -inf) {  // the round after R0 selected nothing by design
                if (qualified > ROUND_NARROW_ABOVE) delta *= 0.5;
                else if (qualified < ROUND_WIDEN_BELOW) delta = fmin(fmax(2.0 * delta, 1e-300), 1e300);
            }
            threshold = least_pending + delta;
            __syncthreads();
        }
        if (status != SAP_OK) break;
        ++searches;
        // S3 on this thread's columns, and the state reset for the next search; the sink's owner
        // marks it assigned.
        for (int s = 0; s < slots; ++s) {
            const int j = (s * blocks + block) * THREADS + tid, at = s * THREADS + tid;
            if (spc[at] < sink_distance) v[at] -= sink_distance - spc[at];
            spc[at] = inf;
            flags[at] = (flags[at] & ROUND_ASSIGNED) | (j == sink ? ROUND_ASSIGNED : 0);
        }
        if (block == 0 && tid == 0) {
            // S4: the walk from the sink back to the root (path, row4col and the pair costs are global).
            int j = sink, walked = 0, code = SAP_OK;
            while (true) {
                const int r = __ldcg(path + j);
                row4col[j] = r;
                pair_cost[j] = source.pair(r, j);
                const int previous = col4row[r];
                col4row[r] = j;
                j = previous;
                if (r == root) break;
                if (++walked > k) { code = SAP_PATH_CAP; break; }
            }
            *control = sap_next_search(col4row, k, root, code, began, timeout_ns);
        }
        grid.sync();
        now = Control{__ldcg(&control->root), __ldcg(&control->status)};
        status = now.status;
        // block 0 rewrites control only after the next search's first grid barrier, by which every
        // thread has read it
    }
    for (int s = 0; s < slots; ++s) {
        const int j = (s * blocks + block) * THREADS + tid;
        if (j < m) v_global[j] = v[s * THREADS + tid];
    }
    if (block == 0 && tid == 0) {
        stats[0] = status;
        stats[1] = searches;
        stats[2] = rounds;
        stats[3] = rows_scanned;
        stats[4] = (long long)(sap_global_timer_ns() - began);
    }
}
