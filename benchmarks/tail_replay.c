// Replays the searches that finish a point auction (engine cuda-sap) on the CPU, from a start saved
// by benchmarks/save_tail.py, to count what each way of searching would cost the GPU: columns
// settled, hop depth, rounds. 2-D points, sqeuclidean, euclidean or cityblock (the folder's
// metric.txt; sqeuclidean without one), computed as kernels/costs.cuh computes them (each
// operation rounded on its own: build with -ffp-contract=off), the hand-over's lowered pair of a
// row in place of its cost.
//
//   cc -O3 -march=native -ffp-contract=off -o tail_replay benchmarks/tail_replay.c -lm
//   tail_replay DIR single [SEARCHES]          exact Dijkstra searches, one row at a time
//   tail_replay DIR rounds R DELTA [SEARCHES]  the searches in rounds of up to R rows
//                                              (lapcli.twins.round_searches' rules)
//   tail_replay DIR global LIMIT [SEARCHES]    a global price update (each column's distance to
//                                              the nearest free column, v -= it; Goldberg and
//                                              Kennedy) first and after every search that settles
//                                              more than LIMIT columns
//   tail_replay DIR batch K                    K searches at once from one state, each kept where
//                                              its settled columns are disjoint from those kept
//                                              before it (exact: a path through a kept search's
//                                              columns is no shorter than the sink it found)
//   tail_replay DIR sparse K [CHECKED]         exact searches on each row's K columns of least
//                                              c - v at the start, and the row's floor (the least
//                                              c - v of its other columns: duals only fall, so it
//                                              stays a lower bound) as one more heap entry whose
//                                              turn scans the row over every column; the first
//                                              CHECKED searches also run densely, distances compared
// Prints a line a search (or batch) and the objective, which must equal the GPU's.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int n;
static double *ax, *ay, *bx, *by, *v, *lowered_cost;
static int *col4row, *row4col, *lowered_col;
enum { SQEUCLIDEAN, EUCLIDEAN, CITYBLOCK } metric = SQEUCLIDEAN;

static inline double distance(int i, int j) {
    const double dx = ax[i] - bx[j], dy = ay[i] - by[j];
    if (metric == CITYBLOCK) return fabs(dx) + fabs(dy);
    const double squared = dx * dx + dy * dy;
    return metric == EUCLIDEAN ? sqrt(squared) : squared;
}

static inline double cost(int i, int j) { return lowered_col[i] == j ? lowered_cost[i] : distance(i, j); }

static double* read_doubles(const char* dir, const char* name) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE* f = fopen(path, "rb");
    double* p = malloc((size_t)n * sizeof(double));
    if (!f || fread(p, sizeof(double), (size_t)n, f) != (size_t)n) {
        fprintf(stderr, "cannot read %s\n", path);
        exit(1);
    }
    fclose(f);
    return p;
}

static int* as_ints(double* p) {
    int* q = malloc((size_t)n * sizeof(int));
    for (int i = 0; i < n; i++) q[i] = (int)p[i];
    free(p);
    return q;
}

// One search's state: distances, the row each column was reached from, settled flags, hops.
typedef struct {
    double* spc;
    int* path;
    unsigned char* settled;
    int* hops;
    int root, sink;
    double distance;
    long settles;
} Search;

static Search new_search(void) {
    Search s = {malloc((size_t)n * 8), malloc((size_t)n * 4), malloc((size_t)n), malloc((size_t)n * 4), 0, 0, 0, 0};
    return s;
}

// S1-S3 of an exact Dijkstra search from the free row root (u[root] = 0), without changing v.
static void dijkstra(Search* s, int root) {
    s->root = root;
    for (int j = 0; j < n; j++) {
        s->spc[j] = cost(root, j) - v[j];
        s->path[j] = root;
        s->settled[j] = 0;
        s->hops[j] = 1;
    }
    s->settles = 0;
    while (1) {
        int best = -1;
        double d = INFINITY;
        for (int j = 0; j < n; j++)
            if (!s->settled[j] && s->spc[j] < d) d = s->spc[best = j];
        if (best < 0) { fprintf(stderr, "no column left at a finite distance\n"); exit(2); }
        if (row4col[best] < 0) { s->sink = best; s->distance = d; return; }
        s->settled[best] = 1;
        s->settles++;
        const int i = row4col[best];
        const double u = cost(i, best) - v[best];
        for (int j = 0; j < n; j++) {
            if (s->settled[j]) continue;
            const double through = d + fmax(cost(i, j) - v[j] - u, 0.0);
            if (through < s->spc[j]) { s->spc[j] = through; s->path[j] = i; s->hops[j] = s->hops[best] + 1; }
        }
    }
}

