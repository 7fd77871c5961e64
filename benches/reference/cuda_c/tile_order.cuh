// kernels::matmul::tile_order: the order a persistent grid takes C's tiles in: in rows or, where
// a wave of the grid would hold fewer than ROWS_PER_WAVE rows of tiles, in bands of BAND_ROWS rows
// of C, column by column within a band, so that the tiles of one wave share A's rows and B's
// columns in the L2; where C has fewer tiles than the grid has blocks, runs of their k (Work).
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
// BANDS and C is wide, in bands) and run of k, run by run; as many runs per tile as the grid has
// blocks per tile, none empty.
template <unsigned TBM, unsigned TBN, bool BANDS>
struct Work {
    unsigned m, n, tiles, steps, chunk, runs, band_tiles_m;

    __device__ __forceinline__ Work(unsigned m_, unsigned n_, unsigned steps_, unsigned blocks)
        : m(m_), n(n_), tiles((m_ + TBM - 1) / TBM * ((n_ + TBN - 1) / TBN)), steps(steps_) {
        unsigned asked = blocks > tiles ? blocks / tiles : 1;
        chunk = (steps + asked - 1) / asked;
        runs = (steps + chunk - 1) / chunk;
        bool wide = (n + TBN - 1) / TBN * ROWS_PER_WAVE > blocks;
        band_tiles_m = BANDS && wide ? (BAND_ROWS > TBM ? BAND_ROWS / TBM : 1) : 1;
    }

    __device__ __forceinline__ unsigned items() const { return tiles * runs; }
};

struct Item {
    unsigned tile, row0, col0, run, begin, end;
};

template <unsigned TBM, unsigned TBN, bool BANDS>
__device__ __forceinline__ Item item_of(const Work<TBM, TBN, BANDS>& work, unsigned i) {
    unsigned tile = i % work.tiles, run = i / work.tiles, begin = run * work.chunk;
    Corner corner = banded_corner<TBM, TBN>(tile, work.m, work.n, work.band_tiles_m);
    unsigned end = begin + work.chunk < work.steps ? begin + work.chunk : work.steps;
    return {tile, corner.row, corner.col, run, begin, end};
}
