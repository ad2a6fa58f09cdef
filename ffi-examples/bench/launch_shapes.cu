// The CUDA C side of the launch-shape benchmark (`bench_launch`): the same empty kernels,
// launched with `<<<>>>` (the runtime API's cudaLaunchKernel) and timed as bench_launch times
// its launches: 2000 back-to-back launches per trial, event-timed, median of 31 trials, µs per
// launch. Build: nvcc -O3 -arch=native launch_shapes.cu -o launch_shapes_cuda
#include <algorithm>
#include <cstdio>
#include <vector>

__global__ void shape_empty() {}
__global__ void shape_one_array(const float* x, unsigned long long n) {}
__global__ void shape_16_scalars(float a0, float a1, float a2, float a3, float a4, float a5, float a6, float a7, float a8, float a9, float a10, float a11, float a12, float a13, float a14, float a15) {}
__global__ void shape_16_arrays(const float* x0, unsigned long long n0, const float* x1, unsigned long long n1, const float* x2, unsigned long long n2, const float* x3, unsigned long long n3, const float* x4, unsigned long long n4, const float* x5, unsigned long long n5, const float* x6, unsigned long long n6, const float* x7, unsigned long long n7, const float* x8, unsigned long long n8, const float* x9, unsigned long long n9, const float* x10, unsigned long long n10, const float* x11, unsigned long long n11, const float* x12, unsigned long long n12, const float* x13, unsigned long long n13, const float* x14, unsigned long long n14, const float* x15, unsigned long long n15) {}
struct Scalars256 { float v[256]; };
__global__ void shape_256_scalars(Scalars256 s) {}
__global__ void shape_256_separate(float a0, float a1, float a2, float a3, float a4, float a5, float a6, float a7, float a8, float a9, float a10, float a11, float a12, float a13, float a14, float a15, float a16, float a17, float a18, float a19, float a20, float a21, float a22, float a23, float a24, float a25, float a26, float a27, float a28, float a29, float a30, float a31, float a32, float a33, float a34, float a35, float a36, float a37, float a38, float a39, float a40, float a41, float a42, float a43, float a44, float a45, float a46, float a47, float a48, float a49, float a50, float a51, float a52, float a53, float a54, float a55, float a56, float a57, float a58, float a59, float a60, float a61, float a62, float a63, float a64, float a65, float a66, float a67, float a68, float a69, float a70, float a71, float a72, float a73, float a74, float a75, float a76, float a77, float a78, float a79, float a80, float a81, float a82, float a83, float a84, float a85, float a86, float a87, float a88, float a89, float a90, float a91, float a92, float a93, float a94, float a95, float a96, float a97, float a98, float a99, float a100, float a101, float a102, float a103, float a104, float a105, float a106, float a107, float a108, float a109, float a110, float a111, float a112, float a113, float a114, float a115, float a116, float a117, float a118, float a119, float a120, float a121, float a122, float a123, float a124, float a125, float a126, float a127, float a128, float a129, float a130, float a131, float a132, float a133, float a134, float a135, float a136, float a137, float a138, float a139, float a140, float a141, float a142, float a143, float a144, float a145, float a146, float a147, float a148, float a149, float a150, float a151, float a152, float a153, float a154, float a155, float a156, float a157, float a158, float a159, float a160, float a161, float a162, float a163, float a164, float a165, float a166, float a167, float a168, float a169, float a170, float a171, float a172, float a173, float a174, float a175, float a176, float a177, float a178, float a179, float a180, float a181, float a182, float a183, float a184, float a185, float a186, float a187, float a188, float a189, float a190, float a191, float a192, float a193, float a194, float a195, float a196, float a197, float a198, float a199, float a200, float a201, float a202, float a203, float a204, float a205, float a206, float a207, float a208, float a209, float a210, float a211, float a212, float a213, float a214, float a215, float a216, float a217, float a218, float a219, float a220, float a221, float a222, float a223, float a224, float a225, float a226, float a227, float a228, float a229, float a230, float a231, float a232, float a233, float a234, float a235, float a236, float a237, float a238, float a239, float a240, float a241, float a242, float a243, float a244, float a245, float a246, float a247, float a248, float a249, float a250, float a251, float a252, float a253, float a254, float a255) {}