// S3's dual update on the columns nearer than the sink, and S4's augmenting walk.
static void apply(const Search* s) {
    for (int j = 0; j < n; j++)
        if (s->spc[j] < s->distance) v[j] -= s->distance - s->spc[j];
    int j = s->sink;
    while (1) {
        const int i = s->path[j], previous = col4row[i];
        row4col[j] = i;
        col4row[i] = j;
        j = previous;
        if (i == s->root) return;
    }
}

static int deepest_settled(const Search* s) {
    int deepest = 0;
    for (int j = 0; j < n; j++)
        if (s->settled[j] && s->hops[j] > deepest) deepest = s->hops[j];
    return deepest;
}

// lapcli.twins.round_searches from root: rounds of up to R pending columns within delta of the
// last round's least pending distance. Returns the rounds; *rows gets the rows scanned.
static long rounds_search(Search* s, int root, int R, double delta, long* rows) {
    const int narrow_above = R, widen_below = R / 4 > 0 ? R / 4 : 1;
    static int* wanted;
    static int* through;
    static double *u, *from;
    if (!wanted) { wanted = malloc((size_t)n * 4); through = malloc((size_t)n * 4); u = malloc((size_t)n * 8); from = malloc((size_t)n * 8); }
    s->root = root;
    for (int j = 0; j < n; j++) { s->spc[j] = cost(root, j) - v[j]; s->path[j] = root; s->settled[j] = 0; }
    long rounds = 1;
    *rows = 1;
    double threshold = -INFINITY;
    while (1) {
        int count = 0, free_best = -1;
        double least = INFINITY, free_distance = INFINITY;
        for (int j = 0; j < n; j++) {
            if (row4col[j] < 0) {
                if (s->spc[j] < free_distance) free_distance = s->spc[free_best = j];
            } else if (!s->settled[j]) {  // settled: scanned since its distance last fell
                if (s->spc[j] < least) least = s->spc[j];
                if (s->spc[j] <= threshold) wanted[count++] = j;
            }
        }
        if (free_distance < least) { s->sink = free_best; s->distance = free_distance; return rounds; }
        if (!isfinite(least)) { fprintf(stderr, "no column left at a finite distance\n"); exit(2); }
        if (threshold > -INFINITY) {
            if (count > narrow_above) delta /= 2;
            else if (count < widen_below) delta = fmin(fmax(2 * delta, 1e-300), 1e300);
        }
        threshold = least + delta;
        const int selected = count < R ? count : R;
        rounds++;
        *rows += selected;
        for (int e = 0; e < selected; e++) {
            const int j = wanted[e];
            s->settled[j] = 1;
            through[e] = row4col[j];
            u[e] = cost(through[e], j) - v[j];
            from[e] = s->spc[j];
        }
        for (int j = 0; j < n; j++) {
            double best = s->spc[j];
            int by_row = -1;
            for (int e = 0; e < selected; e++) {
                const double d = from[e] + fmax(cost(through[e], j) - v[j] - u[e], 0.0);
                if (d < best) { best = d; by_row = through[e]; }
            }
            if (by_row >= 0) { s->spc[j] = best; s->path[j] = by_row; s->settled[j] = 0; }
        }
    }
}

// A global price update: each column's distance to the nearest free column over the reversed
// alternating paths (a column's owner reaches every column), then v -= it. Returns columns settled.
static long global_update(void) {
    static double *distance, *u;
    static unsigned char* settled;
    if (!distance) { distance = malloc((size_t)n * 8); u = malloc((size_t)n * 8); settled = malloc((size_t)n); }
    for (int j = 0; j < n; j++) { distance[j] = row4col[j] < 0 ? 0 : INFINITY; settled[j] = 0; }
    for (int i = 0; i < n; i++)
        if (col4row[i] >= 0) u[i] = cost(i, col4row[i]) - v[col4row[i]];
    long settles = 0;
    double farthest = 0;
    while (1) {
        int k = -1;
        double d = INFINITY;
        for (int j = 0; j < n; j++)
            if (!settled[j] && distance[j] < d) d = distance[k = j];
        if (k < 0) break;
        settled[k] = 1;
        settles++;
        farthest = d;
        for (int i = 0; i < n; i++) {
            const int j = col4row[i];
            if (j < 0 || settled[j]) continue;
            const double through = d + fmax(cost(i, k) - v[k] - u[i], 0.0);
            if (through < distance[j]) distance[j] = through;
        }
    }
    for (int j = 0; j < n; j++) v[j] -= isfinite(distance[j]) ? distance[j] : farthest;
    return settles;
}

