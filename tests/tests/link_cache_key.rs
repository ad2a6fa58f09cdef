//! What the link cache's key covers, without a GPU: headers reached through NVRTC's `-I` /
//! `--include-path` options and pre-included files, a `#include` that names its header
//! through a macro (not cacheable: compiled every time), and a cache folder that cannot be
//! written.
//!
//! Needs NVRTC and nvJitLink (the CUDA compiler wheels that `cargo xtask doctor` installs).

mod link_support;

use std::path::{Path, PathBuf};

use gpukernel_runtime::link::{CachePolicy, CacheStatus, LinkedImage, Linker};
use link_support::{ok, temp_dir};

/// A kernel writing `VALUE`, which `value.h` defines (a kernel: the linker keeps it).
const SOURCE: &str = "#include \"value.h\"\n\
                      extern \"C\" __global__ void value_of(float* out) { *out = VALUE; }\n";

fn write_value(dir: &Path, value: f32) {
    std::fs::write(dir.join("value.h"), format!("#define VALUE {value:.1}f\n")).unwrap();
}

/// Links `source` (in memory, named `value.cu`) into `cache`, with `nvrtc` options.
fn link(cache: &Path, source: &str, nvrtc: &[String]) -> LinkedImage {
    let mut linker = ok(Linker::for_arch("sm_90"));
    linker
        .cache(CachePolicy::Dir(cache.to_path_buf()))
        .add_cuda_source(source, "value.cu")
        .nvrtc_options(nvrtc.iter().cloned());
    ok(linker.link())
}

fn is_hit(image: &LinkedImage) -> bool {
    matches!(image.cache_status(), CacheStatus::Hit { .. })
}

/// Link, edit the header, link again: the second link must compile the edited header (not
/// reuse the first cubin), and a third, unchanged, must hit.
fn edit_is_seen(options: impl Fn(&Path) -> Vec<String>, what: &str) {
    let root = temp_dir("cache-key");
    let (cache, include) = (root.join("cache"), root.join("include"));
    std::fs::create_dir_all(&include).unwrap();
    write_value(&include, 2.0);
    let nvrtc = options(&include);
    let first = link(&cache, SOURCE, &nvrtc);
    assert!(!is_hit(&first), "{what}: a cold cache");
    assert!(
        is_hit(&link(&cache, SOURCE, &nvrtc)),
        "{what}: unchanged, it hits"
    );
    write_value(&include, 101.0);
    let edited = link(&cache, SOURCE, &nvrtc);
    assert!(
        !is_hit(&edited),
        "{what}: the header changed, yet the cached cubin was reused"
    );
    assert_ne!(
        first.cubin(),
        edited.cubin(),
        "{what}: the constant is in the code"
    );
    let again = link(&cache, SOURCE, &nvrtc);
    assert!(is_hit(&again), "{what}: {:?}", again.cache_status());
    assert_eq!(again.cubin(), edited.cubin());
}

#[test]
fn headers_found_through_nvrtc_include_options_are_keyed() {
    let s = |p: &Path| p.display().to_string();
    edit_is_seen(|dir| vec![format!("-I{}", s(dir))], "-I<dir>");
    edit_is_seen(|dir| vec!["-I".into(), s(dir)], "-I <dir>");
    edit_is_seen(
        |dir| vec![format!("--include-path={}", s(dir))],
        "--include-path=<dir>",
    );
}

#[test]
fn pre_included_headers_are_keyed() {
    let root = temp_dir("cache-key-pre-include");
    let (cache, include) = (root.join("cache"), root.join("include"));
    std::fs::create_dir_all(&include).unwrap();
    write_value(&include, 2.0);
    let source = "extern \"C\" __global__ void value_of(float* out) { *out = VALUE; }\n";
    let options = vec![format!(
        "--pre-include={}",
        include.join("value.h").display()
    )];
    let first = link(&cache, source, &options);
    write_value(&include, 101.0);
    let edited = link(&cache, source, &options);
    assert!(!is_hit(&edited), "{:?}", edited.cache_status());
    assert_ne!(first.cubin(), edited.cubin());
}

/// Spellings of `#include "value.h"` that the preprocessor reads as one (a comment after the
/// `#`, the `%:` digraph, a backslash-newline splice inside the directive) are keyed like it:
/// an edit of the header is compiled, not answered from the cache.
#[test]
fn every_spelling_of_an_include_is_keyed() {
    let body = "extern \"C\" __global__ void value_of(float* out) { *out = VALUE; }\n";
    for (what, include) in [
        ("a comment after '#'", "#/**/include \"value.h\"\n"),
        ("the digraph '%:'", "%:include \"value.h\"\n"),
        ("a splice", "#inc\\\nlude \"value.h\"\n"),
        ("a spliced name", "#include \"val\\\nue.h\"\n"),
        (
            "a comment before '#'",
            "/* x\n */ # /* y */ include /* z */ \"value.h\"\n",
        ),
    ] {
        let root = temp_dir("cache-key-spelling");
        let (cache, include_dir) = (root.join("cache"), root.join("include"));
        std::fs::create_dir_all(&include_dir).unwrap();
        write_value(&include_dir, 2.0);
        let options = vec![format!("-I{}", include_dir.display())];
        let source = format!("{include}{body}");
        let first = link(&cache, &source, &options);
        write_value(&include_dir, 101.0);
        let edited = link(&cache, &source, &options);
        assert!(!is_hit(&edited), "{what}: {:?}", edited.cache_status());
        assert_ne!(first.cubin(), edited.cubin(), "{what}");
    }
}

