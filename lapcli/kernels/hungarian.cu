// Classical Hungarian algorithm (Munkres) on the GPU: every step as a device function, run either
// all inside ONE cooperative launch (`hungarian`, the product) or one step per launch from a host
// loop (`step_*` kernels: the stepwise baseline of `lap bench`, as LAP19 and HyLAC run).
//
// Follows LAP19 (Lopes et al. 2019: block-distributed step 4, several augmenting paths per step 5
// through "greens") with the optimizations measured by Kawtikwar et al.:
//   opt0  the compressed zero list lives in per-block segments: a block appends only to its own
//         segment through shared-memory counters, never a global atomicAdd(&zeros_size);
//   opt1  step 6 fuses the dual shift with the update of the zero list;
//   opt2  all steps in one persistent kernel, grid.sync() instead of kernel boundaries;
//   opt3  per-row values (u[i], the row pointer, the running minimum) stay in registers.
// Beyond the papers: slack is never stored. We keep duals u, v and compute
// slack(i, j) = cost[i, j] - u[i] - v[j] on the fly, so step 6 only READS the uncovered rows,
// and the zero list is updated (zeros vanish only in covered x covered, appear only in
// uncovered x uncovered) instead of rebuilt. Step 6 runs a warp per row with 16-byte loads and
// keeps each row's minimum (row_min), so the pass that collects new zeros rescans only rows that
// reach delta. Within a phase (step 3 to step 5) rows are only ever covered and columns only ever
// uncovered, so an uncovered row's minimum after a shift is its old minimum - delta, corrected by
// the columns that step 4 uncovered since (new_cols): only the first step 6 of a phase reads whole
// rows. Same delta, same zeros, same step counts as recomputing everything.
//
// Step 1 is an auction by default (section "step 1 by auction" below): parallel rounds
// of Jonker-Volgenant's augmenting row reduction star ~99 % of the rows with feasible duals before
// the Hungarian phases, which at high cost ranges cuts their dual updates 10-20x; State.auction_rounds
// = 0 runs the classical reductions instead.
//
// The NumPy twin lapcli/engines/numpy_hungarian.py is the readable specification: same steps,
// same array names, and the same choices, so that both take the same steps (the GPU tests assert
// equal step counts). Every choice that threads could race for is a fixed rule instead: in step 2
// row i takes its first free zero from column i on, (j - i) mod k least, and in step 4 its smallest
// available column (both through row_choice in shared memory), a column its smallest claiming row
// (step 2, column_claim), a column's green is its largest
// visiting row (step 5a, atomicMax). Step 4 rounds are synchronous: a round reads the covers as
// they were when it began (a column uncovered in this round carries the round's number in
// uncovered_round), so one round primes exactly the zeros that the twin's round primes.
//
// Types: T is the stored cost (int, long long, float, double); D the dual / slack type (long long
// for integer costs: exact; double for float costs: slack <= eps counts as zero, eps chosen on the
// host, see lapcli/problem.py).
//
// Row ownership: row i belongs to block i % gridDim.x as local row i / gridDim.x. A zero is packed
// in 32 bits as (local_row << column_bits) | column, column_bits = bits of k - 1 (chosen and checked
// on the host: the local rows must fit the other bits, e.g. k = 131,072 on 132 blocks: 17 + 10).

#include <cooperative_groups.h>
namespace cg = cooperative_groups;

// Block size, flag slots and status codes come from the launcher (lapcli.cuda.hungarian_abi.kernel_defines),
// the one place they are defined.
#if !defined(LAP_BLOCK) || !defined(SLOT_COUNT) || !defined(STATUS_PATH_WALK)
#error "compile with the -D options of lapcli.cuda.hungarian_abi.kernel_defines()"
#endif
#define LAP_WARPS (LAP_BLOCK / 32)
constexpr int step6_unroll = 4;  // 16-byte loads in flight per lane in step 6 (warp_row_min)
#define FULL_MASK 0xffffffffu
constexpr int unclaimed = 0x7fffffff;  // an empty row_choice / column_claim entry (atomicMin's identity)

template <typename D> __device__ __forceinline__ D largest();
template <> __device__ __forceinline__ long long largest<long long>() { return 0x7fffffffffffffffLL; }
template <> __device__ __forceinline__ double largest<double>() { return __longlong_as_double(0x7ff0000000000000LL); }
// v_masked[j] on a covered column: makes cost - u - v_masked larger than any real slack, so the
// step-6 loops need no cover test. For integers -2^62 cannot overflow: |cost|, |u| < 2^61.
template <typename D> __device__ __forceinline__ D covered_dual();
template <> __device__ __forceinline__ long long covered_dual<long long>() { return -(1LL << 62); }
template <> __device__ __forceinline__ double covered_dual<double>() { return -largest<double>(); }

// Everything the steps share, laid out by lapcli/cuda/hungarian_abi.py (STATE_POINTERS).
template <typename T, typename D>
struct State {
    const T* cost;
    D* u;
    D* v;
    D* v_masked;         // v[j], or covered_dual() while column j is covered
    D* row_min;          // step 6: min slack of each uncovered row
    D* partial;          // step 1: column minima per block; step 6: minimum per block
    int* new_cols;       // columns uncovered by step 4 since the last step 6 (k entries)
    int* incremental;    // [0] entries in new_cols, [1] row_min is valid for the uncovered rows
    unsigned int* zeros;
    int* zeros_size;     // per block
    int* cover_row;
    int* cover_col;
    int* column_of_star_at_row;
    int* row_of_star_at_column;
    int* column_of_prime_at_row;
    int* row_of_green_at_column;
    int* column_claim;   // step 2: the smallest row that picked column j this pass (or unclaimed)
    int* uncovered_round;  // step 4: the round that uncovered column j in this phase (-1: none)
    int* slots;
    unsigned long long* step_ns;
    int* step_count;
    int* status;
    unsigned long long* bid_of_column;  // step 1 by auction: the largest bid's key (bid_key) for column j
    D* bid_of_row;       // step 1 by auction: free row i's bid this round ...
    int* bid_column_of_row;  // ... and the column it bids for
    long long segment_capacity;
    D eps;
    int k;
    int column_bits;     // a packed zero: (local_row << column_bits) | column
    unsigned long long time_limit_ns;
    long long max_rounds;
    int auction_rounds;    // step 1 by auction: at most this many rounds (0: the classical step 1) ...
    int auction_patience;  // ... and fewer when this many rounds in a row left as many rows free
    int start_only;        // 1: return after step 1 (engine cuda-sap finishes by shortest paths)
};