// A binary heap of (key, id): id >= 0 a column, id < 0 the floor entry of row -id - 1.
typedef struct { double key; int id; } Entry;
static Entry* heap;
static long heap_size, heap_room;
static void heap_push(double key, int id) {
    if (heap_size == heap_room) heap = realloc(heap, (size_t)(heap_room = 2 * heap_room + 1024) * sizeof(Entry));
    long at = heap_size++;
    while (at > 0 && heap[(at - 1) / 2].key > key) { heap[at] = heap[(at - 1) / 2]; at = (at - 1) / 2; }
    heap[at] = (Entry){key, id};
}
static Entry heap_pop(void) {
    const Entry top = heap[0], last = heap[--heap_size];
    long at = 0;
    while (1) {
        long child = 2 * at + 1;
        if (child >= heap_size) break;
        if (child + 1 < heap_size && heap[child + 1].key < heap[child].key) child++;
        if (heap[child].key >= last.key) break;
        heap[at] = heap[child];
        at = child;
    }
    if (heap_size > 0) heap[at] = last;
    return top;
}

// Each row's K columns of least c - v and its floor (the least c - v of the others), by a bounded
// max-heap over every column: one pass over all n^2 costs.
static int* candidates;
static double* floors;
static void pick_candidates(int K) {
    candidates = malloc((size_t)n * K * sizeof(int));
    floors = malloc((size_t)n * sizeof(double));
    #pragma omp parallel for schedule(dynamic, 64)
    for (int i = 0; i < n; i++) {
        double key[1025] = {0};
        int id[1025];
        int size = 0;  // a max-heap of the K + 1 least
        for (int j = 0; j < n; j++) {
            const double r = cost(i, j) - v[j];
            if (size == K + 1 && r >= key[0]) continue;
            int at;
            if (size < K + 1) {
                at = size++;
                while (at > 0 && key[(at - 1) / 2] < r) { key[at] = key[(at - 1) / 2]; id[at] = id[(at - 1) / 2]; at = (at - 1) / 2; }
            } else {
                at = 0;
                while (1) {
                    int child = 2 * at + 1;
                    if (child >= size) break;
                    if (child + 1 < size && key[child + 1] > key[child]) child++;
                    if (key[child] <= r) break;
                    key[at] = key[child]; id[at] = id[child];
                    at = child;
                }
            }
            key[at] = r;
            id[at] = j;
        }
        int w = 0;
        if (size == K + 1) {  // the (K + 1)-th least: every column outside the K is at or above it
            floors[i] = key[0];
            for (int x = 1; x < size; x++) candidates[(size_t)i * K + w++] = id[x];
        } else {  // n <= K: every column a candidate (the rest of the slots repeat one)
            floors[i] = INFINITY;
            for (int x = 0; x < K; x++) candidates[(size_t)i * K + w++] = id[x < size ? x : 0];
        }
    }
}

