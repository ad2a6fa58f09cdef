//! NVTX ranges around the runtime's operations (cargo feature `nvtx`), so that Nsight Systems
//! and Nsight Compute show our names on their timelines.
//!
//! With the feature, each kernel launch (`launch <kernel>`), copy and memset (the name of the
//! method called: `htod_copy`, `to_host_vec`, `memcpy_dtod`, …), link (`Linker::link`,
//! `Linker::link_and_load`) and graph launch (`graph <name>`) opens an NVTX range on the
//! calling thread for as long as the call runs, through the [`nvtx`](https://docs.rs/nvtx)
//! crate (NVIDIA's header-only NVTX3, compiled in: no library to install). A profiler
//! attaches to NVTX by setting `NVTX_INJECTION64_PATH` in the profiled process (`nsys profile`
//! and `ncu` do); without it each operation costs two relaxed atomic loads and names are never
//! formatted. Without the feature the ranges compile to nothing.
//!
//! ```text
//! cargo build --release --features gpukernel-runtime/nvtx
//! nsys profile --trace=cuda,nvtx -o app ./target/release/app
//! nsys stats --report nvtx_sum app.nsys-rep     # one line per range name: launch saxpy, …
//! ```

/// An open range, closed (popped) when dropped. Zero-sized without the feature. Not `Send`:
/// NVTX pops a range on the thread that pushed it.
#[must_use = "the range closes when this guard is dropped"]
pub(crate) struct Range {
    #[cfg(feature = "nvtx")]
    pushed: bool,
    #[cfg(feature = "nvtx")]
    _same_thread: core::marker::PhantomData<*const ()>,
}

impl core::fmt::Debug for Range {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("Range")
    }
}

/// Opens a range named by the format arguments, formatted only when a profiler is attached or
/// [`capture_ranges`] records this thread; evaluates nothing without the `nvtx` feature.
macro_rules! nvtx_range {
    ($($arg:tt)*) => {{
        #[cfg(feature = "nvtx")]
        let range = $crate::profile::Range::open(|| ::std::format!($($arg)*));
        #[cfg(not(feature = "nvtx"))]
        let range = $crate::profile::Range::none();
        range
    }};
}
pub(crate) use nvtx_range;

#[cfg(not(feature = "nvtx"))]
impl Range {
    #[inline(always)]
    pub(crate) const fn none() -> Self {
        Range {}
    }
}

#[cfg(feature = "nvtx")]
pub use imp::capture_ranges;

#[cfg(feature = "nvtx")]
mod imp {
    use std::cell::RefCell;
    use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};

    use super::Range;

    /// Whether a profiler injected itself: 0 not yet known, 1 no, 2 yes.
    static TOOL: AtomicU8 = AtomicU8::new(0);
    /// How many threads are inside [`capture_ranges`].
    static CAPTURING: AtomicUsize = AtomicUsize::new(0);

    thread_local! {
        static CAPTURED: RefCell<Option<Vec<String>>> = const { RefCell::new(None) };
    }

    /// NVTX3 hands its calls to the tool named by `NVTX_INJECTION64_PATH`; without one they do
    /// nothing, so neither do we.
    fn tool_attached() -> bool {
        match TOOL.load(Ordering::Relaxed) {
            1 => false,
            2 => true,
            _ => {
                let attached =
                    std::env::var_os("NVTX_INJECTION64_PATH").is_some_and(|p| !p.is_empty());
                TOOL.store(if attached { 2 } else { 1 }, Ordering::Relaxed);
                attached
            }
        }
    }

    impl Range {
        fn closed() -> Range {
            Range {
                pushed: false,
                _same_thread: core::marker::PhantomData,
            }
        }

        #[inline]
        pub(crate) fn open(name: impl FnOnce() -> String) -> Range {
            let capturing = CAPTURING.load(Ordering::Relaxed) != 0;
            if !capturing && !tool_attached() {
                return Range::closed();
            }
            let name = name();
            if capturing {
                CAPTURED.with(|c| {
                    if let Some(names) = c.borrow_mut().as_mut() {
                        names.push(name.clone());
                    }
                });
            }
            if !tool_attached() {
                return Range::closed();
            }
            // Our names never hold a NUL (kernel, method and graph names; a graph's name is
            // the user's, so one with a NUL is shown cut there rather than refused).
            let name = name.split('\0').next().unwrap_or_default();
            nvtx::range_push!("{name}");
            Range {
                pushed: true,
                _same_thread: core::marker::PhantomData,
            }
        }
    }

    impl Drop for Range {
        fn drop(&mut self) {
            if self.pushed {
                nvtx::range_pop!();
            }
        }
    }

    /// Runs `f` and returns, with its result, the names of the NVTX ranges that the calling
    /// thread opened meanwhile, in order (nested ones after their parent), whether or not a
    /// profiler is attached: to test what a profile will show.
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// use gpukernel_runtime::profile::capture_ranges;
    /// let (y, ranges) = capture_ranges(|| -> gpukernel_runtime::Result<Vec<f32>> {
    ///     let x = stream.htod_copy(&[1.0f32, 2.0])?;
    ///     let mut y = stream.htod_copy(&[0.0f32; 2])?;
    ///     let saxpy = module.kernel(saxpy)?;
    ///     stream.launch(&saxpy, LaunchConfig::for_elements(2)?, (2.0f32, &x, &mut y))?;
    ///     y.to_host_vec()
    /// });
    /// assert_eq!(y?, [2.0, 4.0]);
    /// assert_eq!(ranges, ["htod_copy", "htod_copy", "launch saxpy", "to_host_vec"]);
    /// # Ok(()) }
    /// ```
    pub fn capture_ranges<R>(f: impl FnOnce() -> R) -> (R, Vec<String>) {
        struct Reset(Option<Vec<String>>);
        impl Drop for Reset {
            fn drop(&mut self) {
                let outer = self.0.take();
                CAPTURED.with(|c| *c.borrow_mut() = outer);
                CAPTURING.fetch_sub(1, Ordering::Relaxed);
            }
        }
        CAPTURING.fetch_add(1, Ordering::Relaxed);
        // Nested captures: the outer one's names are put back afterwards (without the inner).
        let reset = Reset(CAPTURED.with(|c| c.borrow_mut().replace(Vec::new())));
        let r = f();
        let names = CAPTURED.with(|c| c.borrow_mut().take()).unwrap_or_default();
        drop(reset);
        (r, names)
    }
}