__device__ __forceinline__ unsigned long long global_timer_ns() {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

__device__ __forceinline__ int load_volatile(const int* p) { return *(const volatile int*)p; }
// An acquire load, as cuda::atomic_ref<int, cuda::thread_scope_device>(*p).load(memory_order_acquire)
// compiles: later loads of this thread cannot be performed before it (PTX memory model). Inline
// PTX keeps NVRTC free of the libcu++ headers.
__device__ __forceinline__ int load_acquire(const int* p) {
    int x;
    asm volatile("ld.acquire.gpu.b32 %0, [%1];" : "=r"(x) : "l"(p) : "memory");
    return x;
}
__device__ __forceinline__ void store_volatile(int* p, int x) { *(volatile int*)p = x; }

// Step-time accounting: thread 0 of block 0 reads %globaltimer right after
// the grid.sync() that ends a step and charges the time since the previous mark to that step.
struct StepClock {
    unsigned long long last, ns[7];
    int count[7];
    __device__ void start() {
        last = global_timer_ns();
        for (int s = 0; s < 7; ++s) { ns[s] = 0; count[s] = 0; }
    }
    __device__ void mark(int step) {
        const unsigned long long now = global_timer_ns();
        ns[step] += now - last;
        count[step] += 1;
        last = now;
    }
};

template <typename D>
struct Shared {
    D scratch_d[LAP_WARPS];
    int scratch_i[LAP_WARPS];
    int warp_offset[LAP_WARPS];
    int zero_count;
    StepClock clock;  // only thread 0 of block 0 touches it; shared keeps it out of registers
    unsigned long long kernel_start;
};

template <typename D>
__device__ __forceinline__ D warp_min(D x) {
    for (int offset = 16; offset > 0; offset >>= 1) x = min(x, __shfl_xor_sync(FULL_MASK, x, offset));
    return x;
}

// Minimum over the block, returned to every thread.
template <typename D>
__device__ D block_min(D x, D* scratch) {
    x = warp_min(x);
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    __syncthreads();  // scratch may still be read from a previous call
    if (lane == 0) scratch[warp] = x;
    __syncthreads();
    return warp_min(lane < LAP_WARPS ? scratch[lane] : largest<D>());
}

__device__ int block_sum(int x, int* scratch) {
    for (int offset = 16; offset > 0; offset >>= 1) x += __shfl_xor_sync(FULL_MASK, x, offset);
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    __syncthreads();
    if (lane == 0) scratch[warp] = x;
    __syncthreads();
    x = lane < LAP_WARPS ? scratch[lane] : 0;
    for (int offset = 16; offset > 0; offset >>= 1) x += __shfl_xor_sync(FULL_MASK, x, offset);
    return x;
}

// Append a zero to this block's segment. All 32 lanes must call it together: one shared atomic
// per warp (ballot + popc) instead of one per zero, which matters when zeros are dense.
__device__ __forceinline__ void append_zero(bool hit, unsigned packed, unsigned* my_zeros, int* count) {
    const unsigned ballot = __ballot_sync(FULL_MASK, hit);
    if (!ballot) return;
    const int lane = threadIdx.x & 31, leader = __ffs(ballot) - 1;
    int base = 0;
    if (lane == leader) base = atomicAdd(count, __popc(ballot));
    base = __shfl_sync(FULL_MASK, base, leader);
    if (hit) my_zeros[base + __popc(ballot & ((1u << lane) - 1))] = packed;
}

__device__ __forceinline__ int owned_rows(int k) { return (k - (int)blockIdx.x + (int)gridDim.x - 1) / (int)gridDim.x; }
__device__ __forceinline__ int row_of_local(int local) { return (int)blockIdx.x + local * (int)gridDim.x; }
template <typename S> __device__ __forceinline__ unsigned pack_zero(const S& s, int local, int j) {
    return ((unsigned)local << s.column_bits) | (unsigned)j;
}
template <typename S> __device__ __forceinline__ int local_of_zero(const S& s, unsigned z) {
    return (int)(z >> s.column_bits);
}
template <typename S> __device__ __forceinline__ int row_of_zero(const S& s, unsigned z) {
    return row_of_local(local_of_zero(s, z));
}
template <typename S> __device__ __forceinline__ int column_of_zero(const S& s, unsigned z) {
    return (int)(z & ((1u << s.column_bits) - 1u));
}
__device__ __forceinline__ int global_tid() { return blockIdx.x * LAP_BLOCK + threadIdx.x; }
__device__ __forceinline__ int global_threads() { return gridDim.x * LAP_BLOCK; }

// One thread clears the slot the next flag-using phase will write. That slot was last read two
// phases ago, before the barrier that ended the previous phase, so nobody still reads it.
__device__ __forceinline__ void clear_next_slot(int* slots, int epoch) {
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        int* next = slots + SLOT_INTS * ((epoch + 1) % SLOT_COUNT);
        for (int s = 0; s < SLOT_INTS; ++s) next[s] = 0;
    }
}

template <typename T> struct Vec16;  // 16 bytes of T: one vector load
template <> struct Vec16<int> { typedef int4 type; };
template <> struct Vec16<float> { typedef float4 type; };
template <> struct Vec16<long long> { typedef longlong2 type; };
template <> struct Vec16<double> { typedef double2 type; };

