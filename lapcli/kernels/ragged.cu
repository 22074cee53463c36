// Ragged batches on the device (lapcli/cuda/ragged_pack.py launches these; lapcli/ragged.py holds
// their NumPy twins, pack and unpack, which the CPU tests run).
//
// The members are those of the table (kernels/ragged_table.cuh).
// The work stack is (B, R, C), R <= C: member b oriented so that its p = min(rows, cols) rows are
// the short side (a tall member, rows > cols, is transposed), rows p.. R-1 dummy rows of cost 0,
// columns q = max(rows, cols) .. C-1 of its real rows at `forbidden` (+inf for floats, one above
// the largest real cost for integers: an optimal answer never takes one).

// One thread per work entry (grid-stride): the gather of every member into its padded place.
template <typename W>
__global__ void ragged_pack(const long long* __restrict__ table, int B, int R, int C, W forbidden,
                            W* __restrict__ work) {
    const long long total = (long long)B * R * C;
    for (long long at = blockIdx.x * (long long)blockDim.x + threadIdx.x; at < total;
         at += (long long)gridDim.x * blockDim.x) {
        const long long b = at / ((long long)R * C);
        const int x = (int)(at / C % R), y = (int)(at % C);
        const RaggedMember m(table, b);
        W value = (W)0;  // a dummy row
        if (x < m.real()) {
            if (y >= m.wide()) {
                value = forbidden;
            } else {
                const long long r = m.tall() ? y : x, c = m.tall() ? x : y;
                value = reinterpret_cast<const W*>(m.address)[r * m.stride + c];
            }
        }
        work[at] = value;
    }
}

// One thread per work row (b, x) of a member's real rows: the member's column of each of its rows
// into out (B, width), which the caller filled with -1. A tall member's work rows are its columns.
__global__ void ragged_unpack(const long long* __restrict__ col_of_row, const long long* __restrict__ table, int B,
                              int R, int width, long long* __restrict__ out) {
    const long long total = (long long)B * R;
    for (long long at = blockIdx.x * (long long)blockDim.x + threadIdx.x; at < total;
         at += (long long)gridDim.x * blockDim.x) {
        const long long b = at / R;
        const int x = (int)(at % R);
        const RaggedMember m(table, b);
        if (x >= m.real()) continue;
        const long long j = col_of_row[at];
        if (m.tall()) out[b * width + j] = x;
        else out[b * width + x] = j;
    }
}

// One block per member: its assigned rows in order and their columns (DETR's pairs), from
// rows_out[pair_start], cols_out[pair_start] on (min(rows, cols) of them). A block-wide prefix count
// per chunk of blockDim rows: each warp counts its assigned rows with a ballot, thread 0 scans them.
__global__ void ragged_pairs(const long long* __restrict__ out, const long long* __restrict__ table, int width,
                             long long* __restrict__ rows_out, long long* __restrict__ cols_out) {
    __shared__ int warp_base[32];
    __shared__ int chunk_total;
    const long long b = blockIdx.x;
    const RaggedMember m(table, b);
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = (blockDim.x + 31) >> 5;
    int base = 0;
    for (int start = 0; start < m.rows; start += blockDim.x) {
        const int i = start + (int)threadIdx.x;
        const long long j = i < m.rows ? out[b * width + i] : -1;
        const bool assigned = j >= 0;
        const unsigned ballot = __ballot_sync(0xffffffffu, assigned);
        if (lane == 0) warp_base[warp] = __popc(ballot);
        __syncthreads();
        if (threadIdx.x == 0) {
            int running = 0;
            for (int w = 0; w < warps; ++w) { const int count = warp_base[w]; warp_base[w] = running; running += count; }
            chunk_total = running;
        }
        __syncthreads();
        if (assigned) {
            const int at = base + warp_base[warp] + __popc(ballot & ((1u << lane) - 1u));
            if (at < m.real()) {
                rows_out[m.pair_start + at] = i;
                cols_out[m.pair_start + at] = j;
            }
        }
        base += chunk_total;
        __syncthreads();  // warp_base and chunk_total are rewritten by the next chunk
    }
}
