// Classical Hungarian algorithm (Munkres) in ONE cooperative launch.
//
// Follows LAP19 (Lopes et al. 2019, block-distributed step 4, several augmenting paths per step 5
// through "greens") with the optimizations measured by Kawtikwar et al.:
//   opt0  the compressed zero list lives in per-block segments: a block appends only to its own
//         segment with shared-memory counters, never a global atomicAdd(&zeros_size);
//   opt1  step 6 fuses the dual shift with the rebuild of the zero list;
//   opt2  all steps run in one persistent kernel, grid.sync() instead of kernel boundaries;
//   opt3  per-row values (u[i], the row pointer) are held in registers across the row loop.
// And one change beyond the papers (shared/design.md §6): slack is not stored. We keep duals u, v
// and compute slack(i, j) = cost[i, j] - u[i] - v[j] on the fly, so step 6 only *reads* the
// uncovered rows (twice) instead of reading and writing all n² entries, and the zero list is
// updated (zeros vanish only in covered x covered, appear only in uncovered x uncovered) instead
// of rebuilt.
//
// The NumPy twin lapcli/solvers/numpy_hungarian.py is the readable specification: same steps,
// same array names.
//
// Types: T is the stored cost (int, long long, float, double); D is the dual / slack type
// (long long for integer costs: exact; double for float costs: slack <= eps counts as zero, with
// eps chosen on the host, see lapcli/problem.py).
//
// Row ownership: row i belongs to block i % gridDim.x, as local row i / gridDim.x. A zero is packed
// as (local_row << 16) | column, so k <= 65536 (checked on the host).

#include <cooperative_groups.h>
namespace cg = cooperative_groups;

#ifndef LAP_BLOCK
#define LAP_BLOCK 512
#endif
#define LAP_WARPS (LAP_BLOCK / 32)

// Kernel status, read by the host.
#define STATUS_OK 0
#define STATUS_DELTA_NOT_POSITIVE 1
#define STATUS_TIMEOUT 2
#define STATUS_ITERATION_CAP 3

// One flag slot: what a phase's threads report, read by every thread after the grid.sync().
#define SLOT_CHANGED 0   // step 2: a row had to be released / step 4: a row was covered
#define SLOT_PATH 1      // step 4: a primed zero in a row without a star (go to step 5)
#define SLOT_ABORT 2     // step 4: timeout or iteration cap (value = status)
#define SLOT_STARS 3     // step 3: number of starred columns
#define SLOT_INTS 4
#define SLOT_COUNT 3     // rotating slots: a slot is cleared two phases after it was last read

template <typename D> __device__ __forceinline__ D largest();
template <> __device__ __forceinline__ long long largest<long long>() { return 0x7fffffffffffffffLL; }
template <> __device__ __forceinline__ double largest<double>() { return __longlong_as_double(0x7ff0000000000000LL); }