// Minimum of slack over the row's uncovered columns, by one warp (v_masked hides covered ones).
// 16-byte loads, unrolled, so each lane keeps several loads in flight: with a single 4-byte load
// per thread outstanding, latency caps step 6 far below memory bandwidth.
template <typename T, typename D>
__device__ D warp_row_min(const T* __restrict__ row, const D* v_masked, int k, D ui) {
    const int lane = threadIdx.x & 31;
    constexpr int per_vec = 16 / sizeof(T);
    D m = largest<D>();
    if (k % per_vec == 0) {
        typedef typename Vec16<T>::type V;
        const V* vectors = reinterpret_cast<const V*>(row);
        const int count = k / per_vec;
#pragma unroll step6_unroll
        for (int q = lane; q < count; q += 32) {
            const V x = __ldg(vectors + q);
            const T* values = reinterpret_cast<const T*>(&x);
#pragma unroll
            for (int e = 0; e < per_vec; ++e) m = min(m, (D)values[e] - ui - v_masked[q * per_vec + e]);
        }
    } else {
#pragma unroll 4
        for (int j = lane; j < k; j += 32) m = min(m, (D)__ldg(row + j) - ui - v_masked[j]);
    }
    return warp_min(m);
}

// ================================ the steps ===================================================

// Step 1a: u[i] = min_j cost[i, j] for my rows; partial[block][j] = min over my rows of cost - u.
// Column minima as a reduction over blocks (no atomics).
template <typename T, typename D>
__device__ void step1_rows(const State<T, D>& s, Shared<D>& sh) {
    const int k = s.k, my_rows = owned_rows(k);
    for (int local = 0; local < my_rows; ++local) {
        const T* row = s.cost + (long long)row_of_local(local) * k;
        D m = largest<D>();
        for (int j = threadIdx.x; j < k; j += LAP_BLOCK) m = min(m, (D)row[j]);
        m = block_min(m, sh.scratch_d);
        if (threadIdx.x == 0) s.u[row_of_local(local)] = m;
    }
    __syncthreads();  // u of my rows is read below by this block only
    for (int j = threadIdx.x; j < k; j += LAP_BLOCK) {
        D m = largest<D>();
        for (int local = 0; local < my_rows; ++local) {
            const int i = row_of_local(local);
            m = min(m, (D)s.cost[(long long)i * k + j] - s.u[i]);
        }
        s.partial[(long long)blockIdx.x * k + j] = m;
    }
}

// Step 1b: v[j] = min over blocks of partial[block][j].
template <typename T, typename D>
__device__ void step1_columns(const State<T, D>& s) {
    for (int j = global_tid(); j < s.k; j += global_threads()) {
        D m = largest<D>();
        for (int b = 0; b < (int)gridDim.x; ++b) m = min(m, s.partial[(long long)b * s.k + j]);
        s.v[j] = m;
        s.column_claim[j] = unclaimed;
    }
}

// Step 1c: list the zeros of my rows in my segment.
template <typename T, typename D>
__device__ void step1_zeros(const State<T, D>& s, Shared<D>& sh) {
    const int k = s.k, my_rows = owned_rows(k);
    unsigned* my_zeros = s.zeros + (long long)blockIdx.x * s.segment_capacity;
    if (threadIdx.x == 0) sh.zero_count = 0;
    __syncthreads();
    const int padded = (k + 31) / 32 * 32;  // whole warps take part in append_zero
    for (int local = 0; local < my_rows; ++local) {
        const int i = row_of_local(local);
        const T* row = s.cost + (long long)i * k;
        const D ui = s.u[i];
        for (int j = threadIdx.x; j < padded; j += LAP_BLOCK) {
            const bool hit = j < k && (D)row[j] - ui - s.v[j] <= s.eps;
            append_zero(hit, pack_zero(s, local, j), my_zeros, &sh.zero_count);
        }
    }
    __syncthreads();
    if (threadIdx.x == 0) s.zeros_size[blockIdx.x] = sh.zero_count;
}

// ================================ step 1 by auction ========================================
// Jonker-Volgenant's augmenting row reduction, run as synchronous parallel rounds: an auction with
// bids u2 - u1 (twin: numpy_hungarian.auction_start, the specification of every choice below).
// It replaces step 1's reductions and most of step 2's stars: at high cost ranges the classical
// phases pay one step 6 per new zero, and a few dozen rounds star ~99 % of the rows instead.
// v starts at the column minima; a round is three grid-wide steps:
//   bid    every free row finds its two smallest reduced costs c - v (u1 at j1, u2 at j2; ties
//          to the smaller column) and bids u2 - u1 for j1 (for j2 when the bid is 0 and j1 has a
//          star: JV's rule, so equal costs spread instead of passing a column around); each
//          column keeps its largest bid (atomicMax on the bid's order-preserving bits);
//   claim  a row whose bid equals its column's largest claims the column (the smallest row wins);
//   win    the column lowers v by the winner's bid, stars it and frees its previous row.
// The winner's c - v becomes u2, still its row's minimum (v only decreases), so with u = the row
// minima of c - v afterwards the duals are feasible and every star is tight, as steps 3-6 need.

// The bid as a key that atomicMax orders: a bid is >= 0, and the bits of a non-negative double
// or long long order as unsigned integers; +1 keeps 0 for "no bid".
__device__ __forceinline__ unsigned long long bid_key(long long bid) { return (unsigned long long)bid + 1ull; }
__device__ __forceinline__ unsigned long long bid_key(double bid) {
    return (unsigned long long)__double_as_longlong(bid) + 1ull;
}

// The two smallest reduced costs of a row and their columns, ordered by (value, column).
template <typename D>
struct TwoSmallest {
    D first, second;
    int first_col, second_col;
    // Columns arrive in increasing order within a lane, so a strict "<" keeps the smaller column on a tie.
    __device__ __forceinline__ void offer(D x, int j) {
        if (x < first) { second = first; second_col = first_col; first = x; first_col = j; }
        else if (x < second) { second = x; second_col = j; }
    }
};

template <typename D>
__device__ __forceinline__ bool before(D a, int a_col, D b, int b_col) {
    return a < b || (a == b && a_col < b_col);
}

