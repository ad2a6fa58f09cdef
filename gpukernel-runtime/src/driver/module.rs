//! Modules, their functions and globals, and kernel launches.

use core::ffi::{c_char, c_int, c_uint, c_void};
use std::ffi::CStr;

use cudarc::driver::sys;

use super::{CUdeviceptr, CUfunction, CUmodule, CUstream, check};
use super::{cuda_error, driver_error};
use crate::error::CudaError;
use crate::error::Result;

// ----------------------------------------------------------------------------------------------
// Modules and functions
// ----------------------------------------------------------------------------------------------

/// Size of each JIT log buffer handed to `cuModuleLoadDataEx`.
const JIT_LOG_BYTES: usize = 64 * 1024;

/// Why `cuModuleLoadDataEx` failed: the driver's code and the JIT compiler's logs.
#[derive(Debug)]
pub(crate) struct ModuleLoadFailure {
    pub(crate) error: CudaError,
    pub(crate) error_log: String,
    pub(crate) info_log: String,
}

/// A code generation option of the PTX JIT at module load, passed by value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum JitOption {
    /// `CU_JIT_MAX_REGISTERS`.
    MaxRegisters(u32),
    /// `CU_JIT_OPTIMIZATION_LEVEL` (0 to 4).
    OptimizationLevel(u32),
    /// `CU_JIT_GENERATE_LINE_INFO`.
    LineInfo,
    /// `CU_JIT_GENERATE_DEBUG_INFO`.
    DebugInfo,
}

impl JitOption {
    /// The option and its value, as the driver's option arrays take them.
    pub(crate) fn raw(self) -> (sys::CUjit_option, usize) {
        match self {
            JitOption::MaxRegisters(n) => (sys::CUjit_option::CU_JIT_MAX_REGISTERS, n as usize),
            JitOption::OptimizationLevel(n) => {
                (sys::CUjit_option::CU_JIT_OPTIMIZATION_LEVEL, n as usize)
            }
            JitOption::LineInfo => (sys::CUjit_option::CU_JIT_GENERATE_LINE_INFO, 1),
            JitOption::DebugInfo => (sys::CUjit_option::CU_JIT_GENERATE_DEBUG_INFO, 1),
        }
    }
}

/// Loads a module (`cuModuleLoadDataEx`) with the JIT's error and info logs captured
/// (non-verbose), so a PTX the JIT rejects says why, and the code generation options `jit`
/// (which the driver applies to PTX it compiles).
///
/// # Safety
/// A context must be current; `image` must be a complete PTX (NUL-terminated), cubin or fatbin
/// image (the caller checked its kind and shape).
pub(crate) unsafe fn module_load_data_ex(
    image: &[u8],
    jit: &[JitOption],
) -> std::result::Result<CUmodule, ModuleLoadFailure> {
    let mut info = vec![0u8; JIT_LOG_BYTES];
    let mut error = vec![0u8; JIT_LOG_BYTES];
    let mut options = vec![
        sys::CUjit_option::CU_JIT_INFO_LOG_BUFFER,
        sys::CUjit_option::CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES,
        sys::CUjit_option::CU_JIT_ERROR_LOG_BUFFER,
        sys::CUjit_option::CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
        sys::CUjit_option::CU_JIT_LOG_VERBOSE,
    ];
    // Option values are pointer-sized slots: buffers by address, sizes and flags by value. The
    // size slots are in/out: the driver writes back how many bytes of each log it used.
    let mut values: Vec<*mut c_void> = vec![
        info.as_mut_ptr().cast(),
        core::ptr::without_provenance_mut(JIT_LOG_BYTES),
        error.as_mut_ptr().cast(),
        core::ptr::without_provenance_mut(JIT_LOG_BYTES),
        core::ptr::without_provenance_mut(0), // CU_JIT_LOG_VERBOSE off
    ];
    for option in jit {
        let (name, value) = option.raw();
        options.push(name);
        values.push(core::ptr::without_provenance_mut(value));
    }
    let mut m: CUmodule = core::ptr::null_mut();
    // SAFETY: a context is current and the image is complete (caller); the slice outlives the
    // call (the driver copies it); `options` and `values` have as many entries each, and the
    // log buffers have the announced sizes and outlive the call.
    let r = unsafe {
        sys::cuModuleLoadDataEx(
            &mut m,
            image.as_ptr().cast(),
            options.len() as c_uint,
            options.as_mut_ptr(),
            values.as_mut_ptr(),
        )
    };
    if r == sys::CUresult::CUDA_SUCCESS {
        return Ok(m);
    }
    Err(ModuleLoadFailure {
        error: cuda_error(r),
        error_log: jit_log(error, values[3].addr()),
        info_log: jit_log(info, values[1].addr()),
    })
}