// An exact search on the candidates and the floors (see the head); its counts.
static void sparse_search(Search* s, int root, int K, long* relaxed, long* dense) {
    heap_size = 0;
    s->root = root;
    for (int j = 0; j < n; j++) { s->spc[j] = INFINITY; s->settled[j] = 0; }
    s->settles = 0;
    // the root: distances c - v, its floor's entry at its floor
    for (int x = 0; x < K; x++) {
        const int j = candidates[(size_t)root * K + x];
        const double d = cost(root, j) - v[j];
        (*relaxed)++;
        if (d < s->spc[j]) { s->spc[j] = d; s->path[j] = root; heap_push(d, j); }
    }
    heap_push(floors[root], -root - 1);
    static double* from;
    static double* u_of;
    if (!from) { from = malloc((size_t)n * 8); u_of = malloc((size_t)n * 8); }
    from[root] = 0; u_of[root] = 0;
    while (heap_size) {
        const Entry e = heap_pop();
        if (e.id < 0) {  // a row's floor: its other columns may now matter, scan them all
            const int i = -e.id - 1;
            (*dense)++;
            for (int j = 0; j < n; j++) {
                if (s->settled[j]) continue;
                const double d = i == root ? cost(i, j) - v[j] : from[i] + fmax(cost(i, j) - v[j] - u_of[i], 0.0);
                (*relaxed)++;
                if (d < s->spc[j]) { s->spc[j] = d; s->path[j] = i; heap_push(d, j); }
            }
            continue;
        }
        const int j = e.id;
        if (s->settled[j] || e.key != s->spc[j]) continue;  // a stale entry
        if (row4col[j] < 0) { s->sink = j; s->distance = e.key; return; }
        s->settled[j] = 1;
        s->settles++;
        const int i = row4col[j];
        const double u = cost(i, j) - v[j];
        from[i] = e.key; u_of[i] = u;
        for (int x = 0; x < K; x++) {
            const int jj = candidates[(size_t)i * K + x];
            if (s->settled[jj]) continue;
            const double d = e.key + fmax(cost(i, jj) - v[jj] - u, 0.0);
            (*relaxed)++;
            if (d < s->spc[jj]) { s->spc[jj] = d; s->path[jj] = i; heap_push(d, jj); }
        }
        heap_push(e.key + fmax(floors[i] - u, 0.0), -i - 1);
    }
    fprintf(stderr, "no column left at a finite distance\n");
    exit(2);
}

static int next_free_row(int from) {
    for (int i = from; i < n; i++)
        if (col4row[i] < 0) return i;
    return -1;
}

