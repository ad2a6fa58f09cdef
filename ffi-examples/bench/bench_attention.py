"""PyTorch's side of `bench_attention` (run by it, in the same GPU session).

usage: python3 bench_attention.py DIR

DIR holds `rust_results.txt` (lines `TAG KERNEL MS TFLOPS`, TAG =
b{B}_h{H}_s{S}_d{D}_{full|causal}, KERNEL = mma, wgmma or tma) and, per line, the first batch
element of our output `TAG.KERNEL.o.bin` and of the inputs
(`..._full.{q,k,v}.bin`), bf16 little-endian in [H, S, D]. For each shape this times
`torch.nn.functional.scaled_dot_product_attention` with each backend forced
(`torch.nn.attention.sdpa_kernel`), median of 21 CUDA-event timings after 3 warm-ups, prints
TFLOP/s (4·B·H·S²·D, halved when causal) and our ratio, and checks our output against the
f32 math reference and against the FLASH_ATTENTION backend's output.

Exit status: 0 ok, 1 a check failed, 3 PyTorch or CUDA unavailable.
"""

import os
import re
import sys

try:
    import numpy as np
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel
except Exception as e:  # noqa: BLE001 - any import failure means "no reference here"
    print(f"# PyTorch unavailable: {e}")
    sys.exit(3)

if not torch.cuda.is_available():
    print("# PyTorch sees no CUDA device")
    sys.exit(3)

WARMUP, TRIALS = 3, 21
BACKENDS = [SDPBackend.FLASH_ATTENTION, SDPBackend.CUDNN_ATTENTION]


def load(path, h, s, d):
    raw = np.fromfile(path, dtype=np.int16)
    return torch.from_numpy(raw).view(torch.bfloat16).reshape(1, h, s, d).cuda()


def timed(fn):
    for _ in range(WARMUP):
        fn()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(TRIALS):
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    times.sort()
    return times[TRIALS // 2]


def main(folder):
    print(f"# torch {torch.__version__}, CUDA {torch.version.cuda}, {torch.cuda.get_device_name()}")
    ok = True
    rows = []
    with open(os.path.join(folder, "rust_results.txt")) as f:
        for line in f:
            tag, kernel, ms, tflops = line.split()
            rows.append((tag, kernel, float(ms), float(tflops)))
    print(f"{'shape':<28} {'kernel':<6} {'ours':>7} " + " ".join(f"{b.name:>16} {'ratio':>6}" for b in BACKENDS)
          + f" {'err ours':>9} {'err flash':>9}")
    timings = {}
    for tag, kernel, _ms, ours in rows:
        b, h, s, d, kind = re.fullmatch(r"b(\d+)_h(\d+)_s(\d+)_d(\d+)_(full|causal)", tag).groups()
        b, h, s, d, causal = int(b), int(h), int(s), int(d), kind == "causal"
        flops = 4.0 * b * h * s * s * d / (2 if causal else 1)
        full = tag.replace("_causal", "_full")
        q, k, v = (load(os.path.join(folder, f"{full}.{x}.bin"), h, s, d) for x in "qkv")
        o = load(os.path.join(folder, f"{tag}.{kernel}.o.bin"), h, s, d).float()
        with sdpa_kernel(SDPBackend.MATH):
            ref = F.scaled_dot_product_attention(q.float(), k.float(), v.float(), is_causal=causal)
        with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
            flash = F.scaled_dot_product_attention(q, k, v, is_causal=causal).float()
        err_ours = (o - ref).abs().max().item()
        err_flash = (flash - ref).abs().max().item()
        diff = (o - flash).abs().max().item()
        if not err_ours <= 1e-2:
            print(f"WRONG: {tag} ({kernel}): ours differs from the f32 reference by {err_ours:.3e} "
                  f"(FLASH_ATTENTION: {err_flash:.3e}, ours vs FLASH_ATTENTION {diff:.3e})")
            ok = False
        del q, k, v, o, ref, flash
        if tag not in timings:
            gen = torch.Generator(device="cuda").manual_seed(0)
            qf, kf, vf = (torch.randn(b, h, s, d, device="cuda", dtype=torch.bfloat16,
                                      generator=gen) for _ in range(3))
            timings[tag] = {}
            for backend in BACKENDS:
                try:
                    with sdpa_kernel(backend):
                        ms = timed(lambda: F.scaled_dot_product_attention(qf, kf, vf,
                                                                          is_causal=causal))
                    timings[tag][backend] = flops / (ms * 1e-3) / 1e12
                except RuntimeError as e:
                    print(f"# {backend.name} unavailable for {tag}: {str(e).splitlines()[0]}")
            del qf, kf, vf
            torch.cuda.empty_cache()
        cells = []
        for backend in BACKENDS:
            theirs = timings[tag].get(backend)
            cells.append(f"{theirs:>16.1f} {ours / theirs:>6.3f}" if theirs
                         else f"{'-':>16} {'-':>6}")
        print(f"{tag:<28} {kernel:<6} {ours:>7.1f} " + " ".join(cells)
              + f" {err_ours:>9.2e} {err_flash:>9.2e}")
    print("# TFLOP/s; ratio = ours / backend; err = max |x - f32 math reference| on batch 0")
    return ok


if __name__ == "__main__":
    sys.exit(0 if main(sys.argv[1]) else 1)
