// A ragged batch's table (lapcli/cuda/ragged_pack.py writes it; kernels/ragged.cu and
// kernels/batch_lap.cu read it): TABLE_FIELDS int64 per member b, from table[TABLE_FIELDS * b] on:
// its first element's device byte address, its row stride in elements, rows, cols, where its pairs
// start in lapcli.match's output (the sum of min(rows, cols) before it), and where its rows start
// in a list's flat answer (the sum of rows before it). Members may lie anywhere: in one array (a
// padded stack, a matcher's block) or each in its own (a list of matrices, read in place).
// Oriented, a member is min(rows, cols) x max(rows, cols): a tall one (rows > cols) transposed.
#define TABLE_FIELDS 6

struct RaggedMember {
    long long address, stride, pair_start, row_start;
    int rows, cols;
    __device__ RaggedMember(const long long* __restrict__ table, long long b)
        : address(table[TABLE_FIELDS * b]), stride(table[TABLE_FIELDS * b + 1]),
          pair_start(table[TABLE_FIELDS * b + 4]), row_start(table[TABLE_FIELDS * b + 5]),
          rows((int)table[TABLE_FIELDS * b + 2]), cols((int)table[TABLE_FIELDS * b + 3]) {}
    __device__ bool tall() const { return rows > cols; }
    __device__ int real() const { return rows < cols ? rows : cols; }
    __device__ int wide() const { return rows < cols ? cols : rows; }
};
