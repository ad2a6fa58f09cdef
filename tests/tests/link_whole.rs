//! The Linker's whole-program load: one self-contained PTX (the Black-Scholes kernels, whose
//! math library was linked in at build time) loads through `link_and_load` without a link,
//! JIT-compiled by the driver as a whole program with the link's options; it runs and computes
//! what the linked (relocatable) module computes. A PTX that needs a link is linked, and a bad
//! PTX fails with the link's own error.
//!
//! The GPU tests are compiled as ignored unless the `gpu` feature is on (`cargo test -p
//! gpukernel-tests --features gpu --test link_whole`); with it, each fails without a GPU.

mod link_support;

use ffi_examples_kernels::math_kernels::{Market, black_scholes, black_scholes_cuda_style};
use gpukernel_device::Kernel;
use gpukernel_runtime::link::{CachePolicy, Linker, LinkerKind, LoadPath};
use gpukernel_runtime::{Context, Device, Error, LaunchConfig, Module};
use link_support::{PTX, err, ok};

const MARKET: Market = Market {
    rate: 0.02,
    volatility: 0.30,
};

/// CUDA device 0's context; fails (never skips) without a GPU.
fn gpu() -> Context {
    let device = match Device::get(0) {
        Ok(d) => d,
        Err(e) => panic!("this test needs a CUDA GPU (feature `gpu` is on): {e}"),
    };
    ok(device.primary_context())
}

/// A linker of the two Black-Scholes kernels alone, without the on-disk cache.
fn black_scholes_linker(ctx: &Context) -> Linker {
    let mut linker = ok(Linker::new(ctx));
    linker.cache(CachePolicy::Disabled).add_ptx_kernels(
        PTX,
        "kernels.ptx",
        &[black_scholes::NAME, black_scholes_cuda_style::NAME],
    );
    linker
}

/// Spot, strike and years of `n` options, spread over the ranges the benchmark uses.
fn options(n: usize) -> (Vec<f32>, Vec<f32>, Vec<f32>) {
    let f = |i: usize, k: usize| ((i * k) % 1009) as f32 / 1009.0;
    (
        (0..n).map(|i| 5.0 + 25.0 * f(i, 7)).collect(),
        (0..n).map(|i| 1.0 + 99.0 * f(i, 13)).collect(),
        (0..n).map(|i| 0.25 + 9.75 * f(i, 31)).collect(),
    )
}

/// The call and put prices `black_scholes` computes in `module`.
fn prices(ctx: &Context, module: &Module, n: usize) -> (Vec<f32>, Vec<f32>) {
    let (s, x, t) = options(n);
    let (s, x, t) = (
        ok(ctx.htod_copy(&s)),
        ok(ctx.htod_copy(&x)),
        ok(ctx.htod_copy(&t)),
    );
    let mut call = ok(ctx.alloc_zeros::<f32>(n));
    let mut put = ok(ctx.alloc_zeros::<f32>(n));
    let kernel = ok(module.kernel(black_scholes));
    ok(ctx.default_stream().launch(
        &kernel,
        ok(LaunchConfig::for_elements(n)),
        (&s, &x, &t, MARKET, &mut call, &mut put),
    ));
    (ok(call.to_host_vec()), ok(put.to_host_vec()))
}

/// Checks prices against an `f64` reference (absolute 2e-4 of the larger of spot and strike).
#[track_caller]
fn check_prices(what: &str, (call, put): &(Vec<f32>, Vec<f32>)) {
    let (s, x, t) = options(call.len());
    let (r, v) = (f64::from(MARKET.rate), f64::from(MARKET.volatility));
    for i in 0..call.len() {
        let (si, xi, ti) = (f64::from(s[i]), f64::from(x[i]), f64::from(t[i]));
        let d1 = ((si / xi).ln() + (r + 0.5 * v * v) * ti) / (v * ti.sqrt());
        let d2 = d1 - v * ti.sqrt();
        let cdf = |d: f64| 0.5 * libm::erfc(-d / core::f64::consts::SQRT_2);
        let disc = xi * (-r * ti).exp();
        let (c, p) = (
            si * cdf(d1) - disc * cdf(d2),
            disc * (1.0 - cdf(d2)) - si * (1.0 - cdf(d1)),
        );
        let tol = 2e-4 * si.max(xi);
        assert!(
            (f64::from(call[i]) - c).abs() <= tol && (f64::from(put[i]) - p).abs() <= tol,
            "{what}: option {i} priced {} / {}, expected {c} / {p}",
            call[i],
            put[i]
        );
    }
}