int main(int argc, char** argv) {
    if (argc < 3) { fprintf(stderr, "usage: see the head of tail_replay.c\n"); return 1; }
    const char *dir = argv[1], *mode = argv[2];
    char path[1024];
    snprintf(path, sizeof path, "%s/n.txt", dir);
    FILE* f = fopen(path, "r");
    if (!f || fscanf(f, "%d", &n) != 1) { fprintf(stderr, "cannot read %s\n", path); return 1; }
    fclose(f);
    snprintf(path, sizeof path, "%s/metric.txt", dir);
    if ((f = fopen(path, "r"))) {
        char name[32] = "";
        if (fscanf(f, "%31s", name) != 1) name[0] = 0;
        fclose(f);
        if (!strcmp(name, "euclidean")) metric = EUCLIDEAN;
        else if (!strcmp(name, "cityblock")) metric = CITYBLOCK;
        else if (strcmp(name, "sqeuclidean")) { fprintf(stderr, "metric %s: not replayed\n", name); return 1; }
    }
    ax = read_doubles(dir, "ax"); ay = read_doubles(dir, "ay");
    bx = read_doubles(dir, "bx"); by = read_doubles(dir, "by");
    v = read_doubles(dir, "v");
    lowered_cost = read_doubles(dir, "lowered_cost");
    lowered_col = as_ints(read_doubles(dir, "lowered_col"));
    col4row = as_ints(read_doubles(dir, "col"));
    row4col = malloc((size_t)n * 4);
    for (int j = 0; j < n; j++) row4col[j] = -1;
    int free_rows = 0;
    for (int i = 0; i < n; i++) {
        if (col4row[i] >= 0) row4col[col4row[i]] = i;
        else free_rows++;
    }
    printf("n %d, free rows %d, mode %s, metric %s\n", n, free_rows, mode,
           metric == CITYBLOCK ? "cityblock" : metric == EUCLIDEAN ? "euclidean" : "sqeuclidean");
    long searches = 0, settles = 0;
    Search s = new_search();
    if (!strcmp(mode, "single") || !strcmp(mode, "global")) {
        const int global = !strcmp(mode, "global");
        const long limit = global && argc > 3 ? atol(argv[3]) : 0;
        const long most = argc > 3 + global ? atol(argv[3 + global]) : n;
        if (global) printf("update: %ld columns settled\n", global_update());
        for (int root = next_free_row(0); root >= 0 && searches < most; root = next_free_row(root + 1)) {
            dijkstra(&s, root);
            printf("search %ld (row %d): %ld columns settled, distance %.3e, sink %d hops away, deepest settled %d\n",
                   ++searches, root, s.settles, s.distance, s.hops[s.sink], deepest_settled(&s));
            settles += s.settles;
            apply(&s);
            if (global && s.settles > limit) printf("update: %ld columns settled\n", global_update());
        }
    } else if (!strcmp(mode, "rounds") && argc > 4) {
        const int R = atoi(argv[3]);
        const double delta = atof(argv[4]);
        const long most = argc > 5 ? atol(argv[5]) : n;
        long all_rounds = 0, all_rows = 0;
        for (int root = next_free_row(0); root >= 0 && searches < most; root = next_free_row(root + 1)) {
            long rows;
            const long rounds = rounds_search(&s, root, R, delta, &rows);
            printf("search %ld (row %d): %ld rounds, %ld rows scanned\n", ++searches, root, rounds, rows);
            all_rounds += rounds;
            all_rows += rows;
            apply(&s);
        }
        printf("rounds %ld, rows scanned %ld\n", all_rounds, all_rows);
    } else if (!strcmp(mode, "batch") && argc > 3) {
        const int K = atoi(argv[3]);
        Search* batch = malloc((size_t)K * sizeof(Search));
        for (int x = 0; x < K; x++) batch[x] = new_search();
        unsigned char* taken = malloc((size_t)n);
        int* sinks = malloc((size_t)K * 4);
        long batches = 0;
        while (next_free_row(0) >= 0) {
            int count = 0, kept = 0;
            for (int root = next_free_row(0); root >= 0 && count < K; root = next_free_row(root + 1))
                dijkstra(&batch[count++], root);
            memset(taken, 0, (size_t)n);
            printf("batch %ld: %d searches; kept (columns settled):", ++batches, count);
            for (int x = 0; x < count; x++) {
                int disjoint = 1;
                for (int j = 0; j < n && disjoint; j++) disjoint = !(batch[x].settled[j] && taken[j]);
                for (int y = 0; y < kept && disjoint; y++) disjoint = sinks[y] != batch[x].sink;
                settles += batch[x].settles;
                if (!disjoint) continue;
                for (int j = 0; j < n; j++) taken[j] |= batch[x].settled[j];
                sinks[kept++] = batch[x].sink;
                apply(&batch[x]);  // a kept search's columns are disjoint from the others': its spc stays exact
                printf(" %ld", batch[x].settles);
            }
            searches += count;
            printf("\n");
            fflush(stdout);
        }
    } else if (!strcmp(mode, "sparse") && argc > 3) {
        const int K = atoi(argv[3]);
        const long checked = argc > 4 ? atol(argv[4]) : 0;
        if (K < 1 || K > 1023) { fprintf(stderr, "K from 1 to 1023\n"); return 1; }
        pick_candidates(K);
        Search exact = new_search();
        long all_relaxed = 0, all_dense = 0;
        for (int root = next_free_row(0); root >= 0; root = next_free_row(root + 1)) {
            long relaxed = 0, dense = 0;
            sparse_search(&s, root, K, &relaxed, &dense);
            ++searches;
            if (searches <= checked) {
                dijkstra(&exact, root);
                if (exact.distance != s.distance) {
                    printf("search %ld: sparse distance %.17g, dense %.17g\n", searches, s.distance, exact.distance);
                    return 3;
                }
            }
            printf("search %ld (row %d): %ld columns settled, %ld relaxations, %ld rows scanned densely, distance %.3e%s\n",
                   searches, root, s.settles, relaxed, dense, s.distance, searches <= checked ? " (= dense)" : "");
            fflush(stdout);
            settles += s.settles;
            all_relaxed += relaxed;
            all_dense += dense;
            apply(&s);
        }
        printf("relaxations %ld, rows scanned densely %ld\n", all_relaxed, all_dense);
    } else {
        fprintf(stderr, "unknown mode or missing arguments: see the head of tail_replay.c\n");
        return 1;
    }
    double objective = 0;
    int assigned = 0;
    for (int i = 0; i < n; i++) {
        const int j = col4row[i];
        if (j < 0) continue;
        objective += distance(i, j);
        assigned++;
    }
    printf("searches %ld, columns settled %ld; %d of %d rows assigned, objective %.12f\n", searches, settles, assigned, n, objective);
    return 0;
}