#[cfg(all(test, feature = "nvtx"))]
mod tests {
    use super::*;
    use crate::LaunchConfig;
    use crate::launch::tests::{saxpy, sim};
    use crate::link::Linker;

    // One test: `capture_ranges` on another test thread would make this thread's ranges format
    // their names, which the first check below asserts they do not.
    #[test]
    fn each_operation_opens_a_range_named_after_it() {
        // No profiler (no NVTX_INJECTION64_PATH in tests) and no capture: no name is formatted.
        assert!(std::env::var_os("NVTX_INJECTION64_PATH").is_none());
        let _r = Range::open(|| panic!("a range formatted its name with nothing to show it"));
        drop(_r);

        let (ctx, module) = sim();
        let k = module.kernel(saxpy).unwrap();
        let s = ctx.new_stream().unwrap();
        let (host, names) = capture_ranges(|| {
            let x = s.htod_copy(&[1.0f32, 2.0, 3.0]).unwrap();
            let mut y = s.alloc_zeros::<f32>(3).unwrap();
            let cfg = LaunchConfig::for_elements(3).unwrap();
            s.launch(&k, cfg, (2.0f32, &x, &mut y)).unwrap();
            let mut z = s.alloc_zeros::<f32>(3).unwrap();
            z.copy_from_device(&y).unwrap();
            z.to_host_vec().unwrap()
        });
        assert_eq!(host, [2.0, 4.0, 6.0]);
        assert_eq!(
            names,
            [
                "htod_copy",
                "memset_d8",
                "launch saxpy",
                "memset_d8",
                "copy_from_device",
                "to_host_vec"
            ]
        );

        // A graph launch is named after the graph; its nodes run inside its range.
        let mut y = ctx.alloc_zeros::<f32>(4).unwrap();
        let x = ctx.htod_copy(&[1.0f32; 4]).unwrap();
        let g = ctx.new_graph("step").unwrap();
        let (xb, yb) = (g.buffer(&x), g.buffer_mut(&mut y));
        g.add_kernel(
            &[],
            &k,
            LaunchConfig::for_elements(4).unwrap(),
            (1.0f32, xb, yb),
        )
        .unwrap();
        let exec = g.instantiate().unwrap();
        let ((), names) = capture_ranges(|| exec.launch(&s).unwrap());
        assert_eq!(names, ["graph step"]);
        drop(exec);
        drop(g);

        // A link, and a failed one: the range covers the call whatever its outcome.
        let (m, names) = capture_ranges(|| {
            Linker::new(&ctx)
                .unwrap()
                .add_ptx(crate::launch::tests::PTX, "kernels.ptx")
                .link_and_load()
        });
        assert!(m.is_ok());
        assert_eq!(
            names.first().map(String::as_str),
            Some("Linker::link_and_load")
        );
        let (e, names) = capture_ranges(|| Linker::new(&ctx).unwrap().link());
        assert!(e.is_err(), "a link of no input fails");
        assert_eq!(names, ["Linker::link"]);

        // Nested captures: the inner one's names are its own; the outer one keeps its own.
        let ((_, inner), outer) = capture_ranges(|| {
            let _a = s.htod_copy(&[1u8]).unwrap();
            capture_ranges(|| s.htod_copy(&[2u8]).unwrap().to_host_vec().unwrap())
        });
        assert_eq!(inner, ["htod_copy", "to_host_vec"]);
        assert_eq!(outer, ["htod_copy"]);
    }
}