#[test]
fn the_decision_without_a_device() {
    let mut sim = Linker::for_simulator();
    sim.add_ptx_kernels(PTX, "kernels.ptx", &[black_scholes::NAME]);
    assert_eq!(ok(sim.load_path()), LoadPath::Simulator);
    // Offline the inputs are judged first: the Black-Scholes kernels' PTX (whose dynamic
    // shared memory declaration is `.extern .shared`) would load whole on a device...
    let mut offline = ok(Linker::for_arch("sm_90"));
    offline.add_ptx_kernels(
        PTX,
        "kernels.ptx",
        &[black_scholes::NAME, black_scholes_cuda_style::NAME],
    );
    assert!(
        matches!(ok(offline.load_path()), LoadPath::Linked { reason } if reason.contains("cubin")),
        "{:?}",
        offline.load_path()
    );
    // ... and a kernel calling a foreign function needs the link.
    let mut foreign = ok(Linker::for_arch("sm_90"));
    foreign.add_ptx_kernels(PTX, "kernels.ptx", &["multiply_vectors"]);
    assert!(matches!(
        ok(foreign.load_path()),
        LoadPath::Linked { reason } if reason.contains("`.extern`")
    ));
    // The checks of a link come first: a kernel the PTX lacks is the link's error.
    let mut missing = Linker::for_simulator();
    missing.add_ptx_kernels(PTX, "kernels.ptx", &["no_such_kernel"]);
    assert!(matches!(
        err(missing.load_path()),
        Error::KernelNotFound { .. }
    ));
}

#[test]
#[cfg_attr(not(feature = "gpu"), ignore = "needs a GPU (feature gpu)")]
fn one_self_contained_ptx_loads_whole_runs_and_matches_the_link() {
    let ctx = gpu();
    let linker = black_scholes_linker(&ctx);
    assert_eq!(
        ok(linker.load_path()),
        LoadPath::WholeProgram {
            input: "kernels.ptx".into()
        }
    );
    let whole = ok(linker.link_and_load());
    let mut relocatable_linker = linker.clone();
    relocatable_linker.whole_program(false);
    assert!(matches!(
        ok(relocatable_linker.load_path()),
        LoadPath::Linked { reason } if reason.contains("whole_program(false)")
    ));
    let relocatable = ok(relocatable_linker.link_and_load());
    let n = 100_000;
    let from_whole = prices(&ctx, &whole, n);
    check_prices("whole program", &from_whole);
    assert!(
        from_whole == prices(&ctx, &relocatable, n),
        "the whole-program and the linked kernels disagree"
    );
    for name in [black_scholes::NAME, black_scholes_cuda_style::NAME] {
        let (w, r) = (
            ok(whole.function(name)).num_registers(),
            ok(relocatable.function(name)).num_registers(),
        );
        println!("{name}: {w} registers as a whole program, {r} linked (relocatable)");
        assert!(w <= r, "{name}: whole program {w} > relocatable {r}");
    }
    // One load per device through `link_and_load_on` is the same whole-program code.
    let on = ok(linker.link_and_load_on(std::slice::from_ref(&ctx)));
    assert_eq!(
        ok(on[0].function(black_scholes::NAME)).num_registers(),
        ok(whole.function(black_scholes::NAME)).num_registers()
    );
    // The link's options reach the JIT: a register limit below the kernel's own count (24,
    // ptxas's lower bound on sm_90: a limit of 16 is raised to it, and gave 23 on an H100).
    let free = ok(whole.function(black_scholes::NAME)).num_registers();
    let limit = 24;
    assert!(free > limit, "black_scholes needs only {free} registers");
    let mut limited = black_scholes_linker(&ctx);
    limited.max_registers(limit);
    let limited = ok(limited.link_and_load());
    let got = ok(limited.function(black_scholes::NAME)).num_registers();
    println!("black_scholes with max_registers({limit}): {got} registers (free: {free})");
    assert!(got <= limit, "max_registers({limit}) gave {got}");
    check_prices("whole program, max_registers", &prices(&ctx, &limited, n));
}