#define CHECK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
    std::printf("%s: %s\n", #x, cudaGetErrorString(e)); return 1; } } while (0)

template <class F>
static int measure(const char* name, cudaStream_t s, F launch) {
    cudaEvent_t a, b;
    CHECK(cudaEventCreate(&a));
    CHECK(cudaEventCreate(&b));
    for (int i = 0; i < 200; i++) launch();
    CHECK(cudaStreamSynchronize(s));
    std::vector<float> us;
    for (int t = 0; t < 31; t++) {
        CHECK(cudaEventRecord(a, s));
        for (int i = 0; i < 2000; i++) launch();
        CHECK(cudaEventRecord(b, s));
        CHECK(cudaEventSynchronize(b));
        float ms = 0;
        CHECK(cudaEventElapsedTime(&ms, a, b));
        us.push_back(ms * 1000.0f / 2000.0f);
    }
    CHECK(cudaGetLastError());
    std::sort(us.begin(), us.end());
    std::printf("| %s | %.3f |\n", name, us[us.size() / 2]);
    return 0;
}

int main() {
    cudaStream_t s;
    CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    float* x;
    CHECK(cudaMalloc(&x, 256 * sizeof(float)));
    Scalars256 s256;
    for (int i = 0; i < 256; i++) s256.v[i] = float(i);
    cudaDeviceProp p;
    CHECK(cudaGetDeviceProperties(&p, 0));
    std::printf("# CUDA C <<<>>> launch shapes: %s\n| shape | <<<>>>, us per launch |\n|---|---|\n", p.name);
    int r = 0;
    r |= measure("empty", s, [&] { shape_empty<<<1, 1, 0, s>>>(); });
    r |= measure("one array", s, [&] { shape_one_array<<<1, 1, 0, s>>>(x, 256ull); });
    r |= measure("16 scalars", s, [&] { shape_16_scalars<<<1, 1, 0, s>>>(0.5f, 1.5f, 2.5f, 3.5f, 4.5f, 5.5f, 6.5f, 7.5f, 8.5f, 9.5f, 10.5f, 11.5f, 12.5f, 13.5f, 14.5f, 15.5f); });
    r |= measure("16 arrays", s, [&] { shape_16_arrays<<<1, 1, 0, s>>>(x, 256ull, x, 256ull, x, 256ull, x, 256ull, x, 256ull, x, 256ull, x, 256ull, x, 256ull, x, 256ull, x, 256ull, x, 256ull, x, 256ull, x, 256ull, x, 256ull, x, 256ull, x, 256ull); });
    r |= measure("256 scalars (one struct)", s, [&] { shape_256_scalars<<<1, 1, 0, s>>>(s256); });
    r |= measure("256 scalars, 256 parameters", s, [&] { shape_256_separate<<<1, 1, 0, s>>>(0.5f, 1.5f, 2.5f, 3.5f, 4.5f, 5.5f, 6.5f, 7.5f, 8.5f, 9.5f, 10.5f, 11.5f, 12.5f, 13.5f, 14.5f, 15.5f, 16.5f, 17.5f, 18.5f, 19.5f, 20.5f, 21.5f, 22.5f, 23.5f, 24.5f, 25.5f, 26.5f, 27.5f, 28.5f, 29.5f, 30.5f, 31.5f, 32.5f, 33.5f, 34.5f, 35.5f, 36.5f, 37.5f, 38.5f, 39.5f, 40.5f, 41.5f, 42.5f, 43.5f, 44.5f, 45.5f, 46.5f, 47.5f, 48.5f, 49.5f, 50.5f, 51.5f, 52.5f, 53.5f, 54.5f, 55.5f, 56.5f, 57.5f, 58.5f, 59.5f, 60.5f, 61.5f, 62.5f, 63.5f, 64.5f, 65.5f, 66.5f, 67.5f, 68.5f, 69.5f, 70.5f, 71.5f, 72.5f, 73.5f, 74.5f, 75.5f, 76.5f, 77.5f, 78.5f, 79.5f, 80.5f, 81.5f, 82.5f, 83.5f, 84.5f, 85.5f, 86.5f, 87.5f, 88.5f, 89.5f, 90.5f, 91.5f, 92.5f, 93.5f, 94.5f, 95.5f, 96.5f, 97.5f, 98.5f, 99.5f, 100.5f, 101.5f, 102.5f, 103.5f, 104.5f, 105.5f, 106.5f, 107.5f, 108.5f, 109.5f, 110.5f, 111.5f, 112.5f, 113.5f, 114.5f, 115.5f, 116.5f, 117.5f, 118.5f, 119.5f, 120.5f, 121.5f, 122.5f, 123.5f, 124.5f, 125.5f, 126.5f, 127.5f, 128.5f, 129.5f, 130.5f, 131.5f, 132.5f, 133.5f, 134.5f, 135.5f, 136.5f, 137.5f, 138.5f, 139.5f, 140.5f, 141.5f, 142.5f, 143.5f, 144.5f, 145.5f, 146.5f, 147.5f, 148.5f, 149.5f, 150.5f, 151.5f, 152.5f, 153.5f, 154.5f, 155.5f, 156.5f, 157.5f, 158.5f, 159.5f, 160.5f, 161.5f, 162.5f, 163.5f, 164.5f, 165.5f, 166.5f, 167.5f, 168.5f, 169.5f, 170.5f, 171.5f, 172.5f, 173.5f, 174.5f, 175.5f, 176.5f, 177.5f, 178.5f, 179.5f, 180.5f, 181.5f, 182.5f, 183.5f, 184.5f, 185.5f, 186.5f, 187.5f, 188.5f, 189.5f, 190.5f, 191.5f, 192.5f, 193.5f, 194.5f, 195.5f, 196.5f, 197.5f, 198.5f, 199.5f, 200.5f, 201.5f, 202.5f, 203.5f, 204.5f, 205.5f, 206.5f, 207.5f, 208.5f, 209.5f, 210.5f, 211.5f, 212.5f, 213.5f, 214.5f, 215.5f, 216.5f, 217.5f, 218.5f, 219.5f, 220.5f, 221.5f, 222.5f, 223.5f, 224.5f, 225.5f, 226.5f, 227.5f, 228.5f, 229.5f, 230.5f, 231.5f, 232.5f, 233.5f, 234.5f, 235.5f, 236.5f, 237.5f, 238.5f, 239.5f, 240.5f, 241.5f, 242.5f, 243.5f, 244.5f, 245.5f, 246.5f, 247.5f, 248.5f, 249.5f, 250.5f, 251.5f, 252.5f, 253.5f, 254.5f, 255.5f); });
    CHECK(cudaFree(x));
    return r;
}