// Two smallest of c[i, j] - v[j] over the row, by one warp (16-byte loads as in warp_row_min),
// merged across the lanes in (value, column) order; every lane gets the result.
template <typename T, typename D>
__device__ TwoSmallest<D> warp_row_two_smallest(const T* __restrict__ row, const D* v, int k) {
    const int lane = threadIdx.x & 31;
    constexpr int per_vec = 16 / sizeof(T);
    TwoSmallest<D> t{largest<D>(), largest<D>(), k, k};
    if (k % per_vec == 0) {
        typedef typename Vec16<T>::type V;
        const V* vectors = reinterpret_cast<const V*>(row);
        const int count = k / per_vec;
#pragma unroll step6_unroll
        for (int q = lane; q < count; q += 32) {
            const V x = __ldg(vectors + q);
            const T* values = reinterpret_cast<const T*>(&x);
#pragma unroll
            for (int e = 0; e < per_vec; ++e) t.offer((D)values[e] - v[q * per_vec + e], q * per_vec + e);
        }
    } else {
        for (int j = lane; j < k; j += 32) t.offer((D)__ldg(row + j) - v[j], j);
    }
    for (int offset = 16; offset > 0; offset >>= 1) {
        const D o_first = __shfl_xor_sync(FULL_MASK, t.first, offset);
        const D o_second = __shfl_xor_sync(FULL_MASK, t.second, offset);
        const int o_first_col = __shfl_xor_sync(FULL_MASK, t.first_col, offset);
        const int o_second_col = __shfl_xor_sync(FULL_MASK, t.second_col, offset);
        if (before(o_first, o_first_col, t.first, t.first_col)) {  // theirs leads; mine may be second
            if (before(t.first, t.first_col, o_second, o_second_col)) { t.second = t.first; t.second_col = t.first_col; }
            else { t.second = o_second; t.second_col = o_second_col; }
            t.first = o_first; t.first_col = o_first_col;
        } else if (before(o_first, o_first_col, t.second, t.second_col)) {
            t.second = o_first; t.second_col = o_first_col;
        }
    }
    return t;
}

// v[j] = min_i cost[i, j] (JV's column reduction), first half: the minimum over my rows per column.
template <typename T, typename D>
__device__ void auction_column_minima(const State<T, D>& s) {
    const int k = s.k, my_rows = owned_rows(k);
    for (int j = threadIdx.x; j < k; j += LAP_BLOCK) {
        D m = largest<D>();
        for (int local = 0; local < my_rows; ++local) m = min(m, (D)s.cost[(long long)row_of_local(local) * k + j]);
        s.partial[(long long)blockIdx.x * k + j] = m;
    }
}

// A round's bid step: a warp per free row of mine. Also counts the free rows into slot (the
// stopping rule is decided on that count after the barrier; the bids of a round not run are
// left unread).
template <typename T, typename D>
__device__ void auction_bid(const State<T, D>& s, Shared<D>& sh, int* slot) {
    const int k = s.k, my_rows = owned_rows(k), warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    int free_rows = 0;
    for (int local = warp; local < my_rows; local += LAP_WARPS) {
        const int i = row_of_local(local);
        if (s.column_of_star_at_row[i] >= 0) continue;  // warp-uniform
        const TwoSmallest<D> t = warp_row_two_smallest(s.cost + (long long)i * k, s.v, k);
        const D bid = t.second - t.first;
        const int col = (bid == (D)0 && s.row_of_star_at_column[t.first_col] >= 0) ? t.second_col : t.first_col;
        if (lane == 0) {
            ++free_rows;
            s.bid_of_row[i] = bid;
            s.bid_column_of_row[i] = col;
            atomicMax(s.bid_of_column + col, bid_key(bid));
        }
    }
    free_rows = block_sum(free_rows, sh.scratch_i);
    if (threadIdx.x == 0 && free_rows) atomicAdd(slot + SLOT_STARS, free_rows);
}

// A round's claim step: a bid that equals its column's largest claims it; the smallest row wins.
template <typename T, typename D>
__device__ void auction_claim(const State<T, D>& s) {
    for (int i = global_tid(); i < s.k; i += global_threads()) {
        if (s.column_of_star_at_row[i] >= 0) continue;
        const int col = s.bid_column_of_row[i];
        if (bid_key(s.bid_of_row[i]) == s.bid_of_column[col]) atomicMin(s.column_claim + col, i);
    }
}

// A round's win step: each claimed column lowers v by its winner's bid, stars the winner and frees
// its previous row. The winners were free and the freed rows starred when the round began, so no
// two threads write the same row.
template <typename T, typename D>
__device__ void auction_win(const State<T, D>& s) {
    for (int j = global_tid(); j < s.k; j += global_threads()) {
        const int r = s.column_claim[j];
        if (r == unclaimed) continue;
        s.column_claim[j] = unclaimed;
        s.bid_of_column[j] = 0;  // a bid-for column always has a claim, so every bid is cleared here
        const int previous = s.row_of_star_at_column[j];
        if (previous >= 0) s.column_of_star_at_row[previous] = -1;
        s.v[j] -= s.bid_of_row[r];
        s.row_of_star_at_column[j] = r;
        s.column_of_star_at_row[r] = j;
    }
}

// After the rounds: u[i] = min_j c[i, j] - v[j] for my rows, covers on the stars (step 2 then
// stars what it can among the free rows, as after the classical step 1).
template <typename T, typename D>
__device__ void auction_duals(const State<T, D>& s) {
    const int k = s.k, my_rows = owned_rows(k), warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    for (int local = warp; local < my_rows; local += LAP_WARPS) {
        const int i = row_of_local(local);
        const D ui = warp_row_min(s.cost + (long long)i * k, s.v, k, (D)0);
        if (lane == 0) { s.u[i] = ui; s.cover_row[i] = s.column_of_star_at_row[i] >= 0; }
    }
    for (int j = global_tid(); j < k; j += global_threads()) s.cover_col[j] = s.row_of_star_at_column[j] >= 0;
    __syncthreads();  // step1_zeros reads u of my rows
}

// Per-row choices live in shared memory: row_choice[local] for each row of this block (a zero's
// row always belongs to the block whose segment holds it). Every entry is unclaimed between uses.
__device__ __forceinline__ void clear_row_choices(int* row_choice, int k) {
    for (int local = threadIdx.x; local < owned_rows(k); local += LAP_BLOCK) row_choice[local] = unclaimed;
    __syncthreads();
}