#[test]
#[cfg_attr(not(feature = "gpu"), ignore = "needs a GPU (feature gpu)")]
fn what_needs_a_link_is_linked_and_a_bad_ptx_reports_the_link_error() {
    let ctx = gpu();
    // A kernel that calls a foreign function the PTX only declares.
    let mut foreign = ok(Linker::new(&ctx));
    foreign.add_ptx_kernels(PTX, "kernels.ptx", &["multiply_vectors"]);
    assert!(matches!(
        ok(foreign.load_path()),
        LoadPath::Linked { reason } if reason.contains("`.extern`")
    ));
    // A PTX the JIT rejects: the error is the link's, the same as with the whole-program
    // load turned off (variant, linker, logs).
    let bad = ".version 8.0\n.target sm_90\n.address_size 64\n\
               .visible .entry bad()\n{\n\tnot_an_instruction;\n\tret;\n}\n";
    let mut linker = ok(Linker::new(&ctx));
    linker.cache(CachePolicy::Disabled).add_ptx(bad, "bad.ptx");
    assert!(matches!(
        ok(linker.load_path()),
        LoadPath::WholeProgram { .. }
    ));
    let e = err(linker.link_and_load());
    println!("bad PTX through link_and_load:\n{e}");
    assert!(
        matches!(
            &e,
            Error::LinkFailed {
                linker: LinkerKind::CuLink,
                ..
            }
        ),
        "{e}"
    );
    let e_linked = err(linker.whole_program(false).link_and_load());
    assert_eq!(e.to_string(), e_linked.to_string());
}

/// The safe kernel declares `same_len(spot, strike, years, call, put)`: equal lengths price
/// every option; unequal ones are refused on the host before anything runs
/// (`Error::SameLenViolated`, naming both parameters and lengths), at a stream launch, a
/// captured launch and a graph node alike, and the context stays usable.
#[test]
fn the_safe_kernel_refuses_unequal_lengths() {
    let n = 1000;
    let (s, x, t) = options(n);
    for (device, ctx) in gpukernel_tests::devices() {
        let module = ok(black_scholes_linker(&ctx).link_and_load());
        let kernel = ok(module.kernel(black_scholes));
        let stream = ctx.default_stream();
        let cfg = ok(LaunchConfig::for_elements(n));
        let (ds, dx, dt) = (
            ok(ctx.htod_copy(&s)),
            ok(ctx.htod_copy(&x)),
            ok(ctx.htod_copy(&t)),
        );
        let mut call = ok(ctx.alloc_zeros::<f32>(n));
        let mut put = ok(ctx.alloc_zeros::<f32>(n));
        let mut short_put = ok(ctx.alloc_zeros::<f32>(n - 1));
        let e = err(stream.launch(
            &kernel,
            cfg,
            (&ds, &dx, &dt, MARKET, &mut call, &mut short_put),
        ));
        println!("{device}: unequal lengths: {e}");
        assert!(
            matches!(e, gpukernel_runtime::Error::SameLenViolated { .. })
                && e.to_string().contains("`black_scholes`")
                && e.to_string().contains(&format!("{n} elements for `spot`"))
                && e.to_string().contains(&format!("{} for `put`", n - 1)),
            "{device}: {e}"
        );
        let short_years = ok(ctx.htod_copy(&t[..n - 2]));
        let e = err(stream.launch(
            &kernel,
            cfg,
            (&ds, &dx, &short_years, MARKET, &mut call, &mut put),
        ));
        assert!(e.to_string().contains("for `years`"), "{device}: {e}");
        // A graph node is checked the same way.
        {
            let (mut g_call, mut g_short) = (
                ok(ctx.alloc_zeros::<f32>(n)),
                ok(ctx.alloc_zeros::<f32>(n - 1)),
            );
            let graph = ok(ctx.new_graph("same_len"));
            let args = (
                graph.buffer(&ds),
                graph.buffer(&dx),
                graph.buffer(&dt),
                MARKET,
                graph.buffer_mut(&mut g_call),
                graph.buffer_mut(&mut g_short),
            );
            let e = err(graph.add_kernel(&[], &kernel, cfg, args));
            assert!(
                matches!(e, gpukernel_runtime::Error::SameLenViolated { .. }),
                "{device}: {e}"
            );
        }
        // Nothing ran, and the context is fine: the equal-length launch prices every option.
        ok(stream.launch(&kernel, cfg, (&ds, &dx, &dt, MARKET, &mut call, &mut put)));
        check_prices(&device, &(ok(call.to_host_vec()), ok(put.to_host_vec())));
    }
}
