"""The Numba-CUDA rows of the kernel suite: the sum of 2^28 f32 (grid-stride loop, warp
shuffles, shared memory, one atomic per block) and the 2D 5-point stencil with a shared-memory
halo, the same algorithms and launch shapes as the Rust kernels in
ffi-examples/kernels/src/suite. Results are checked against NumPy before timing; times are
CUDA-event medians of 21 launches after 3 warm-ups. Writes "name milliseconds" lines to the
file named by the first argument (bench_suite reads it through GPUKERNEL_NUMBA_RESULTS).

Usage: python3 numba_suite.py RESULTS_FILE
"""

import sys

import numpy as np

# numba-cuda releases before NumPy 2.4 support register an overload for `np.row_stack`, which
# NumPy 2.4 removed (it was an alias of `np.vstack`): restore the alias before importing it.
if not hasattr(np, "row_stack"):
    np.row_stack = np.vstack

from numba import cuda  # noqa: E402

BLOCK = 256
SX, SY = 32, 8
W, H = SX + 2, SY + 2
assert W * H == 340  # the literal size of the stencil's shared tile


@cuda.jit(device=True, inline=True)
def warp_sum(v):
    o = 16
    while o > 0:
        v += cuda.shfl_xor_sync(0xFFFFFFFF, v, o)
        o //= 2
    return v


@cuda.jit
def sum_f32(x, total):
    partial = cuda.shared.array(8, np.float32)
    stride = cuda.gridDim.x * cuda.blockDim.x
    i = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    v = np.float32(0.0)
    while i < x.shape[0]:
        v += x[i]
        i += stride
    v = warp_sum(v)
    lane = cuda.threadIdx.x % 32
    w = cuda.threadIdx.x // 32
    if lane == 0:
        partial[w] = v
    cuda.syncthreads()
    if w == 0:
        v = partial[lane] if lane < 8 else np.float32(0.0)
        v = warp_sum(v)
        if lane == 0:
            cuda.atomic.add(total, 0, v)


@cuda.jit
def stencil5(u, c0, c1, out):
    # A literal size: numba-cuda types a product of module constants (W * H) as int64, not as
    # the integer literal shared.array requires.
    tile = cuda.shared.array(340, np.float32)
    ny, nx = u.shape
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    x0 = cuda.blockIdx.x * SX
    y0 = cuda.blockIdx.y * SY
    k = ty * SX + tx
    while k < W * H:
        ly, lx = k // W, k % W
        gy = min(max(y0 + ly - 1, 0), ny - 1)
        gx = min(max(x0 + lx - 1, 0), nx - 1)
        tile[k] = u[gy, gx]
        k += SX * SY
    cuda.syncthreads()
    x, y = x0 + tx, y0 + ty
    if x < nx and y < ny:
        centre = tile[(ty + 1) * W + tx + 1]
        if x == 0 or y == 0 or x == nx - 1 or y == ny - 1:
            v = centre
        else:
            s = (tile[ty * W + tx + 1] + tile[(ty + 2) * W + tx + 1]) + (
                tile[(ty + 1) * W + tx] + tile[(ty + 1) * W + tx + 2]
            )
            v = c0 * centre + c1 * s
        out[y, x] = v


# Fallbacks for a numba-cuda that rejects a kernel's `cuda.shared.array` (a size it does not
# type as a literal gives "No implementation of function shared.array ... array(int64,
# class(float32))"): the sum with one atomic per warp, the stencil reading its neighbours from
# global memory (L1). The results file names the variant that ran.
@cuda.jit
def sum_f32_noshared(x, total):
    stride = cuda.gridDim.x * cuda.blockDim.x
    i = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    v = np.float32(0.0)
    while i < x.shape[0]:
        v += x[i]
        i += stride
    v = warp_sum(v)
    if cuda.threadIdx.x % 32 == 0:
        cuda.atomic.add(total, 0, v)