// Step 2, one pass, first half: every row i of mine without a star takes, among its free zeros (row
// and column uncovered), the first column from its own index on, (j - i) mod k least, and claims it
// for itself (the smallest row wins). Rows that share many zeros then pick apart: with the smallest
// column instead, every row of a matrix of zeros picked column 0 and a pass starred one row (H200,
// n = 1,024 of the papers' R = 0.001: 1,023 passes, 13.5 ms). Covers change only in the second half,
// after a barrier, so the pass is deterministic. LAP19 §4.2 races atomicExch on the covers instead;
// the rule here is what the twin does (numpy_hungarian.step2_star_zeros).
template <typename T, typename D>
__device__ void step2_pick(const State<T, D>& s, int* row_choice, int* slot) {
    const unsigned* my_zeros = s.zeros + (long long)blockIdx.x * s.segment_capacity;
    const int count = s.zeros_size[blockIdx.x];
    for (int q = threadIdx.x; q < count; q += LAP_BLOCK) {
        const unsigned z = my_zeros[q];
        const int c = column_of_zero(s, z), r = row_of_zero(s, z);
        if (s.cover_row[r] == 0 && s.cover_col[c] == 0) atomicMin(row_choice + local_of_zero(s, z), c - r + (c < r ? s.k : 0));
    }
    __syncthreads();
    for (int local = threadIdx.x; local < owned_rows(s.k); local += LAP_BLOCK) {
        const int offset = row_choice[local];  // (c - r) mod k of the row's choice
        if (offset == unclaimed) continue;
        row_choice[local] = unclaimed;
        const int r = row_of_local(local), c = offset + r - (offset + r >= s.k ? s.k : 0);
        atomicMin(s.column_claim + c, r);
        store_volatile(slot + SLOT_CHANGED, 1);
    }
}

// Step 2, second half: each claimed column stars its claiming row; both become covered.
template <typename T, typename D>
__device__ void step2_star(const State<T, D>& s) {
    for (int j = global_tid(); j < s.k; j += global_threads()) {
        const int r = s.column_claim[j];
        if (r == unclaimed) continue;
        s.column_claim[j] = unclaimed;
        s.cover_row[r] = 1;
        s.cover_col[j] = 1;
        s.column_of_star_at_row[r] = j;
        s.row_of_star_at_column[j] = r;
    }
}

// Step 3: cover the starred columns, count the stars; clear row covers, primes and greens.
template <typename T, typename D>
__device__ void step3_cover(const State<T, D>& s, Shared<D>& sh, int* slot) {
    int starred = 0;
    for (int j = global_tid(); j < s.k; j += global_threads()) {
        const int has_star = s.row_of_star_at_column[j] >= 0;
        s.cover_col[j] = has_star;
        s.v_masked[j] = has_star ? covered_dual<D>() : s.v[j];
        s.cover_row[j] = 0;
        s.column_of_prime_at_row[j] = -1;
        s.row_of_green_at_column[j] = -1;
        s.uncovered_round[j] = -1;
        starred += has_star;
    }
    starred = block_sum(starred, sh.scratch_i);  // a reduction, then one atomic per block
    if (threadIdx.x == 0 && starred) atomicAdd(slot + SLOT_STARS, starred);
    if (global_tid() == 0) { s.incremental[0] = 0; s.incremental[1] = 0; }  // a new phase
}

// Step 4, one round (LAP19 Alg. 4, block-distributed over the zero segments), synchronous: the
// first half offers every uncovered zero to its row, which takes its smallest column; the second
// half primes those zeros. A row with a star is covered and its star's column uncovered (the new
// zeros there count from the next round on); a row without one ends a path (step 5). Rows are
// distinct, so covering one never hides another's zero: some serial order of step 4 primes the
// same zeros (LAP19 App. A).
template <typename T, typename D>
__device__ void step4_round(const State<T, D>& s, int* row_choice, int* slot, int round) {
    const unsigned* my_zeros = s.zeros + (long long)blockIdx.x * s.segment_capacity;
    const int count = s.zeros_size[blockIdx.x];
    for (int q = threadIdx.x; q < count; q += LAP_BLOCK) {
        const unsigned z = my_zeros[q];
        const int c = column_of_zero(s, z);
        // Rows are mine and change only in my second half. A column may be uncovered by another
        // block during this round: the ACQUIRE load pairs with that writer's fence, so a thread
        // that sees the column uncovered also sees the round number written before it.
        if (s.cover_row[row_of_zero(s, z)] == 0 && load_acquire(s.cover_col + c) == 0
            && load_volatile(s.uncovered_round + c) != round)
            atomicMin(row_choice + local_of_zero(s, z), c);
    }
    __syncthreads();
    for (int local = threadIdx.x; local < owned_rows(s.k); local += LAP_BLOCK) {
        const int c = row_choice[local];
        if (c == unclaimed) continue;
        row_choice[local] = unclaimed;
        const int r = row_of_local(local), star_col = s.column_of_star_at_row[r];
        s.column_of_prime_at_row[r] = c;
        if (star_col >= 0) {
            s.cover_row[r] = 1;
            s.v_masked[star_col] = s.v[star_col];
            store_volatile(s.uncovered_round + star_col, round);
            __threadfence();  // the round number before the uncovering (see the first half)
            store_volatile(s.cover_col + star_col, 0);
            // Remember the column for step 6; a full list makes the next step 6 read whole rows.
            const int entry = atomicAdd(s.incremental, 1);
            if (entry < s.k) s.new_cols[entry] = star_col;
            else s.incremental[1] = 0;
            store_volatile(slot + SLOT_CHANGED, 1);
        } else {
            store_volatile(slot + SLOT_PATH, 1);
        }
    }
}