/// The text of a JIT log buffer of which the driver says it used `used` bytes (clamped to the
/// buffer, cut at the first NUL, trailing whitespace trimmed).
pub(super) fn jit_log(mut buf: Vec<u8>, used: usize) -> String {
    buf.truncate(used.min(buf.len()));
    if let Some(nul) = buf.iter().position(|&b| b == 0) {
        buf.truncate(nul);
    }
    let text = String::from_utf8_lossy(&buf);
    text.trim_end().to_owned()
}

/// # Safety
/// `m` must be live and not used afterwards; its context must be current.
pub(crate) unsafe fn module_unload(m: CUmodule) -> Result<()> {
    // SAFETY: forwarded from the caller.
    check("cuModuleUnload", unsafe { sys::cuModuleUnload(m) })
}

/// `Ok(None)` when the module has no such function.
///
/// # Safety
/// `m` must be live.
pub(crate) unsafe fn module_get_function(m: CUmodule, name: &CStr) -> Result<Option<CUfunction>> {
    let mut f: CUfunction = core::ptr::null_mut();
    // SAFETY: valid out-pointer, NUL-terminated name; `m` live (caller).
    match unsafe { sys::cuModuleGetFunction(&mut f, m, name.as_ptr()) } {
        sys::CUresult::CUDA_SUCCESS => Ok(Some(f)),
        sys::CUresult::CUDA_ERROR_NOT_FOUND => Ok(None),
        r => Err(driver_error("cuModuleGetFunction", r)),
    }
}

/// `Ok(None)` when the module has no such global.
///
/// # Safety
/// `m` must be live.
pub(crate) unsafe fn module_get_global(
    m: CUmodule,
    name: &CStr,
) -> Result<Option<(CUdeviceptr, usize)>> {
    let mut p: CUdeviceptr = 0;
    let mut bytes: usize = 0;
    // SAFETY: valid out-pointers, NUL-terminated name; `m` live (caller).
    match unsafe { sys::cuModuleGetGlobal_v2(&mut p, &mut bytes, m, name.as_ptr()) } {
        sys::CUresult::CUDA_SUCCESS => Ok(Some((p, bytes))),
        sys::CUresult::CUDA_ERROR_NOT_FOUND => Ok(None),
        r => Err(driver_error("cuModuleGetGlobal", r)),
    }
}

/// The names of the kernels of a module (`cuModuleEnumerateFunctions`, CUDA 12.4+).
///
/// # Safety
/// `m` must be live.
pub(crate) unsafe fn module_function_names(m: CUmodule) -> Result<Vec<String>> {
    let mut count: c_uint = 0;
    // SAFETY: valid out-pointer; `m` live (caller).
    check("cuModuleGetFunctionCount", unsafe {
        sys::cuModuleGetFunctionCount(&mut count, m)
    })?;
    let mut funcs: Vec<CUfunction> = vec![core::ptr::null_mut(); count as usize];
    if count > 0 {
        // SAFETY: the array holds `count` handles.
        check("cuModuleEnumerateFunctions", unsafe {
            sys::cuModuleEnumerateFunctions(funcs.as_mut_ptr(), count, m)
        })?;
    }
    let mut names = Vec::with_capacity(funcs.len());
    for f in funcs {
        // SAFETY: `f` was just returned by the driver for a live module.
        names.push(unsafe { function_name(f) }?);
    }
    names.sort();
    Ok(names)
}