@cuda.jit
def stencil5_noshared(u, c0, c1, out):
    ny, nx = u.shape
    x = cuda.blockIdx.x * SX + cuda.threadIdx.x
    y = cuda.blockIdx.y * SY + cuda.threadIdx.y
    if x < nx and y < ny:
        centre = u[y, x]
        if x == 0 or y == 0 or x == nx - 1 or y == ny - 1:
            v = centre
        else:
            s = (u[y - 1, x] + u[y + 1, x]) + (u[y, x - 1] + u[y, x + 1])
            v = c0 * centre + c1 * s
        out[y, x] = v


def first_that_compiles(variants, *launch_args):
    """The first (name, launch) of `variants` whose kernel compiles and runs once."""
    for name, launch in variants:
        try:
            launch(*launch_args)
            cuda.synchronize()
            return name, launch
        except Exception as e:  # numba raises TypingError subclasses and others
            print(f"numba-cuda: {name} variant failed to compile: {str(e).splitlines()[0]}")
    raise RuntimeError("no variant compiled")


def median_ms(launch, trials=21, warmup=3):
    for _ in range(warmup):
        launch()
    cuda.synchronize()
    start, end = cuda.event(), cuda.event()
    times = []
    for _ in range(trials):
        start.record()
        launch()
        end.record()
        end.synchronize()
        times.append(cuda.event_elapsed_time(start, end))
    return sorted(times)[len(times) // 2]


def main():
    out_path = sys.argv[1]
    sms = cuda.get_current_device().MULTIPROCESSOR_COUNT
    rng = np.random.default_rng(1)
    ok = True

    n = 1 << 28
    x = rng.uniform(-1, 1, n).astype(np.float32)
    dx = cuda.to_device(x)
    total = cuda.to_device(np.zeros(1, np.float32))
    grid = sms * 8
    sum_variant, sum_launch = first_that_compiles(
        [
            ("shared", lambda: sum_f32[grid, BLOCK](dx, total)),
            ("warp-atomics", lambda: sum_f32_noshared[grid, BLOCK](dx, total)),
        ]
    )
    total.copy_to_device(np.zeros(1, np.float32))
    sum_launch()
    got, want = float(total.copy_to_host()[0]), float(x.astype(np.float64).sum())
    if abs(got - want) > 1e-3 * max(1.0, abs(want)):
        print(f"WRONG: Numba sum {got} != {want}")
        ok = False
    sum_ms = median_ms(sum_launch)

    nx = ny = 8192
    u = rng.uniform(-1, 1, (ny, nx)).astype(np.float32)
    c0, c1 = np.float32(0.5), np.float32(0.125)
    du, dout = cuda.to_device(u), cuda.device_array_like(u)
    sgrid = ((nx + SX - 1) // SX, (ny + SY - 1) // SY)
    st_variant, st_launch = first_that_compiles(
        [
            ("shared", lambda: stencil5[sgrid, (SX, SY)](du, c0, c1, dout)),
            ("global-reads", lambda: stencil5_noshared[sgrid, (SX, SY)](du, c0, c1, dout)),
        ]
    )
    ref = u.astype(np.float64).copy()
    uu = u.astype(np.float64)
    ref[1:-1, 1:-1] = 0.5 * uu[1:-1, 1:-1] + 0.125 * (
        uu[:-2, 1:-1] + uu[2:, 1:-1] + uu[1:-1, :-2] + uu[1:-1, 2:]
    )
    err = np.abs(dout.copy_to_host() - ref).max() / np.abs(ref).max()
    if not err <= 1e-6:
        print(f"WRONG: Numba stencil relative error {err:.2e}")
        ok = False
    stencil_ms = median_ms(st_launch)

    with open(out_path, "w") as f:
        f.write(f"sum {sum_ms} {sum_variant}\nstencil {stencil_ms} {st_variant}\n")
    print(f"numba-cuda ({sum_variant} sum, {st_variant} stencil): sum 2^28 {sum_ms:.3f} ms ({4 * n / sum_ms / 1e6:.0f} GB/s), "
          f"stencil 8192^2 {stencil_ms:.3f} ms ({8 * nx * ny / stencil_ms / 1e6:.0f} GB/s), "
          f"stencil rel. error {err:.1e}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
