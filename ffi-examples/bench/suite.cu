// The CUDA C twins of the benchmark suite's Rust kernels (ffi-examples/kernels/src/suite):
// the same algorithms, tile shapes and launch configurations, compiled by NVRTC in the
// benchmark's process with its defaults (-O3 device code, --fmad=true, no fast math).
// Intrinsics are spelled where the Rust kernel uses the same instruction (__expf, rsqrtf).

typedef unsigned long long u64;

extern "C" __global__ void saxpy_c(float a, const float* x, float* y, u64 n) {
    u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}

extern "C" __global__ void saxpy_grid_stride_c(float a, const float* x, float* y, u64 n) {
    u64 stride = (u64)gridDim.x * blockDim.x;
    for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        y[i] = a * x[i] + y[i];
}

__device__ __forceinline__ float warp_sum(float v) {
    for (int o = 16; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

extern "C" __global__ void sum_f32_c(const float* x, u64 n, float* total) {
    __shared__ float partial[8];
    u64 stride = (u64)gridDim.x * blockDim.x;
    float v = 0.0f;
    for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) v += x[i];
    v = warp_sum(v);
    unsigned lane = threadIdx.x % 32, w = threadIdx.x / 32;
    if (lane == 0) partial[w] = v;
    __syncthreads();
    if (w == 0) {
        v = warp_sum(lane < 8 ? partial[lane] : 0.0f);
        if (lane == 0) atomicAdd(total, v);
    }
}

extern "C" __global__ void histogram256_c(const unsigned* data, u64 n, unsigned* bins) {
    __shared__ unsigned local[256];
    unsigned t = threadIdx.x;
    local[t] = 0;
    __syncthreads();
    u64 stride = (u64)gridDim.x * blockDim.x;
    for (u64 i = (u64)blockIdx.x * blockDim.x + t; i < n; i += stride) {
        unsigned w = data[i];
        for (int b = 0; b < 4; b++) atomicAdd(&local[(w >> (8 * b)) & 255], 1u);
    }
    __syncthreads();
    unsigned c = local[t];
    if (c != 0) atomicAdd(&bins[t], c);
}

extern "C" __global__ void transpose_c(const float* in, unsigned rows, unsigned cols, float* out) {
    __shared__ float tile[32][33];
    unsigned tx = threadIdx.x, ty = threadIdx.y;
    u64 bx = (u64)blockIdx.x * 32, by = (u64)blockIdx.y * 32;
    for (int j = 0; j < 32; j += 8) {
        u64 r = by + ty + j, c = bx + tx;
        if (r < rows && c < cols) tile[ty + j][tx] = in[r * cols + c];
    }
    __syncthreads();
    for (int j = 0; j < 32; j += 8) {
        u64 r = bx + ty + j, c = by + tx;
        if (r < cols && c < rows) out[r * rows + c] = tile[tx][ty + j];
    }
}

extern "C" __global__ void stencil5_c(const float* u, unsigned nx_, unsigned ny_, float c0, float c1, float* out) {
    const int W = 34, H = 10;
    __shared__ float tile[W * H];
    u64 nx = nx_, ny = ny_;
    unsigned tx = threadIdx.x, ty = threadIdx.y;
    u64 x0 = (u64)blockIdx.x * 32, y0 = (u64)blockIdx.y * 8;
    for (unsigned k = ty * 32 + tx; k < W * H; k += 256) {
        u64 ly = k / W, lx = k % W;
        u64 gy = y0 + ly == 0 ? 0 : y0 + ly - 1; if (gy > ny - 1) gy = ny - 1;
        u64 gx = x0 + lx == 0 ? 0 : x0 + lx - 1; if (gx > nx - 1) gx = nx - 1;
        tile[k] = u[gy * nx + gx];
    }
    __syncthreads();
    u64 x = x0 + tx, y = y0 + ty;
    if (x < nx && y < ny) {
        float centre = tile[(ty + 1) * W + tx + 1];
        float v;
        if (x == 0 || y == 0 || x == nx - 1 || y == ny - 1) {
            v = centre;
        } else {
            float s = (tile[ty * W + tx + 1] + tile[(ty + 2) * W + tx + 1]) +
                      (tile[(ty + 1) * W + tx] + tile[(ty + 1) * W + tx + 2]);
            v = c0 * centre + c1 * s;
        }
        out[y * nx + x] = v;
    }
}

__device__ __forceinline__ void softmax_combine(float& m1, float& s1, float m2, float s2) {
    if (s2 == 0.0f) return;
    if (s1 == 0.0f) { m1 = m2; s1 = s2; return; }
    float m = m1 > m2 ? m1 : m2;
    s1 = s1 * __expf(m1 - m) + s2 * __expf(m2 - m);
    m1 = m;
}

extern "C" __global__ void softmax_rows_c(const float* x, unsigned cols_, float* out) {
    __shared__ float part[16];
    u64 cols = cols_;
    u64 base = (u64)blockIdx.x * cols;
    unsigned t = threadIdx.x;
    float m = __int_as_float(0xff800000), s = 0.0f;
    for (u64 j = t; j < cols; j += 256) {
        float v = x[base + j];
        if (v > m) { s = s * __expf(m - v) + 1.0f; m = v; } else { s += __expf(v - m); }
    }
    for (int o = 16; o > 0; o /= 2) {
        float om = __shfl_xor_sync(0xffffffffu, m, o), os = __shfl_xor_sync(0xffffffffu, s, o);
        softmax_combine(m, s, om, os);
    }
    unsigned lane = t % 32, w = t / 32;
    if (lane == 0) { part[2 * w] = m; part[2 * w + 1] = s; }
    __syncthreads();
    float am = __int_as_float(0xff800000), as = 0.0f;
    for (int k = 0; k < 8; k++) softmax_combine(am, as, part[2 * k], part[2 * k + 1]);
    float inv = 1.0f / as;
    for (u64 j = t; j < cols; j += 256) out[base + j] = __expf(x[base + j] - am) * inv;
}

extern "C" __global__ void nbody_c(const float4* pos, u64 n, float eps2, float4* acc) {
    __shared__ float4 tile[256];
    u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    unsigned t = threadIdx.x;
    float4 me = i < n ? pos[i] : make_float4(0, 0, 0, 0);
    float ax = 0, ay = 0, az = 0;
    for (u64 start = 0; start < n; start += 256) {
        u64 j = start + t;
        tile[t] = j < n ? pos[j] : make_float4(0, 0, 0, 0);
        __syncthreads();
        for (int k = 0; k < 256; k++) {
            float4 p = tile[k];
            float dx = p.x - me.x, dy = p.y - me.y, dz = p.z - me.z;
            float d2 = dx * dx + (dy * dy + (dz * dz + eps2));
            float inv = rsqrtf(d2);
            float s = p.w * (inv * inv * inv);
            ax = dx * s + ax; ay = dy * s + ay; az = dz * s + az;
        }
        __syncthreads();
    }
    if (i < n) acc[i] = make_float4(ax, ay, az, 0.0f);
}

// SGEMM: 128x128 block tile, k step 8, 256 threads of 8x8 outputs (two 4x4 quadrants 64
// apart), A transposed in shared memory, register prefetch of the next tile.
extern "C" __global__ void sgemm_c(const float* a, const float* b, unsigned m_, unsigned n_, unsigned k_, float* c) {
    __shared__ __align__(16) float as[2][8][128];
    __shared__ __align__(16) float bs[2][8][128];
    u64 n = n_, k = k_;
    unsigned tid = threadIdx.x, tx = tid % 16, ty = tid / 16;
    u64 bm = (u64)blockIdx.y * 128, bn = (u64)blockIdx.x * 128;
    unsigned a_row = tid / 2, a_col = (tid % 2) * 4, b_row = tid / 32, b_col = (tid % 32) * 4;
    float acc[8][8] = {};
    float4 na = *(const float4*)&a[(bm + a_row) * k + a_col];
    float4 nb = *(const float4*)&b[(u64)b_row * n + bn + b_col];
    as[0][a_col + 0][a_row] = na.x; as[0][a_col + 1][a_row] = na.y;
    as[0][a_col + 2][a_row] = na.z; as[0][a_col + 3][a_row] = na.w;
    *(float4*)&bs[0][b_row][b_col] = nb;
    __syncthreads();
    u64 tiles = k / 8;
    int buf = 0;
    for (u64 kt = 0; kt < tiles; kt++) {
        bool more = kt + 1 < tiles;
        if (more) {
            u64 k0 = (kt + 1) * 8;
            na = *(const float4*)&a[(bm + a_row) * k + k0 + a_col];
            nb = *(const float4*)&b[(k0 + b_row) * n + bn + b_col];
        }
        for (int kk = 0; kk < 8; kk++) {
            float4 a0 = *(const float4*)&as[buf][kk][ty * 4], a1 = *(const float4*)&as[buf][kk][ty * 4 + 64];
            float4 b0 = *(const float4*)&bs[buf][kk][tx * 4], b1 = *(const float4*)&bs[buf][kk][tx * 4 + 64];
            float av[8] = {a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w};
            float bv[8] = {b0.x, b0.y, b0.z, b0.w, b1.x, b1.y, b1.z, b1.w};
            for (int i = 0; i < 8; i++)
                for (int j = 0; j < 8; j++) acc[i][j] = av[i] * bv[j] + acc[i][j];
        }
        if (more) {
            as[buf ^ 1][a_col + 0][a_row] = na.x; as[buf ^ 1][a_col + 1][a_row] = na.y;
            as[buf ^ 1][a_col + 2][a_row] = na.z; as[buf ^ 1][a_col + 3][a_row] = na.w;
            *(float4*)&bs[buf ^ 1][b_row][b_col] = nb;
            __syncthreads();
            buf ^= 1;
        }
    }
    for (int i = 0; i < 8; i++) {
        u64 r = bm + ty * 4 + (i % 4) + 64 * (i / 4);
        for (int h = 0; h < 2; h++) {
            u64 col = bn + tx * 4 + 64 * h;
            *(float4*)&c[r * n + col] = make_float4(acc[i][4 * h], acc[i][4 * h + 1], acc[i][4 * h + 2], acc[i][4 * h + 3]);
        }
    }
}