/// # Safety
/// `f` must be a live function handle.
pub(crate) unsafe fn function_name(f: CUfunction) -> Result<String> {
    let mut p: *const c_char = core::ptr::null();
    // SAFETY: valid out-pointer; `f` live (caller).
    check("cuFuncGetName", unsafe { sys::cuFuncGetName(&mut p, f) })?;
    if p.is_null() {
        return Ok(String::new());
    }
    // SAFETY: the driver returns a NUL-terminated name owned by the module.
    Ok(unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned())
}

/// # Safety
/// `f` must be a live function handle.
pub(crate) unsafe fn function_attribute(
    f: CUfunction,
    attr: sys::CUfunction_attribute,
) -> Result<i32> {
    let mut v: c_int = 0;
    // SAFETY: valid out-pointer; `f` live (caller).
    check("cuFuncGetAttribute", unsafe {
        sys::cuFuncGetAttribute(&mut v, attr, f)
    })?;
    Ok(v)
}

/// The byte sizes of a kernel's parameters (`cuFuncGetParamInfo`, CUDA 12.4+). The list ends
/// where the driver answers `CUDA_ERROR_INVALID_VALUE`: before CUDA 13.2 there is no
/// `cuFuncGetParamCount`, and the probe past the end is what detects an image with more
/// parameters than the Rust signature (compute-sanitizer reports that expected answer as an
/// API error). Any other answer is an error: a typed kernel is never handed out unchecked.
///
/// # Safety
/// `f` must be a live function handle.
pub(crate) unsafe fn function_param_sizes(f: CUfunction) -> Result<Vec<usize>> {
    let mut sizes = Vec::new();
    for index in 0.. {
        let (mut offset, mut size) = (0usize, 0usize);
        // SAFETY: valid out-pointers; `f` live (caller). Past the last parameter the driver
        // returns CUDA_ERROR_INVALID_VALUE, which ends the list.
        let r = unsafe { sys::cuFuncGetParamInfo(f, index, &mut offset, &mut size) };
        match r {
            sys::CUresult::CUDA_SUCCESS => sizes.push(size),
            sys::CUresult::CUDA_ERROR_INVALID_VALUE => return Ok(sizes),
            r => return Err(driver_error("cuFuncGetParamInfo", r)),
        }
    }
    Ok(sizes)
}

/// # Safety
/// `f` must be a live function handle.
pub(crate) unsafe fn function_set_attribute(
    f: CUfunction,
    attr: sys::CUfunction_attribute,
    value: i32,
) -> Result<()> {
    // SAFETY: `f` live (caller).
    check("cuFuncSetAttribute", unsafe {
        sys::cuFuncSetAttribute(f, attr, value)
    })
}

/// `(min_grid_size, block_size)` maximising occupancy.
///
/// # Safety
/// `f` must be a live function handle; its context current.
pub(crate) unsafe fn occupancy_max_potential_block_size(
    f: CUfunction,
    dynamic_shared_bytes: usize,
    block_size_limit: i32,
) -> Result<(i32, i32)> {
    let (mut min_grid, mut block): (c_int, c_int) = (0, 0);
    // SAFETY: valid out-pointers; no per-block-size callback; `f` live (caller).
    check("cuOccupancyMaxPotentialBlockSize", unsafe {
        sys::cuOccupancyMaxPotentialBlockSize(
            &mut min_grid,
            &mut block,
            f,
            None,
            dynamic_shared_bytes,
            block_size_limit,
        )
    })?;
    Ok((min_grid, block))
}