__device__ __forceinline__ unsigned long long global_timer_ns() {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

__device__ __forceinline__ int load_volatile(const int* p) { return *(const volatile int*)p; }
__device__ __forceinline__ void store_volatile(int* p, int x) { *(volatile int*)p = x; }

// Minimum over the block, returned to every thread. `scratch` holds LAP_WARPS values.
template <typename D>
__device__ D block_min(D x, D* scratch) {
    for (int offset = 16; offset > 0; offset >>= 1) x = min(x, __shfl_xor_sync(0xffffffffu, x, offset));
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    __syncthreads();  // scratch may still be read from a previous call
    if (lane == 0) scratch[warp] = x;
    __syncthreads();
    x = lane < LAP_WARPS ? scratch[lane] : largest<D>();
    for (int offset = 16; offset > 0; offset >>= 1) x = min(x, __shfl_xor_sync(0xffffffffu, x, offset));
    return x;
}

__device__ int block_sum(int x, int* scratch) {
    for (int offset = 16; offset > 0; offset >>= 1) x += __shfl_xor_sync(0xffffffffu, x, offset);
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    __syncthreads();
    if (lane == 0) scratch[warp] = x;
    __syncthreads();
    x = lane < LAP_WARPS ? scratch[lane] : 0;
    for (int offset = 16; offset > 0; offset >>= 1) x += __shfl_xor_sync(0xffffffffu, x, offset);
    return x;
}

// Step-time accounting (shared/design.md §5): thread 0 of block 0 reads %globaltimer right after
// the grid.sync() that ends a step and charges the time since the previous mark to that step.
// The accumulators live in shared memory: only that one thread touches them, and keeping them out
// of registers leaves the hot loops their registers.
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

template <typename T, typename D>
__global__ void __launch_bounds__(LAP_BLOCK) hungarian(
    const T* __restrict__ cost, const int k, const D eps,
    D* u, D* v, D* partial,
    unsigned int* zeros, const long long segment_capacity, int* zeros_size,
    int* cover_row, int* cover_col,
    int* column_of_star_at_row, int* row_of_star_at_column,
    int* column_of_prime_at_row, int* row_of_green_at_column,
    int* slots, unsigned long long* step_ns, int* step_count, int* status,
    const unsigned long long time_limit_ns, const long long max_rounds)
{
    cg::grid_group grid = cg::this_grid();
    const int block = blockIdx.x, blocks = gridDim.x, tid = threadIdx.x;
    const int global_tid = block * LAP_BLOCK + tid, global_threads = blocks * LAP_BLOCK;
    const int my_rows = (k - block + blocks - 1) / blocks;  // rows block, block + blocks, ...
    unsigned int* my_zeros = zeros + (long long)block * segment_capacity;
    const bool clock_thread = block == 0 && tid == 0;

    __shared__ D scratch_d[LAP_WARPS];
    __shared__ int scratch_i[LAP_WARPS];
    __shared__ int warp_offset[LAP_WARPS];
    __shared__ int zero_count;

    __shared__ StepClock clock;
    __shared__ unsigned long long kernel_start;
    if (clock_thread) { clock.start(); kernel_start = clock.last; }
    int epoch = 0;  // index of the flag slot in use; uniform across the grid
    long long rounds = 0;
    int result = STATUS_OK;

    // ---------------- Step 1: row minima, column minima, zero list --------------------------
    for (int local = 0; local < my_rows; ++local) {
        const T* row = cost + (long long)(block + local * blocks) * k;
        D m = largest<D>();
        for (int j = tid; j < k; j += LAP_BLOCK) m = min(m, (D)row[j]);
        m = block_min(m, scratch_d);
        if (tid == 0) u[block + local * blocks] = m;
    }
    __syncthreads();  // u of my rows is read below by this block only
    // Column minima as a reduction (no atomics): partial[block][j] over my rows, then over blocks.
    for (int j = tid; j < k; j += LAP_BLOCK) {
        D m = largest<D>();
        for (int local = 0; local < my_rows; ++local) {
            const int i = block + local * blocks;
            m = min(m, (D)cost[(long long)i * k + j] - u[i]);
        }
        partial[(long long)block * k + j] = m;
    }
    grid.sync();
    for (int j = global_tid; j < k; j += global_threads) {
        D m = largest<D>();
        for (int b = 0; b < blocks; ++b) m = min(m, partial[(long long)b * k + j]);
        v[j] = m;
    }
    grid.sync();
    if (tid == 0) zero_count = 0;
    __syncthreads();
    for (int local = 0; local < my_rows; ++local) {
        const int i = block + local * blocks;
        const T* row = cost + (long long)i * k;
        const D ui = u[i];
        for (int j = tid; j < k; j += LAP_BLOCK)
            if ((D)row[j] - ui - v[j] <= eps) my_zeros[atomicAdd(&zero_count, 1)] = ((unsigned)local << 16) | j;
    }
    __syncthreads();
    if (tid == 0) zeros_size[block] = zero_count;
    grid.sync();
    if (clock_thread) clock.mark(1);

    // ---------------- Step 2: star independent zeros ------------------------------------------
    // Each zero tries to take its row, then its column (atomicExch on the covers). Losing the
    // column releases the row; the pass repeats while that happened (each such pass also made a
    // star, so this ends). LAP19 §4.2.
    while (true) {
        int* slot = slots + SLOT_INTS * (epoch % SLOT_COUNT);
        if (clock_thread) {
            int* next = slots + SLOT_INTS * ((epoch + 1) % SLOT_COUNT);
            for (int s = 0; s < SLOT_INTS; ++s) next[s] = 0;
        }
        const int count = zeros_size[block];
        for (int q = tid; q < count; q += LAP_BLOCK) {
            const unsigned z = my_zeros[q];
            const int r = block + (int)(z >> 16) * blocks, c = z & 0xffff;
            if (load_volatile(cover_row + r) == 0 && load_volatile(cover_col + c) == 0) {
                if (atomicExch(cover_row + r, 1) == 0) {
                    if (atomicExch(cover_col + c, 1) == 0) {
                        column_of_star_at_row[r] = c;
                        row_of_star_at_column[c] = r;
                    } else {
                        atomicExch(cover_row + r, 0);
                        store_volatile(slot + SLOT_CHANGED, 1);
                    }
                }
            }
        }
        grid.sync();
        const bool repeat = load_volatile(slot + SLOT_CHANGED) != 0;
        ++epoch;
        if (clock_thread) clock.mark(2);
        if (!repeat) break;
    }

    while (true) {
        // ------------ Step 3: cover starred columns, count stars; reset primes and greens ----
        {
            int* slot = slots + SLOT_INTS * (epoch % SLOT_COUNT);
            if (clock_thread) {
                int* next = slots + SLOT_INTS * ((epoch + 1) % SLOT_COUNT);
                for (int s = 0; s < SLOT_INTS; ++s) next[s] = 0;
            }
            int starred = 0;
            for (int j = global_tid; j < k; j += global_threads) {
                const int has_star = row_of_star_at_column[j] >= 0;
                cover_col[j] = has_star;
                cover_row[j] = 0;
                column_of_prime_at_row[j] = -1;
                row_of_green_at_column[j] = -1;
                starred += has_star;
            }
            starred = block_sum(starred, scratch_i);  // a reduction, then one atomic per block
            if (tid == 0 && starred) atomicAdd(slot + SLOT_STARS, starred);
            grid.sync();
            const int stars = load_volatile(slot + SLOT_STARS);
            ++epoch;
            if (clock_thread) clock.mark(3);
            if (stars == k) break;
        }

        while (true) {
            // -------- Step 4: prime uncovered zeros (LAP19 Alg. 4, block-distributed) -------
            int* slot = slots + SLOT_INTS * (epoch % SLOT_COUNT);
            ++rounds;
            if (clock_thread) {
                int* next = slots + SLOT_INTS * ((epoch + 1) % SLOT_COUNT);
                for (int s = 0; s < SLOT_INTS; ++s) next[s] = 0;
                // Guards, decided by one thread and read by all after the sync, so every block
                // leaves the loop at the same point (no block may skip a grid.sync()).
                if (global_timer_ns() - kernel_start > time_limit_ns) slot[SLOT_ABORT] = STATUS_TIMEOUT;
                else if (rounds > max_rounds) slot[SLOT_ABORT] = STATUS_ITERATION_CAP;
            }
            const int count = zeros_size[block];
            for (int q = tid; q < count; q += LAP_BLOCK) {
                const unsigned z = my_zeros[q];
                const int r = block + (int)(z >> 16) * blocks, c = z & 0xffff;
                // LAP19 App. A: check the column cover before the row cover. A column is only
                // ever uncovered here, so a zero seen with its column uncovered and then its row
                // uncovered was uncovered at one instant: some serial order primes it too.
                if (load_volatile(cover_col + c) == 0 && load_volatile(cover_row + r) == 0) {
                    store_volatile(column_of_prime_at_row + r, c);
                    const int star_col = column_of_star_at_row[r];
                    if (star_col >= 0) {
                        store_volatile(cover_row + r, 1);
                        // The row cover must be visible before the column is uncovered, or a
                        // thread could see the star's column uncovered and the row not yet
                        // covered, and prime a second zero that no serial order allows.
                        __threadfence();
                        store_volatile(cover_col + star_col, 0);
                        store_volatile(slot + SLOT_CHANGED, 1);
                    } else {
                        store_volatile(slot + SLOT_PATH, 1);
                    }
                }
            }
            grid.sync();
            const int abort = load_volatile(slot + SLOT_ABORT);
            const bool path = load_volatile(slot + SLOT_PATH) != 0;
            const bool changed = load_volatile(slot + SLOT_CHANGED) != 0;
            ++epoch;
            if (clock_thread) clock.mark(4);
            if (abort) { result = abort; goto finish; }

            if (path) {
                // ---- Step 5a: walk from every primed row without a star, marking greens ----
                // One green row per column: walks that join overwrite each other's greens, so
                // the backward walks of 5b follow vertex-disjoint paths.
                for (int r0 = global_tid; r0 < k; r0 += global_threads) {
                    int c = load_volatile(column_of_prime_at_row + r0);
                    if (c < 0 || column_of_star_at_row[r0] >= 0) continue;
                    store_volatile(row_of_green_at_column + c, r0);
                    int r;
                    while ((r = row_of_star_at_column[c]) >= 0) {
                        c = load_volatile(column_of_prime_at_row + r);
                        store_volatile(row_of_green_at_column + c, r);
                    }
                }
                grid.sync();
                // ---- Step 5b: from every green column without a star, flip the path ----------
                for (int j = global_tid; j < k; j += global_threads) {
                    int r = load_volatile(row_of_green_at_column + j);
                    if (r < 0 || row_of_star_at_column[j] >= 0) continue;
                    int c = j;
                    while (true) {
                        const int old_star_col = column_of_star_at_row[r];
                        column_of_star_at_row[r] = c;
                        row_of_star_at_column[c] = r;
                        if (old_star_col < 0) break;
                        c = old_star_col;
                        r = load_volatile(row_of_green_at_column + c);
                    }
                }
                grid.sync();
                if (clock_thread) clock.mark(5);
                break;  // back to step 3
            }
            if (changed) continue;

            // -------- Step 6: delta = min slack over uncovered rows x uncovered columns -------
            {
                D m = largest<D>();
                for (int local = 0; local < my_rows; ++local) {
                    const int i = block + local * blocks;
                    if (cover_row[i]) continue;  // same value for the whole block
                    const T* row = cost + (long long)i * k;
                    const D ui = u[i];  // opt3: one load per row, kept in a register
                    for (int j = tid; j < k; j += LAP_BLOCK)
                        if (!cover_col[j]) m = min(m, (D)row[j] - ui - v[j]);
                }
                m = block_min(m, scratch_d);
                if (tid == 0) partial[block] = m;
            }
            grid.sync();
            D delta = largest<D>();
            for (int b = tid; b < blocks; b += LAP_BLOCK) delta = min(delta, partial[b]);
            delta = block_min(delta, scratch_d);  // every block computes the same delta
            if (!(delta > (D)0)) { result = STATUS_DELTA_NOT_POSITIVE; goto finish; }

            // Zeros in covered rows x covered columns become delta > 0: drop them from my segment
            // (in place, in order, a block-wide scan per chunk so no entry is overwritten unread).
            {
                const int count = zeros_size[block];
                const int warp = tid >> 5, lane = tid & 31;
                int kept_total = 0;
                for (int base = 0; base < count; base += LAP_BLOCK) {
                    const int q = base + tid;
                    unsigned z = 0;
                    bool keep = false;
                    if (q < count) {
                        z = my_zeros[q];
                        const int r = block + (int)(z >> 16) * blocks, c = z & 0xffff;
                        keep = !(cover_row[r] && cover_col[c]);
                    }
                    const unsigned ballot = __ballot_sync(0xffffffffu, keep);
                    if (lane == 0) scratch_i[warp] = __popc(ballot);
                    __syncthreads();
                    if (warp == 0) {
                        const int mine = lane < LAP_WARPS ? scratch_i[lane] : 0;
                        int inclusive = mine;
                        for (int offset = 1; offset < 32; offset <<= 1) {
                            const int other = __shfl_up_sync(0xffffffffu, inclusive, offset);
                            if (lane >= offset) inclusive += other;
                        }
                        if (lane < LAP_WARPS) warp_offset[lane] = inclusive - mine;
                        if (lane == 31) zero_count = inclusive;  // kept in this chunk
                    }
                    __syncthreads();
                    if (keep)
                        my_zeros[kept_total + warp_offset[warp] + __popc(ballot & ((1u << lane) - 1))] = z;
                    kept_total += zero_count;
                    __syncthreads();  // zero_count and warp_offset are rewritten next chunk
                }
                if (tid == 0) zero_count = kept_total;
                __syncthreads();
            }
            // opt1: the same pass that finds new zeros (slack - delta <= eps on uncovered rows x
            // uncovered columns) appends them; then the duals shift: u += delta on uncovered rows,
            // v -= delta on covered columns. Other blocks read v only on uncovered columns, so
            // the v update needs no extra grid.sync().
            for (int local = 0; local < my_rows; ++local) {
                const int i = block + local * blocks;
                if (cover_row[i]) continue;
                const T* row = cost + (long long)i * k;
                const D ui = u[i] + delta;
                for (int j = tid; j < k; j += LAP_BLOCK)
                    if (!cover_col[j] && (D)row[j] - ui - v[j] <= eps)
                        my_zeros[atomicAdd(&zero_count, 1)] = ((unsigned)local << 16) | j;
            }
            __syncthreads();
            if (tid == 0) zeros_size[block] = zero_count;
            for (int local = tid; local < my_rows; local += LAP_BLOCK) {
                const int i = block + local * blocks;
                if (!cover_row[i]) u[i] += delta;
            }
            for (int j = global_tid; j < k; j += global_threads)
                if (cover_col[j]) v[j] -= delta;
            grid.sync();
            if (clock_thread) clock.mark(6);
        }
    }

finish:
    if (clock_thread) {
        for (int s = 0; s < 7; ++s) { step_ns[s] = clock.ns[s]; step_count[s] = clock.count[s]; }
        *status = result;
    }
}