// Step 5a: from every primed row without a star, walk prime -> star in its column -> prime ...
// marking each column's green row. One green per column, the largest row that reaches it (atomicMax,
// so the result does not depend on which walk runs first): a column's green is always a row primed
// in it, so the backward walks of 5b follow vertex-disjoint paths.
// A walk is bounded by k links; one that is longer, or meets a row without a prime, means the
// covers or stars are inconsistent: it stops and reports STATUS_PATH_WALK instead of looping or
// indexing with -1 (the host turns the status into an error; never a hang).
template <typename T, typename D>
__device__ void step5a_greens(const State<T, D>& s) {
    for (int r0 = global_tid(); r0 < s.k; r0 += global_threads()) {
        int c = load_volatile(s.column_of_prime_at_row + r0);
        if (c < 0 || s.column_of_star_at_row[r0] >= 0) continue;
        atomicMax(s.row_of_green_at_column + c, r0);
        int r, links = 0;
        while ((r = s.row_of_star_at_column[c]) >= 0) {
            c = load_volatile(s.column_of_prime_at_row + r);
            if (c < 0 || ++links > s.k) { atomicExch(s.status, STATUS_PATH_WALK); break; }
            atomicMax(s.row_of_green_at_column + c, r);
        }
    }
}

// Step 5b: from every green column without a star (a path's end), walk back along the greens,
// starring the primes and unstarring the stars. Paths are disjoint: no two walks share a row.
template <typename T, typename D>
__device__ void step5b_flip(const State<T, D>& s) {
    for (int j = global_tid(); j < s.k; j += global_threads()) {
        int r = load_volatile(s.row_of_green_at_column + j);
        if (r < 0 || s.row_of_star_at_column[j] >= 0) continue;
        int c = j, links = 0;
        while (true) {
            const int old_star_col = s.column_of_star_at_row[r];
            s.column_of_star_at_row[r] = c;
            s.row_of_star_at_column[c] = r;
            if (old_star_col < 0) break;
            c = old_star_col;
            r = load_volatile(s.row_of_green_at_column + c);
            if (r < 0 || ++links > s.k) { atomicExch(s.status, STATUS_PATH_WALK); break; }
        }
    }
}

// Step 6a: min slack over uncovered rows x uncovered columns. A warp per row of mine; each row's
// minimum is kept (row_min) so that 6b rescans only the rows that reach delta. When row_min is
// still valid from the last step 6 of this phase, only the newly uncovered columns are read.
template <typename T, typename D>
__device__ void step6_min(const State<T, D>& s, Shared<D>& sh) {
    const int k = s.k, my_rows = owned_rows(k), warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const bool incremental = s.incremental[1] != 0;
    const int added = min(s.incremental[0], k);
    D m = largest<D>();
    for (int local = warp; local < my_rows; local += LAP_WARPS) {
        const int i = row_of_local(local);
        if (s.cover_row[i]) continue;  // the same for the whole warp
        const T* row = s.cost + (long long)i * k;
        D r;
        if (incremental) {
            const D ui = s.u[i];
            r = largest<D>();
            for (int q = lane; q < added; q += 32) {
                const int c = s.new_cols[q];
                r = min(r, (D)row[c] - ui - s.v_masked[c]);
            }
            r = min(warp_min(r), s.row_min[i]);
        } else {
            r = warp_row_min(row, s.v_masked, k, s.u[i]);
        }
        if (lane == 0) s.row_min[i] = r;
        m = min(m, r);
    }
    m = block_min(m, sh.scratch_d);
    if (threadIdx.x == 0) s.partial[blockIdx.x] = m;
}

// Step 6b (opt1, fused): delta = min of the block minima (every block computes the same value);
// drop the zeros of covered x covered from my segment, append the new zeros of my uncovered rows,
// shift the duals: u += delta on uncovered rows, v -= delta on covered columns. Other blocks read
// v only on uncovered columns, so the v update needs no barrier of its own.
// Returns false (and does nothing) if delta <= 0, which would loop forever.
template <typename T, typename D>
__device__ bool step6_shift(const State<T, D>& s, Shared<D>& sh) {
    const int k = s.k, my_rows = owned_rows(k), warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    D delta = largest<D>();
    for (int b = threadIdx.x; b < (int)gridDim.x; b += LAP_BLOCK) delta = min(delta, s.partial[b]);
    delta = block_min(delta, sh.scratch_d);
    if (!(delta > (D)0)) return false;

    // Zeros of covered rows x covered columns become delta > 0. Compact my segment in place and in
    // order, a block-wide scan per chunk, so no entry is overwritten before it is read.
    unsigned* my_zeros = s.zeros + (long long)blockIdx.x * s.segment_capacity;
    const int count = s.zeros_size[blockIdx.x];
    int kept_total = 0;
    for (int base = 0; base < count; base += LAP_BLOCK) {
        const int q = base + threadIdx.x;
        unsigned z = 0;
        bool keep = false;
        if (q < count) {
            z = my_zeros[q];
            keep = !(s.cover_row[row_of_zero(s, z)] && s.cover_col[column_of_zero(s, z)]);
        }
        const unsigned ballot = __ballot_sync(FULL_MASK, keep);
        if (lane == 0) sh.scratch_i[warp] = __popc(ballot);
        __syncthreads();
        if (warp == 0) {
            const int mine = lane < LAP_WARPS ? sh.scratch_i[lane] : 0;
            int inclusive = mine;
            for (int offset = 1; offset < 32; offset <<= 1) {
                const int other = __shfl_up_sync(FULL_MASK, inclusive, offset);
                if (lane >= offset) inclusive += other;
            }
            if (lane < LAP_WARPS) sh.warp_offset[lane] = inclusive - mine;
            if (lane == 31) sh.zero_count = inclusive;  // kept in this chunk
        }
        __syncthreads();
        if (keep) my_zeros[kept_total + sh.warp_offset[warp] + __popc(ballot & ((1u << lane) - 1))] = z;
        kept_total += sh.zero_count;
        __syncthreads();  // zero_count and warp_offset are rewritten by the next chunk
    }
    if (threadIdx.x == 0) sh.zero_count = kept_total;
    __syncthreads();

    // Shift my uncovered rows: u += delta, and every uncovered entry of the row drops by delta.
    // Rows whose minimum reaches delta are rescanned for the new zeros (slack - delta <= eps), and
    // their minimum is recomputed from the rescan rather than by subtraction, so float rounding
    // can never leave a stale minimum at or below zero.
    const int padded = (k + 31) / 32 * 32;
    for (int local = warp; local < my_rows; local += LAP_WARPS) {
        const int i = row_of_local(local);
        if (s.cover_row[i]) continue;  // warp-uniform
        const D ui = s.u[i] + delta, old_min = s.row_min[i];
        __syncwarp();  // every lane has read u[i] and row_min[i] before lane 0 rewrites them
        D new_min = old_min - delta;
        if (new_min <= s.eps) {
            const T* row = s.cost + (long long)i * k;
            new_min = largest<D>();
            for (int j = lane; j < padded; j += 32) {
                const D slack = j < k ? (D)row[j] - ui - s.v_masked[j] : largest<D>();
                new_min = min(new_min, slack);
                append_zero(slack <= s.eps, pack_zero(s, local, j), my_zeros, &sh.zero_count);
            }
            new_min = warp_min(new_min);
        }
        if (lane == 0) { s.u[i] = ui; s.row_min[i] = new_min; }
    }
    __syncthreads();
    if (threadIdx.x == 0) s.zeros_size[blockIdx.x] = sh.zero_count;
    // new_cols is consumed (step 6a read it before the barrier); row_min is now valid.
    if (global_tid() == 0) { s.incremental[0] = 0; s.incremental[1] = 1; }
    for (int j = global_tid(); j < k; j += global_threads())
        if (s.cover_col[j]) s.v[j] -= delta;  // v_masked stays covered_dual() there
    return true;
}

