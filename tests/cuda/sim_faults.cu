// Foreign device functions for the simulator's fault tests (tests/sim_faults.rs): compiled
// for the host by this crate's build script, called from the kernels in src/sim_faults.rs.
// Each follows the foreign ABI: extern "C" __device__ int f(T* ret, args...), 0 = success.

// Counts its live instances: a frame the simulator discards without unwinding never runs
// the destructor of the one it holds.
struct Tracked {
    static int live;
    Tracked() { __atomic_fetch_add(&live, 1, __ATOMIC_RELAXED); }
    ~Tracked() { __atomic_fetch_sub(&live, 1, __ATOMIC_RELAXED); }
};
int Tracked::live = 0;

// Waits at the block's barrier (holding a Tracked), then returns `v + 1`.
extern "C" __device__ int barrier_then_add_one(unsigned* ret, unsigned v) {
    Tracked held;
    __syncthreads();
    *ret = v + 1;
    return 0;
}

// A warp shuffle whose mask leaves out the calling lane: undefined on the GPU, an error
// naming the thread in the simulator.
extern "C" __device__ int shuffle_without_self(unsigned* ret, unsigned v) {
    unsigned lane = threadIdx.x % 32;
    *ret = __shfl_sync(~(1u << lane), v, 0);
    return 0;
}

// The number of Tracked objects alive (objects whose frame was discarded stay counted).
extern "C" __device__ int tracked_live(int* ret) {
    *ret = __atomic_load_n(&Tracked::live, __ATOMIC_RELAXED);
    return 0;
}

// A device function named like a C library function the host program uses: on the simulator
// it must neither replace libc's `write` (every print of the test process goes through it)
// nor be replaced by it.
extern "C" __device__ int write(int* ret, int x) {
    *ret = x + 1;
    return 0;
}