/// Enqueues a kernel: the raw `cuLaunchKernel`.
///
/// # Safety
/// `f` must be a live function of the current context, `s` a live stream of that context, and
/// `params` must point to one valid pointer per kernel parameter, each to a value of the
/// parameter's ABI type, valid for the duration of the call (the driver copies the values).
/// Whatever memory the kernel reaches through them must stay valid until it completes.
#[inline(always)]
pub(crate) unsafe fn launch_kernel(
    f: CUfunction,
    grid: [u32; 3],
    block: [u32; 3],
    shared_mem_bytes: u32,
    s: CUstream,
    params: *mut *mut c_void,
) -> sys::CUresult {
    // SAFETY: forwarded from the caller; no `extra` array.
    unsafe {
        sys::cuLaunchKernel(
            f,
            grid[0],
            grid[1],
            grid[2],
            block[0],
            block[1],
            block[2],
            shared_mem_bytes,
            s,
            params,
            core::ptr::null_mut(),
        )
    }
}

/// The launch attributes `cuLaunchKernelEx` and kernel graph nodes take, as plain data.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct LaunchAttrs {
    /// `CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION`.
    pub cluster: Option<[u32; 3]>,
    /// `CU_LAUNCH_ATTRIBUTE_COOPERATIVE`.
    pub cooperative: bool,
    /// `CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION`.
    pub programmatic: bool,
}

impl LaunchAttrs {
    /// The driver's attribute records (at most three).
    pub(crate) fn records(&self) -> Vec<sys::CUlaunchAttribute> {
        let mut out = Vec::with_capacity(3);
        let blank = || {
            // SAFETY: the attribute record is plain data; all-zero is a valid (empty) value.
            unsafe { core::mem::zeroed::<sys::CUlaunchAttribute>() }
        };
        if let Some([x, y, z]) = self.cluster {
            let mut a = blank();
            a.id = sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
            a.value.clusterDim.x = x;
            a.value.clusterDim.y = y;
            a.value.clusterDim.z = z;
            out.push(a);
        }
        if self.cooperative {
            let mut a = blank();
            a.id = sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
            a.value.cooperative = 1;
            out.push(a);
        }
        if self.programmatic {
            let mut a = blank();
            a.id = sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
            a.value.programmaticStreamSerializationAllowed = 1;
            out.push(a);
        }
        out
    }
}

fn launch_config(
    grid: [u32; 3],
    block: [u32; 3],
    shared_mem_bytes: u32,
    s: CUstream,
    attrs: &mut [sys::CUlaunchAttribute],
) -> sys::CUlaunchConfig {
    sys::CUlaunchConfig {
        gridDimX: grid[0],
        gridDimY: grid[1],
        gridDimZ: grid[2],
        blockDimX: block[0],
        blockDimY: block[1],
        blockDimZ: block[2],
        sharedMemBytes: shared_mem_bytes,
        hStream: s,
        attrs: attrs.as_mut_ptr(),
        numAttrs: attrs.len() as c_uint,
    }
}

/// Enqueues a kernel with launch attributes: the raw `cuLaunchKernelEx`.
///
/// # Safety
/// As [`launch_kernel`].
pub(crate) unsafe fn launch_kernel_ex(
    f: CUfunction,
    grid: [u32; 3],
    block: [u32; 3],
    shared_mem_bytes: u32,
    s: CUstream,
    params: *mut *mut c_void,
    attrs: &LaunchAttrs,
) -> sys::CUresult {
    let mut records = attrs.records();
    let config = launch_config(grid, block, shared_mem_bytes, s, &mut records);
    // SAFETY: forwarded from the caller; `config` and its attributes live for the call.
    unsafe { sys::cuLaunchKernelEx(&config, f, params, core::ptr::null_mut()) }
}