// ================================ one cooperative launch ======================================

template <typename T, typename D>
__global__ void __launch_bounds__(LAP_BLOCK, 1) hungarian(const State<T, D>* __restrict__ state) {
    cg::grid_group grid = cg::this_grid();
    const State<T, D>& s = *state;
    __shared__ Shared<D> sh;
    extern __shared__ int row_choice[];  // owned_rows(k) ints: the launch's dynamic shared memory
    const bool clock_thread = blockIdx.x == 0 && threadIdx.x == 0;
    if (clock_thread) { sh.clock.start(); sh.kernel_start = sh.clock.last; }
    int epoch = 0;  // the flag slot in use; the same in every block
    long long rounds = 0;
    int result = STATUS_OK;

    clear_row_choices(row_choice, s.k);
    if (s.auction_rounds > 0 && s.k > 1) {  // step 1 by auction
        auction_column_minima(s);
        grid.sync();
        step1_columns(s);  // v = the column minima; column claims cleared
        grid.sync();
        // The twin's stopping rule: no free row, or the rounds spent, or `patience` rounds in a
        // row without fewer free rows than before. Every block reads the same count.
        int fewest_free = s.k + 1, fewest_at = 0, done = 0;
        while (done < s.auction_rounds) {
            int* slot = s.slots + SLOT_INTS * (epoch % SLOT_COUNT);
            clear_next_slot(s.slots, epoch);
            auction_bid(s, sh, slot);
            grid.sync();
            const int free_rows = load_volatile(slot + SLOT_STARS);
            ++epoch;
            if (free_rows == 0) break;
            if (free_rows < fewest_free) { fewest_free = free_rows; fewest_at = done; }
            else if (done - fewest_at >= s.auction_patience) break;
            ++done;
            auction_claim(s);
            grid.sync();
            auction_win(s);
            grid.sync();
        }
        if (clock_thread) sh.clock.count[0] = done;  // reported as the auction's rounds
        // Engine cuda-sap: v and the stars are its warm start; u, covers and zeros are not needed.
        if (s.start_only) { if (clock_thread) sh.clock.mark(1); goto finish; }
        auction_duals(s);
        step1_zeros(s, sh);
        grid.sync();
    } else {
        step1_rows(s, sh);
        grid.sync();
        step1_columns(s);
        grid.sync();
        step1_zeros(s, sh);
        grid.sync();
    }
    if (clock_thread) sh.clock.mark(1);
    if (s.start_only) goto finish;

    while (true) {
        int* slot = s.slots + SLOT_INTS * (epoch % SLOT_COUNT);
        clear_next_slot(s.slots, epoch);
        step2_pick(s, row_choice, slot);
        grid.sync();
        const bool picked = load_volatile(slot + SLOT_CHANGED) != 0;
        ++epoch;
        if (picked) {
            step2_star(s);
            grid.sync();
        }
        if (clock_thread) sh.clock.mark(2);
        if (!picked) break;
    }

    while (true) {
        {
            int* slot = s.slots + SLOT_INTS * (epoch % SLOT_COUNT);
            clear_next_slot(s.slots, epoch);
            step3_cover(s, sh, slot);
            grid.sync();
            const int stars = load_volatile(slot + SLOT_STARS);
            ++epoch;
            if (clock_thread) sh.clock.mark(3);
            if (stars == s.k) break;
        }
        while (true) {
            int* slot = s.slots + SLOT_INTS * (epoch % SLOT_COUNT);
            clear_next_slot(s.slots, epoch);
            ++rounds;
            // Guards are decided by one thread and read by all after the barrier, so every block
            // leaves at the same point (a block that skipped a grid.sync() would hang the rest).
            if (clock_thread) {
                if (global_timer_ns() - sh.kernel_start > s.time_limit_ns) slot[SLOT_ABORT] = STATUS_TIMEOUT;
                else if (rounds > s.max_rounds) slot[SLOT_ABORT] = STATUS_ITERATION_CAP;
            }
            step4_round(s, row_choice, slot, epoch);
            grid.sync();
            const int abort = load_volatile(slot + SLOT_ABORT);
            const bool path = load_volatile(slot + SLOT_PATH) != 0;
            const bool changed = load_volatile(slot + SLOT_CHANGED) != 0;
            ++epoch;
            if (clock_thread) sh.clock.mark(4);
            if (abort) { result = abort; goto finish; }
            if (path) {
                step5a_greens(s);
                grid.sync();
                step5b_flip(s);
                grid.sync();
                if (clock_thread) sh.clock.mark(5);
                // written (if at all) before the barrier, so every block reads the same value
                const int walk_status = load_volatile(s.status);
                if (walk_status) { result = walk_status; goto finish; }
                break;  // back to step 3
            }
            if (changed) continue;
            step6_min(s, sh);
            grid.sync();
            if (!step6_shift(s, sh)) { result = STATUS_DELTA_NOT_POSITIVE; goto finish; }
            grid.sync();
            if (clock_thread) sh.clock.mark(6);
        }
    }

finish:
    if (clock_thread) {
        for (int i = 0; i < 7; ++i) { s.step_ns[i] = sh.clock.ns[i]; s.step_count[i] = sh.clock.count[i]; }
        *s.status = result;
    }
}

