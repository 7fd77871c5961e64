// kernels::matmul::tile_order: the order a persistent grid takes C's tiles in: in rows or, where
// a wave of the grid would hold fewer than ROWS_PER_WAVE rows of tiles, in bands of BAND_ROWS rows
// of C, column by column within a band, so that the tiles of one wave share A's rows and B's
// columns in the L2; where C has fewer tiles than the grid has blocks, runs of their k, and where
// the last wave would be part-empty, runs of its tiles (Work).
// Shared by matmul_bf16_specialized.cu and matmul_tc_wgmma.cu.
#pragma once

#define BAND_ROWS 2048u
#define ROWS_PER_WAVE 4u

struct Corner {
    unsigned row, col;
};

// The corner of C's tile-th tile of TBM×TBN over an m×n C, in bands of band_tiles_m rows of tiles
// (one: row order).
template <unsigned TBM, unsigned TBN>
__device__ __forceinline__ Corner banded_corner(unsigned tile, unsigned m, unsigned n, unsigned band_tiles_m) {
    unsigned tiles_m = (m + TBM - 1) / TBM, tiles_n = (n + TBN - 1) / TBN;
    unsigned band = tile / (band_tiles_m * tiles_n), first = band * band_tiles_m;
    unsigned rows = tiles_m - first < band_tiles_m ? tiles_m - first : band_tiles_m;
    unsigned within = tile - band * band_tiles_m * tiles_n;
    return {(first + within % rows) * TBM, within / rows * TBN};
}

// A persistent grid's items (kernels::matmul::tile_order::Work): each tile (in rows, or where
// BANDS and C is wide, in bands) whole, then where the tiles are fewer than the blocks every tile,
// or where the last wave is part-empty and runs are predicted to save an eighth of its time
// (ITEM_STEPS: a run's fill and store, MEETING_STEPS: its meeting with the others, in steps) the
// last wave's tiles, cut into runs of k, run by run. A block walks every gridDim.x-th item from
// its own index.
#define ITEM_STEPS 16u
#define MEETING_STEPS 16u
#define MOST_RUNS 4u
#define CUT_AT_MOST_EIGHTHS 7u

struct Item {
    unsigned tile, row0, col0, run, runs, begin, end;
};

template <unsigned TBM, unsigned TBN, bool BANDS>
struct Work {
    unsigned m, n, tiles, steps, band_tiles_m, blocks, whole, chunk, runs;

    __device__ __forceinline__ Work(unsigned m_, unsigned n_, unsigned steps_, unsigned blocks_)
        : m(m_), n(n_), tiles((m_ + TBM - 1) / TBM * ((n_ + TBN - 1) / TBN)), steps(steps_), blocks(blocks_) {
        unsigned r = 1;
        whole = tiles;
        if (blocks > tiles) {
            whole = 0;
            r = blocks / tiles;
        } else {
            // The last wave's time in steps, whole and its tiles in runs_ runs (each an item that
            // meets the others).
            unsigned last_wave = tiles % blocks;
            unsigned best = (steps + ITEM_STEPS) * CUT_AT_MOST_EIGHTHS / 8;
            if (last_wave > 0)
                for (unsigned runs_ = 2; runs_ <= MOST_RUNS && runs_ <= steps; ++runs_) {
                    unsigned item = (steps + runs_ - 1) / runs_ + ITEM_STEPS + MEETING_STEPS;
                    unsigned time = (last_wave * runs_ + blocks - 1) / blocks * item;
                    if (time < best) {
                        best = time;
                        r = runs_;
                    }
                }
            if (r > 1) whole = tiles - last_wave;
        }
        chunk = (steps + r - 1) / r;
        runs = (steps + chunk - 1) / chunk;
        bool wide = (n + TBN - 1) / TBN * ROWS_PER_WAVE > blocks;
        band_tiles_m = BANDS && wide ? (BAND_ROWS > TBM ? BAND_ROWS / TBM : 1) : 1;
    }

    __device__ __forceinline__ unsigned items() const { return whole + (tiles - whole) * runs; }

    __device__ __forceinline__ Item item(unsigned i) const {
        unsigned tile = i, run = 0, count = 1;
        if (i >= whole) {
            unsigned u = i - whole, cut = tiles - whole;
            tile = whole + u % cut;
            run = u / cut;
            count = runs;
        }
        unsigned begin = run * chunk, end = count == 1 ? steps : (begin + chunk < steps ? begin + chunk : steps);
        Corner corner = banded_corner<TBM, TBN>(tile, m, n, band_tiles_m);
        return {tile, corner.row, corner.col, run, count, begin, end};
    }

    // The first of a cut tile's counters (per_tile of them).
    __device__ __forceinline__ unsigned counter(const Item& item, unsigned per_tile) const {
        return (item.tile - whole) * per_tile;
    }
};