/// `__has_include` makes the compile depend on a file: one that is there is keyed; one that
/// is not (it may appear later) makes the link uncacheable.
#[test]
fn files_tested_by_has_include_are_keyed() {
    let source = "#if __has_include(\"flag.h\")\n#include \"flag.h\"\n#endif\n\
                  #ifndef FLAG\n#define FLAG 2.0f\n#endif\n\
                  extern \"C\" __global__ void value_of(float* out) { *out = FLAG; }\n";
    let root = temp_dir("cache-key-has-include");
    let (cache, include_dir) = (root.join("cache"), root.join("include"));
    std::fs::create_dir_all(&include_dir).unwrap();
    let options = vec![format!("-I{}", include_dir.display())];
    let absent = link(&cache, source, &options);
    std::fs::write(include_dir.join("flag.h"), "#define FLAG 101.0f\n").unwrap();
    let present = link(&cache, source, &options);
    assert!(!is_hit(&present), "{:?}", present.cache_status());
    assert_ne!(absent.cubin(), present.cubin());
    // Only tested for, never included: the header's edit is seen too.
    let probe_only = "#if __has_include(\"flag.h\")\n#define FLAG 101.0f\n#else\n\
                      #define FLAG 2.0f\n#endif\n\
                      extern \"C\" __global__ void value_of(float* out) { *out = FLAG; }\n";
    let with = link(&cache, probe_only, &options);
    std::fs::remove_file(include_dir.join("flag.h")).unwrap();
    let without = link(&cache, probe_only, &options);
    assert!(!is_hit(&without), "{:?}", without.cache_status());
    assert_ne!(with.cubin(), without.cubin());
}

/// A header named through a macro cannot be known before NVRTC runs: the link is compiled
/// every time, says why, and sees each edit.
#[test]
fn a_header_included_through_a_macro_is_not_cached() {
    let root = temp_dir("cache-key-macro");
    let (cache, include) = (root.join("cache"), root.join("include"));
    std::fs::create_dir_all(&include).unwrap();
    write_value(&include, 2.0);
    let source = "#define HEADER \"value.h\"\n#include HEADER\n\
                  extern \"C\" __global__ void value_of(float* out) { *out = VALUE; }\n";
    let link = || {
        let mut linker = ok(Linker::for_arch("sm_90"));
        linker
            .cache(CachePolicy::Dir(cache.clone()))
            .add_cuda_source(source, "value.cu")
            .include_dir(&include);
        ok(linker.link())
    };
    let first = link();
    let CacheStatus::Uncacheable { reason } = first.cache_status() else {
        panic!("{:?}", first.cache_status())
    };
    assert!(
        reason.contains("value.cu:2") && reason.contains("HEADER"),
        "{reason}"
    );
    write_value(&include, 101.0);
    let edited = link();
    assert!(matches!(
        edited.cache_status(),
        CacheStatus::Uncacheable { .. }
    ));
    assert_ne!(first.cubin(), edited.cubin());
    // Nothing was stored.
    let stored: Vec<PathBuf> = std::fs::read_dir(&cache)
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    assert!(
        !stored
            .iter()
            .any(|p| p.extension().is_some_and(|e| e == "cubin-cache")),
        "{stored:?}"
    );
}

/// A cache folder that is a file (or lies under one) costs the store, never the link.
#[test]
fn an_unusable_cache_folder_links_uncached_and_says_why() {
    let root = temp_dir("cache-key-file");
    let file = root.join("not-a-folder");
    std::fs::write(&file, "x").unwrap();
    for dir in [file.clone(), file.join("below")] {
        let mut linker = ok(Linker::for_arch("sm_90"));
        linker.cache(CachePolicy::Dir(dir.clone())).add_cuda_source(
            "extern \"C\" __device__ float two() { return 2.0f; }",
            "two.cu",
        );
        let image = ok(linker.link());
        assert!(!image.cubin().is_empty());
        let CacheStatus::Miss {
            stored: Some(Err(why)),
        } = image.cache_status()
        else {
            panic!("{}: {:?}", dir.display(), image.cache_status())
        };
        assert!(
            why.contains(&dir.display().to_string()) && why.contains("GPUKERNEL_CACHE_DIR"),
            "{why}"
        );
    }
}

/// A read-only cache folder: the link works, the store fails and says where. (A process that
/// may write anywhere, such as root's, cannot make the folder read-only for itself: there
/// the store succeeds, which is checked instead.)
#[cfg(unix)]
#[test]
fn a_read_only_cache_folder_links_and_says_why() {
    use std::os::unix::fs::PermissionsExt;
    let dir = temp_dir("cache-key-read-only");
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o555)).unwrap();
    let writable = std::fs::write(dir.join("probe"), "x").is_ok();
    let mut linker = ok(Linker::for_arch("sm_90"));
    linker.cache(CachePolicy::Dir(dir.clone())).add_cuda_source(
        "extern \"C\" __global__ void three(float* o) { *o = 3.0f; }",
        "three.cu",
    );
    let image = ok(linker.link());
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    assert!(!image.cubin().is_empty());
    match (writable, image.cache_status()) {
        (
            false,
            CacheStatus::Miss {
                stored: Some(Err(why)),
            },
        ) => {
            assert!(why.contains(&dir.display().to_string()), "{why}")
        }
        (
            true,
            CacheStatus::Miss {
                stored: Some(Ok(_)),
            },
        ) => {}
        (writable, other) => panic!("writable {writable}: {other:?}"),
    }
}
