// Where a kernel's costs come from: a row of a dense matrix, or a metric between two point sets
// computed when it is needed (the matrix is never stored). kernels/sap.cu, kernels/passes.cu
// and kernels/auction.cu are templated on a source; the launchers put this text in front of theirs.
//
// A source is built from the kernel's first five parameters (first, second, stride, p, sign) and
// offers:
//   load_row(i)  make row i current (a pointer, or the row point's coordinates in registers);
//   at(j)        sign * c(current row, j), in the dual type;
//   pair(i, j)   sign * c(i, j), for any row.
// A point source also lets a kernel hold many rows and a column at once (kernels/sap_rounds.cu):
//   RECORD, record(i, x)   a row's record of RECORD doubles, and its x-th;
//   column(j, y)           column j's DIMENSIONS coordinates into y;
//   cost(record, j, y)     sign * c(that row, j), the same number as pair(i, j).
// BOXES says whether a source also offers
//   box_bound(box)         a lower bound of at(j) for every column point inside an axis-aligned box
//                          (kernels/auction.cu prunes its full scans by tiles of columns with it).
// sign is +1 to minimise, -1 to maximise a point metric (a dense work matrix is already signed).

#pragma once

// A C-contiguous dense matrix: first = the costs, stride = its row length in elements.
template <typename T, typename D>
struct DenseRows {
    const T* __restrict__ cost;
    long long stride;
    const T* __restrict__ row;

    __device__ DenseRows(const void* first, const void*, long long stride_, double, double)
        : cost(static_cast<const T*>(first)), stride(stride_), row(nullptr) {}
    __device__ __forceinline__ void load_row(int i) { row = cost + (long long)i * stride; }
    __device__ __forceinline__ D at(int j) const { return (D)row[j]; }
    __device__ __forceinline__ D pair(int i, int j) const { return (D)cost[(long long)i * stride + j]; }
    static constexpr bool BOXES = false;
    static constexpr int DIMENSIONS = 0;
};

// scipy.spatial.distance.cdist's metrics (the names of lapcli.points.METRICS; cosine takes points
// already scaled to unit length, so that it is 1 - a.b).
#define METRIC_SQEUCLIDEAN 0
#define METRIC_EUCLIDEAN 1
#define METRIC_CITYBLOCK 2
#define METRIC_CHEBYSHEV 3
#define METRIC_MINKOWSKI 4
#define METRIC_COSINE 5

// Two point sets of DIM coordinates (float64): first = the rows' points, row-major (k x DIM);
// second = the columns' points transposed (DIM x stride, stride >= m), so that a warp's 32
// consecutive columns read each coordinate in one coalesced load. The row's point stays in
// registers while its row is scanned: for DIM = 2 a squared distance is three operations on
// registers, cheaper than loading a stored cost.
template <int METRIC, int DIM>
struct Points {
    const double* __restrict__ rows;
    const double* __restrict__ columns_t;
    long long stride;
    double p, sign;
    double here[DIM];

    __device__ Points(const void* first, const void* second, long long stride_, double p_, double sign_)
        : rows(static_cast<const double*>(first)), columns_t(static_cast<const double*>(second)),
          stride(stride_), p(p_), sign(sign_) {}

    __device__ __forceinline__ void load_row(int i) {
#pragma unroll
        for (int c = 0; c < DIM; ++c) here[c] = rows[(long long)i * DIM + c];
    }
    static constexpr int DIMENSIONS = DIM;
    static constexpr int RECORD = DIM;
    static constexpr bool BOXES = METRIC != METRIC_COSINE;  // box_bound() below

    __device__ __forceinline__ double at(int j) const { return sign * metric(here, j); }
    __device__ __forceinline__ double pair(int i, int j) const {
        double point[DIM];
#pragma unroll
        for (int c = 0; c < DIM; ++c) point[c] = rows[(long long)i * DIM + c];
        return sign * metric(point, j);
    }
    __device__ __forceinline__ double record(int i, int x) const { return rows[(long long)i * RECORD + x]; }
    __device__ __forceinline__ void column(int j, double* y) const {
#pragma unroll
        for (int c = 0; c < DIM; ++c) y[c] = columns_t[(long long)c * stride + j];
    }
    __device__ __forceinline__ double cost(const double* x, int, const double* y) const {
        return sign * metric_of(x, y);
    }

    __device__ __forceinline__ double metric(const double* x, int j) const {
        double y[DIM];
        column(j, y);
        return metric_of(x, y);
    }