/// The largest cluster (in blocks) `f` can be launched with in this configuration
/// (`cuOccupancyMaxPotentialClusterSize`).
///
/// # Safety
/// `f` must be a live function handle; its context current.
pub(crate) unsafe fn occupancy_max_potential_cluster_size(
    f: CUfunction,
    grid: [u32; 3],
    block: [u32; 3],
    shared_mem_bytes: u32,
) -> Result<i32> {
    let mut records = LaunchAttrs {
        cluster: Some([1, 1, 1]),
        ..LaunchAttrs::default()
    }
    .records();
    // The query ignores the cluster dimension it is given; the grid only needs to be valid.
    let config = launch_config(
        grid,
        block,
        shared_mem_bytes,
        core::ptr::null_mut(),
        &mut records,
    );
    let mut size: c_int = 0;
    // SAFETY: valid out-pointer and configuration; `f` live (caller).
    check("cuOccupancyMaxPotentialClusterSize", unsafe {
        sys::cuOccupancyMaxPotentialClusterSize(&mut size, f, &config)
    })?;
    Ok(size)
}

/// Blocks of `threads` threads and `shared_mem_bytes` dynamic shared memory that fit on one
/// multiprocessor at once (`cuOccupancyMaxActiveBlocksPerMultiprocessor`).
///
/// # Safety
/// `f` must be a live function handle; its context current.
pub(crate) unsafe fn occupancy_max_active_blocks(
    f: CUfunction,
    threads: u32,
    shared_mem_bytes: u32,
) -> Result<i32> {
    let mut n: c_int = 0;
    // SAFETY: valid out-pointer; `f` live (caller).
    check("cuOccupancyMaxActiveBlocksPerMultiprocessor", unsafe {
        sys::cuOccupancyMaxActiveBlocksPerMultiprocessor(
            &mut n,
            f,
            threads as c_int,
            shared_mem_bytes as usize,
        )
    })?;
    Ok(n)
}

/// The fields of a tiled tensor map, as `cuTensorMapEncodeTiled` takes them.
#[derive(Debug, Clone, Copy)]
pub(crate) struct TiledMap {
    /// `CUtensorMapDataType` value.
    pub data_type: u32,
    pub rank: u32,
    pub base: u64,
    pub dims: [u64; 5],
    /// Bytes between indices of dimensions 1.. .
    pub strides: [u64; 4],
    pub boxes: [u32; 5],
    /// `CUtensorMapSwizzle` value (0 to 3).
    pub swizzle: u32,
}

/// Encodes a tiled tensor map (`cuTensorMapEncodeTiled`): element strides 1, no interleave,
/// 128-byte L2 promotion, out-of-bounds elements filled with zeros.
///
/// # Safety
/// The fields were checked against the driver's rules; `base` is device memory that outlives
/// every use of the map (the map itself holds no reference).
pub(crate) unsafe fn tensor_map_encode_tiled(m: &TiledMap) -> Result<[u64; 16]> {
    // SAFETY: `CUtensorMap` is 128 bytes of plain data.
    let mut map: sys::CUtensorMap = unsafe { core::mem::zeroed() };
    let elem_strides = [1u32; 5];
    // SAFETY: the enum values come from the checked fields (`data_type` < 13, `swizzle` < 4).
    let (data_type, swizzle) = unsafe {
        (
            core::mem::transmute::<u32, sys::CUtensorMapDataType>(m.data_type),
            core::mem::transmute::<u32, sys::CUtensorMapSwizzle>(m.swizzle),
        )
    };
    // SAFETY: valid pointers to arrays of `rank` (strides: `rank - 1`) entries; `map` is the
    // 128-byte out-parameter.
    check("cuTensorMapEncodeTiled", unsafe {
        sys::cuTensorMapEncodeTiled(
            &mut map,
            data_type,
            m.rank,
            m.base as *mut c_void,
            m.dims.as_ptr(),
            m.strides.as_ptr(),
            m.boxes.as_ptr(),
            elem_strides.as_ptr(),
            sys::CUtensorMapInterleave::CU_TENSOR_MAP_INTERLEAVE_NONE,
            swizzle,
            sys::CUtensorMapL2promotion::CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
            sys::CUtensorMapFloatOOBfill::CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE,
        )
    })?;
    // SAFETY: 128 bytes of plain data, read as 16 words.
    Ok(unsafe { core::mem::transmute::<sys::CUtensorMap, [u64; 16]>(map) })
}