// ================================ one step per launch (baseline) ==============================
// The host loop (cuda_solver.run_stepwise) plays the role of grid.sync(): each kernel boundary is
// a grid-wide barrier, and the host reads the flag slots back after steps 2, 3 and 4.

template <typename T, typename D>
__global__ void __launch_bounds__(LAP_BLOCK, 1) step_1_rows(const State<T, D>* __restrict__ state) {
    __shared__ Shared<D> sh;
    step1_rows(*state, sh);
}
template <typename T, typename D>
__global__ void __launch_bounds__(LAP_BLOCK, 1) step_1_columns(const State<T, D>* __restrict__ state) {
    step1_columns(*state);
}
template <typename T, typename D>
__global__ void __launch_bounds__(LAP_BLOCK, 1) step_1_zeros(const State<T, D>* __restrict__ state) {
    __shared__ Shared<D> sh;
    step1_zeros(*state, sh);
}
template <typename T, typename D>
__global__ void __launch_bounds__(LAP_BLOCK, 1) step_1_auction_columns(const State<T, D>* __restrict__ state) {
    auction_column_minima(*state);
}
template <typename T, typename D>
__global__ void __launch_bounds__(LAP_BLOCK, 1) step_1_bid(const State<T, D>* __restrict__ state, int epoch) {
    __shared__ Shared<D> sh;
    clear_next_slot(state->slots, epoch);
    auction_bid(*state, sh, state->slots + SLOT_INTS * (epoch % SLOT_COUNT));
}
template <typename T, typename D>
__global__ void __launch_bounds__(LAP_BLOCK, 1) step_1_claim(const State<T, D>* __restrict__ state) {
    auction_claim(*state);
}
template <typename T, typename D>
__global__ void __launch_bounds__(LAP_BLOCK, 1) step_1_win(const State<T, D>* __restrict__ state) {
    auction_win(*state);
}
template <typename T, typename D>
__global__ void __launch_bounds__(LAP_BLOCK, 1) step_1_auction_zeros(const State<T, D>* __restrict__ state) {
    __shared__ Shared<D> sh;
    auction_duals(*state);
    step1_zeros(*state, sh);
}
template <typename T, typename D>
__global__ void __launch_bounds__(LAP_BLOCK, 1) step_2_pick(const State<T, D>* __restrict__ state, int epoch) {
    extern __shared__ int row_choice[];
    clear_row_choices(row_choice, state->k);
    clear_next_slot(state->slots, epoch);
    step2_pick(*state, row_choice, state->slots + SLOT_INTS * (epoch % SLOT_COUNT));
}
template <typename T, typename D>
__global__ void __launch_bounds__(LAP_BLOCK, 1) step_2_star(const State<T, D>* __restrict__ state) {
    step2_star(*state);
}
template <typename T, typename D>
__global__ void __launch_bounds__(LAP_BLOCK, 1) step_3(const State<T, D>* __restrict__ state, int epoch) {
    __shared__ Shared<D> sh;
    clear_next_slot(state->slots, epoch);
    step3_cover(*state, sh, state->slots + SLOT_INTS * (epoch % SLOT_COUNT));
}
template <typename T, typename D>
__global__ void __launch_bounds__(LAP_BLOCK, 1) step_4(const State<T, D>* __restrict__ state, int epoch) {
    extern __shared__ int row_choice[];
    clear_row_choices(row_choice, state->k);
    clear_next_slot(state->slots, epoch);
    step4_round(*state, row_choice, state->slots + SLOT_INTS * (epoch % SLOT_COUNT), epoch);
}
template <typename T, typename D>
__global__ void __launch_bounds__(LAP_BLOCK, 1) step_5a(const State<T, D>* __restrict__ state) {
    step5a_greens(*state);
}
template <typename T, typename D>
__global__ void __launch_bounds__(LAP_BLOCK, 1) step_5b(const State<T, D>* __restrict__ state) {
    step5b_flip(*state);
}
template <typename T, typename D>
__global__ void __launch_bounds__(LAP_BLOCK, 1) step_6_min(const State<T, D>* __restrict__ state) {
    __shared__ Shared<D> sh;
    step6_min(*state, sh);
}
template <typename T, typename D>
__global__ void __launch_bounds__(LAP_BLOCK, 1) step_6_shift(const State<T, D>* __restrict__ state) {
    __shared__ Shared<D> sh;
    if (!step6_shift(*state, sh) && blockIdx.x == 0 && threadIdx.x == 0) *state->status = STATUS_DELTA_NOT_POSITIVE;
}

// ================================ the certificate's read pass ==================================
// For a host matrix copied in by the driver (lapcli/cuda/hungarian_host.py): the minimum reduced
// cost of each row, min_j cost[i, j] - u[i] - v[j], a block per row. The host checks these minima
// and the assigned pairs against the tolerance (lapcli/certificate.py); a solve on CuPy arrays
// runs the certificate's own device pass instead.
template <typename T, typename D>
__global__ void __launch_bounds__(LAP_BLOCK) row_min_slack(const T* __restrict__ cost, const D* __restrict__ u,
                                                           const D* __restrict__ v, int k, D* __restrict__ out) {
    __shared__ D scratch[LAP_WARPS];
    for (int i = blockIdx.x; i < k; i += gridDim.x) {
        const T* row = cost + (long long)i * k;
        const D ui = u[i];
        D m = largest<D>();
        for (int j = threadIdx.x; j < k; j += LAP_BLOCK) m = min(m, (D)row[j] - ui - v[j]);
        m = block_min(m, scratch);
        if (threadIdx.x == 0) out[i] = m;
    }
}
