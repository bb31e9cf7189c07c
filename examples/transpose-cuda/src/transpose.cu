// out = transpose(in), where in is rows × cols and out is cols × rows, both row-major:
// out[c * rows + r] = in[r * cols + c].
//
// A block of TILE × BLOCK_ROWS threads moves one TILE × TILE tile through shared memory. It
// reads the tile's rows from `in` (a warp reads consecutive columns: coalesced), and writes
// the tile's columns as rows of `out` (consecutive again: coalesced); the transposition
// happens in shared memory, where reading a column is cheap. Each thread moves
// TILE / BLOCK_ROWS elements each way, and issues all its loads before the first store, so
// that they are in flight together. Tiles that stick out of the matrix (sides that are not
// multiples of TILE) are bounds-checked; the others, a block-uniform test away, are not.
//
// PAD extra elements per tile row change the stride of a column read so that a warp's
// reads fall in different banks: with PAD 0 a column of floats of a 32-wide tile is all in
// one bank (a 32-way conflict). VALUE_T, TILE, BLOCK_ROWS and PAD come from -D defines.

#if TILE % BLOCK_ROWS != 0
#error "BLOCK_ROWS must divide TILE"
#endif

extern "C" __global__ void __launch_bounds__(TILE * BLOCK_ROWS)
transpose(const VALUE_T* __restrict__ in, VALUE_T* __restrict__ out, unsigned rows, unsigned cols)
{
    __shared__ VALUE_T tile[TILE][TILE + PAD];
    // Static shared memory cannot exceed 48 KiB per block: a point over it fails here with a
    // message, rather than in ptxas or at module load.
    static_assert(sizeof(tile) <= 48 * 1024, "the tile exceeds 48 KiB of static shared memory");

    const unsigned tx = threadIdx.x;
    const unsigned ty = threadIdx.y;
    // The tile's first input column (its first output row) and first input row (output column).
    const unsigned col0 = blockIdx.x * TILE;
    const unsigned row0 = blockIdx.y * TILE;

    // Each thread's first element, and the step between its elements, in 64 bits (a matrix
    // may have more than 2^32 elements); the rows are compared in 32 bits.
    const unsigned c = col0 + tx;
    if (c < cols) {
        const VALUE_T* src = in + ((unsigned long long)(row0 + ty) * cols + c);
        const unsigned long long step = (unsigned long long)BLOCK_ROWS * cols;
        VALUE_T v[TILE / BLOCK_ROWS];
        if (row0 + TILE <= rows) {
            // The whole tile is inside (all but the last row of tiles): no checks, which
            // also lets the compiler compute the addresses as steps from one base.
#pragma unroll
            for (unsigned k = 0; k < TILE / BLOCK_ROWS; ++k) {
                v[k] = src[k * step];
            }
        } else {
#pragma unroll
            for (unsigned k = 0; k < TILE / BLOCK_ROWS; ++k) {
                v[k] = row0 + ty + k * BLOCK_ROWS < rows ? src[k * step] : VALUE_T(0);
            }
        }
        // Elements outside the matrix are stored too (as zeros) but never read back: an
        // element of the tile is written out only where its input position is inside.
#pragma unroll
        for (unsigned k = 0; k < TILE / BLOCK_ROWS; ++k) {
            tile[ty + k * BLOCK_ROWS][tx] = v[k];
        }
    }
    __syncthreads();

    const unsigned r = row0 + tx;
    if (r < rows) {
        VALUE_T* dst = out + ((unsigned long long)(col0 + ty) * rows + r);
        const unsigned long long step = (unsigned long long)BLOCK_ROWS * rows;
        if (col0 + TILE <= cols) {
#pragma unroll
            for (unsigned k = 0; k < TILE / BLOCK_ROWS; ++k) {
                dst[k * step] = tile[tx][ty + k * BLOCK_ROWS];
            }
        } else {
#pragma unroll
            for (unsigned k = 0; k < TILE / BLOCK_ROWS; ++k) {
                if (col0 + ty + k * BLOCK_ROWS < cols) dst[k * step] = tile[tx][ty + k * BLOCK_ROWS];
            }
        }
    }
}