    // A lower bound of at(j) over every column point y with box[c] <= y[c] <= box[DIM + c]: the
    // metric of the row point's gaps to the box (0 inside it), computed by metric_of's operations.
    // Rounding to nearest is monotone, so |x - y| rounded is at least the gap rounded and each
    // sum, product, fmax and sqrt keeps the order: the bound is at or below the cost at() computes.
    // pow may be off by an ulp or two either way, and the outer pow(total, 1/p) scales the error of
    // the total by 1/p: minkowski's bound is lowered by 2^-40 · max(1, 1/p) of itself
    // (lapcli/points.py, minkowski_margin).
    // Cosine (BOXES false) and maximised costs (sign -1) have none here: -inf, every column scanned.
    __device__ __forceinline__ double box_bound(const double* box) const {
        if (METRIC == METRIC_COSINE || !(sign > 0.0)) return -__longlong_as_double(0x7ff0000000000000LL);
        double gap[DIM], zero[DIM];
#pragma unroll
        for (int c = 0; c < DIM; ++c) {
            gap[c] = fmax(fmax(__dsub_rn(box[c], here[c]), __dsub_rn(here[c], box[DIM + c])), 0.0);
            zero[c] = 0.0;
        }
        const double bound = metric_of(gap, zero);  // gap - 0 is the gap exactly
        return sign * (METRIC == METRIC_MINKOWSKI ? bound - bound * (0x1p-40 * fmax(1.0, 1.0 / p)) : bound);
    }

    // In the coordinates' order, each product and sum rounded on its own (no fused multiply-add):
    // the same numbers as lapcli.points.costs, the NumPy reference the tests compare with.
    __device__ __forceinline__ double metric_of(const double* x, const double* y) const {
        double total = 0.0;
#pragma unroll
        for (int c = 0; c < DIM; ++c) {
            if constexpr (METRIC == METRIC_COSINE) {
                total = __dadd_rn(total, __dmul_rn(x[c], y[c]));
            } else {
                const double diff = __dsub_rn(x[c], y[c]);
                if constexpr (METRIC == METRIC_SQEUCLIDEAN || METRIC == METRIC_EUCLIDEAN)
                    total = __dadd_rn(total, __dmul_rn(diff, diff));
                else if constexpr (METRIC == METRIC_CITYBLOCK) total = __dadd_rn(total, fabs(diff));
                else if constexpr (METRIC == METRIC_CHEBYSHEV) total = fmax(total, fabs(diff));
                else total = __dadd_rn(total, pow(fabs(diff), p));  // METRIC_MINKOWSKI
            }
        }
        if constexpr (METRIC == METRIC_EUCLIDEAN) return sqrt(total);
        else if constexpr (METRIC == METRIC_MINKOWSKI) return pow(total, 1.0 / p);
        else if constexpr (METRIC == METRIC_COSINE) return fmin(2.0, fmax(0.0, 1.0 - total));  // cdist's clamp
        else return total;
    }
};

// Points whose rows may each carry one lowered pair, for the searches that finish a point auction
// (lapcli.engines.cuda.sap_points): first = k records of DIM + 2 float64 (the row's coordinates,
// the column whose cost is replaced or -1, and that signed cost). The hand-over lowers a kept
// row's pair, 2-epsilon or less above its row's minimum of c - v, to that minimum, so that the
// searches start from tight rows (Bertsekas' epsilon-complementary slackness made exact); the
// certificate then reads the true costs.
template <int METRIC, int DIM>
struct LoweredPoints : Points<METRIC, DIM> {
    static constexpr int RECORD = DIM + 2;

    __device__ LoweredPoints(const void* first, const void* second, long long stride_, double p_, double sign_)
        : Points<METRIC, DIM>(first, second, stride_, p_, sign_) {}
    // a record is not a point: a kernel holds rows through record() and cost() only
    void load_row(int) = delete;
    double at(int) const = delete;

    __device__ __forceinline__ double record(int i, int x) const { return this->rows[(long long)i * RECORD + x]; }
    __device__ __forceinline__ double cost(const double* record, int j, const double* y) const {
        return (int)record[DIM] == j ? record[DIM + 1] : this->sign * this->metric_of(record, y);
    }
    __device__ __forceinline__ double pair(int i, int j) const {  // cost()'s number, read from memory
        const double* row = this->rows + (long long)i * RECORD;
        if ((int)row[DIM] == j) return row[DIM + 1];
        double point[DIM];
#pragma unroll
        for (int c = 0; c < DIM; ++c) point[c] = row[c];
        return this->sign * this->metric(point, j);
    }
};
