// One Jacobi sweep of the 2-D heat equation with fixed (Dirichlet) boundaries: every interior
// cell becomes the mean of its four neighbours, boundary cells are copied. Row-major
// nx x ny grid; the grid of blocks is (ceil(nx / blockDim.x), ny): each block covers
// blockDim.x consecutive cells of one row, so the block size decides both how rows split
// into blocks (a size that does not divide nx leaves idle threads in the last block of
// every row) and how many blocks an SM holds. That is what the autotuner picks at run time.
//
// The sum is grouped as (left + right) + (up + down), exactly as the CPU reference, so the
// results agree bit for bit (there is no multiply-add for the compiler to contract).
extern "C" __global__ void jacobi(const float* __restrict__ src, float* __restrict__ dst,
                                  unsigned int nx, unsigned int ny)
{
    const unsigned int x = blockIdx.x * blockDim.x + threadIdx.x;
    const unsigned int y = blockIdx.y;
    if (x >= nx) return;
    const unsigned long long i = (unsigned long long)y * nx + x;
    if (x == 0 || y == 0 || x == nx - 1 || y == ny - 1) {
        dst[i] = src[i];
        return;
    }
    dst[i] = 0.25f * ((src[i - 1] + src[i + 1]) + (src[i - nx] + src[i + nx]));
}
