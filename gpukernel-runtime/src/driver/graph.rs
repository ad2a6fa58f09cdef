//! CUDA graphs: building, instantiating, launching and updating them.
//!
//! The `_v2` entry points of CUDA 12+ are used where the unsuffixed name is an older ABI
//! (`cuGraphAddKernelNode_v2` and `cuGraphExecKernelNodeSetParams_v2` take
//! `CUDA_KERNEL_NODE_PARAMS_v2`, whose `kern` and `ctx` fields are left null so `func` is used;
//! `cuGraphExecUpdate_v2` reports through `CUgraphExecUpdateResultInfo`).

use core::ffi::c_void;

use cudarc::driver::sys;

use super::{CUcontext, CUdeviceptr, CUevent, CUfunction, CUstream, check};
use crate::error::Result;

pub(crate) use sys::{CUgraph, CUgraphExec, CUgraphNode};

/// A host function called by a host node (`CUhostFn`).
pub(crate) type HostFn = unsafe extern "C" fn(*mut c_void);

/// # Safety
/// A context must be current on this thread.
pub(crate) unsafe fn graph_create() -> Result<CUgraph> {
    let mut g: CUgraph = core::ptr::null_mut();
    // SAFETY: valid out-pointer; flags must be 0.
    check("cuGraphCreate", unsafe { sys::cuGraphCreate(&mut g, 0) })?;
    Ok(g)
}

/// # Safety
/// `g` must be a live graph, not used afterwards.
pub(crate) unsafe fn graph_destroy(g: CUgraph) -> Result<()> {
    // SAFETY: the caller gives `g` up.
    check("cuGraphDestroy", unsafe { sys::cuGraphDestroy(g) })
}

/// Adds a kernel node. The driver copies the parameter values.
///
/// # Safety
/// `g` is live; `deps` are nodes of `g`; `f` is a live function of the current context and
/// `params` holds one pointer per parameter, each to a value of the parameter's type.
pub(crate) unsafe fn graph_add_kernel(
    g: CUgraph,
    deps: &[CUgraphNode],
    f: CUfunction,
    grid: [u32; 3],
    block: [u32; 3],
    shared_mem_bytes: u32,
    params: *mut *mut c_void,
) -> Result<CUgraphNode> {
    let p = kernel_params(f, grid, block, shared_mem_bytes, params);
    let mut n: CUgraphNode = core::ptr::null_mut();
    // SAFETY: forwarded from the caller; `p` lives for the call.
    check("cuGraphAddKernelNode", unsafe {
        sys::cuGraphAddKernelNode_v2(&mut n, g, deps.as_ptr(), deps.len(), &p)
    })?;
    Ok(n)
}

fn kernel_params(
    f: CUfunction,
    grid: [u32; 3],
    block: [u32; 3],
    shared_mem_bytes: u32,
    params: *mut *mut c_void,
) -> sys::CUDA_KERNEL_NODE_PARAMS {
    sys::CUDA_KERNEL_NODE_PARAMS {
        func: f,
        gridDimX: grid[0],
        gridDimY: grid[1],
        gridDimZ: grid[2],
        blockDimX: block[0],
        blockDimY: block[1],
        blockDimZ: block[2],
        sharedMemBytes: shared_mem_bytes,
        kernelParams: params,
        extra: core::ptr::null_mut(),
        // Null `kern` and `ctx`: the driver uses `func` (a CUfunction of the current context).
        kern: core::ptr::null_mut(),
        ctx: core::ptr::null_mut(),
    }
}

/// One end of a copy node.
#[derive(Debug, Clone, Copy)]
pub(crate) enum CopyEnd {
    Host(*mut c_void),
    Device(CUdeviceptr),
}

/// Adds a one-dimensional copy node of `bytes` bytes.
///
/// # Safety
/// `g` is live, `deps` are its nodes, `ctx` is current; both ends are valid for `bytes` bytes
/// whenever an instantiation of the graph runs.
pub(crate) unsafe fn graph_add_memcpy(
    g: CUgraph,
    deps: &[CUgraphNode],
    dst: CopyEnd,
    src: CopyEnd,
    bytes: usize,
    ctx: CUcontext,
) -> Result<CUgraphNode> {
    use sys::CUmemorytype::{CU_MEMORYTYPE_DEVICE, CU_MEMORYTYPE_HOST};
    // Every field spelled out: the memory-type enums have no zero value, so an all-zero
    // struct is not a valid Rust value.
    let (src_type, src_host, src_device) = match src {
        CopyEnd::Host(h) => (CU_MEMORYTYPE_HOST, h.cast_const(), 0),
        CopyEnd::Device(d) => (CU_MEMORYTYPE_DEVICE, core::ptr::null(), d),
    };
    let (dst_type, dst_host, dst_device) = match dst {
        CopyEnd::Host(h) => (CU_MEMORYTYPE_HOST, h, 0),
        CopyEnd::Device(d) => (CU_MEMORYTYPE_DEVICE, core::ptr::null_mut(), d),
    };
    let p = sys::CUDA_MEMCPY3D {
        srcXInBytes: 0,
        srcY: 0,
        srcZ: 0,
        srcLOD: 0,
        srcMemoryType: src_type,
        srcHost: src_host,
        srcDevice: src_device,
        srcArray: core::ptr::null_mut(),
        reserved0: core::ptr::null_mut(),
        srcPitch: 0,
        srcHeight: 0,
        dstXInBytes: 0,
        dstY: 0,
        dstZ: 0,
        dstLOD: 0,
        dstMemoryType: dst_type,
        dstHost: dst_host,
        dstDevice: dst_device,
        dstArray: core::ptr::null_mut(),
        reserved1: core::ptr::null_mut(),
        dstPitch: 0,
        dstHeight: 0,
        WidthInBytes: bytes,
        Height: 1,
        Depth: 1,
    };
    let mut n: CUgraphNode = core::ptr::null_mut();
    // SAFETY: forwarded from the caller; `p` lives for the call.
    check("cuGraphAddMemcpyNode", unsafe {
        sys::cuGraphAddMemcpyNode(&mut n, g, deps.as_ptr(), deps.len(), &p, ctx)
    })?;
    Ok(n)
}

/// Adds a byte-fill node.
///
/// # Safety
/// `g` is live, `deps` are its nodes, `ctx` is current; `dst` is `bytes` of device memory
/// whenever an instantiation runs.
pub(crate) unsafe fn graph_add_memset(
    g: CUgraph,
    deps: &[CUgraphNode],
    dst: CUdeviceptr,
    value: u8,
    bytes: usize,
    ctx: CUcontext,
) -> Result<CUgraphNode> {
    let p = sys::CUDA_MEMSET_NODE_PARAMS {
        dst,
        pitch: 0,
        value: value as u32,
        elementSize: 1,
        width: bytes,
        height: 1,
    };
    let mut n: CUgraphNode = core::ptr::null_mut();
    // SAFETY: forwarded from the caller.
    check("cuGraphAddMemsetNode", unsafe {
        sys::cuGraphAddMemsetNode(&mut n, g, deps.as_ptr(), deps.len(), &p, ctx)
    })?;
    Ok(n)
}

/// Adds a host node calling `f(data)`.
///
/// # Safety
/// `g` is live and `deps` are its nodes; `f(data)` is sound to call from a driver thread
/// whenever an instantiation runs.
pub(crate) unsafe fn graph_add_host(
    g: CUgraph,
    deps: &[CUgraphNode],
    f: HostFn,
    data: *mut c_void,
) -> Result<CUgraphNode> {
    let p = sys::CUDA_HOST_NODE_PARAMS {
        fn_: Some(f),
        userData: data,
    };
    let mut n: CUgraphNode = core::ptr::null_mut();
    // SAFETY: forwarded from the caller.
    check("cuGraphAddHostNode", unsafe {
        sys::cuGraphAddHostNode(&mut n, g, deps.as_ptr(), deps.len(), &p)
    })?;
    Ok(n)
}

/// Adds an empty node (a join point).
///
/// # Safety
/// `g` is live and `deps` are its nodes.
pub(crate) unsafe fn graph_add_empty(g: CUgraph, deps: &[CUgraphNode]) -> Result<CUgraphNode> {
    let mut n: CUgraphNode = core::ptr::null_mut();
    // SAFETY: forwarded from the caller.
    check("cuGraphAddEmptyNode", unsafe {
        sys::cuGraphAddEmptyNode(&mut n, g, deps.as_ptr(), deps.len())
    })?;
    Ok(n)
}

/// Adds an event record node (`record == true`: records `event` when it runs) or an event
/// wait node (the node's successors wait for `event`'s last record).
///
/// # Safety
/// `g` is live and `deps` are its nodes; `event` is a live event of the current context
/// whenever an instantiation of the graph runs.
pub(crate) unsafe fn graph_add_event(
    g: CUgraph,
    deps: &[CUgraphNode],
    event: CUevent,
    record: bool,
) -> Result<CUgraphNode> {
    let mut n: CUgraphNode = core::ptr::null_mut();
    if record {
        // SAFETY: forwarded from the caller.
        check("cuGraphAddEventRecordNode", unsafe {
            sys::cuGraphAddEventRecordNode(&mut n, g, deps.as_ptr(), deps.len(), event)
        })?;
    } else {
        // SAFETY: forwarded from the caller.
        check("cuGraphAddEventWaitNode", unsafe {
            sys::cuGraphAddEventWaitNode(&mut n, g, deps.as_ptr(), deps.len(), event)
        })?;
    }
    Ok(n)
}

/// Adds a child graph node running a copy of `child` (the driver clones it in this call).
///
/// # Safety
/// `g` and `child` are live, distinct graphs, `deps` are nodes of `g`; `child` has no
/// conditional node; what `child`'s nodes reach stays valid whenever an instantiation of `g`
/// runs.
pub(crate) unsafe fn graph_add_child(
    g: CUgraph,
    deps: &[CUgraphNode],
    child: CUgraph,
) -> Result<CUgraphNode> {
    let mut n: CUgraphNode = core::ptr::null_mut();
    // SAFETY: forwarded from the caller.
    check("cuGraphAddChildGraphNode", unsafe {
        sys::cuGraphAddChildGraphNode(&mut n, g, deps.as_ptr(), deps.len(), child)
    })?;
    Ok(n)
}

/// Makes `to` depend on `from`.
///
/// # Safety
/// `g` is live; both nodes belong to it.
pub(crate) unsafe fn graph_add_dependency(
    g: CUgraph,
    from: CUgraphNode,
    to: CUgraphNode,
) -> Result<()> {
    // SAFETY: forwarded from the caller; one edge, no edge data.
    check("cuGraphAddDependencies", unsafe {
        sys::cuGraphAddDependencies_v2(g, &from, &to, core::ptr::null(), 1)
    })
}

/// Makes `to` a programmatic dependent of `from` (both kernel nodes): `to` may start once
/// every block of `from` has called `griddepcontrol.launch_dependents` or exited, and its
/// `griddepcontrol.wait` returns when `from` has completed and its memory is visible
/// (`CU_GRAPH_DEPENDENCY_TYPE_PROGRAMMATIC` from `CU_GRAPH_KERNEL_NODE_PORT_PROGRAMMATIC`).
///
/// # Safety
/// `g` is live; both nodes belong to it.
pub(crate) unsafe fn graph_add_programmatic_dependency(
    g: CUgraph,
    from: CUgraphNode,
    to: CUgraphNode,
) -> Result<()> {
    let edge = sys::CUgraphEdgeData {
        from_port: sys::CU_GRAPH_KERNEL_NODE_PORT_PROGRAMMATIC as u8,
        to_port: 0,
        type_: sys::CUgraphDependencyType::CU_GRAPH_DEPENDENCY_TYPE_PROGRAMMATIC as u8,
        reserved: [0; 5],
    };
    // SAFETY: forwarded from the caller; one edge with its data.
    check("cuGraphAddDependencies (programmatic)", unsafe {
        sys::cuGraphAddDependencies_v2(g, &from, &to, &edge, 1)
    })
}

/// # Safety
/// `g` is live and a context is current.
pub(crate) unsafe fn graph_instantiate(g: CUgraph) -> Result<CUgraphExec> {
    let mut e: CUgraphExec = core::ptr::null_mut();
    // SAFETY: valid out-pointer; `g` is live (caller); no flags.
    check("cuGraphInstantiateWithFlags", unsafe {
        sys::cuGraphInstantiateWithFlags(&mut e, g, 0)
    })?;
    Ok(e)
}

/// # Safety
/// `e` is live and not used afterwards.
pub(crate) unsafe fn graph_exec_destroy(e: CUgraphExec) -> Result<()> {
    // SAFETY: the caller gives `e` up; an in-flight launch completes first (the driver frees
    // it asynchronously).
    check("cuGraphExecDestroy", unsafe { sys::cuGraphExecDestroy(e) })
}

/// Returns the raw result, so the caller can classify a sticky fault.
///
/// # Safety
/// `e` and `s` are live and of the current context.
pub(crate) unsafe fn graph_launch(e: CUgraphExec, s: CUstream) -> sys::CUresult {
    // SAFETY: forwarded from the caller.
    unsafe { sys::cuGraphLaunch(e, s) }
}

/// Replaces a kernel node's launch parameters in an instantiated graph (same function).
///
/// # Safety
/// As [`graph_add_kernel`]; `node` is the node of the graph `e` was instantiated from.
pub(crate) unsafe fn graph_exec_kernel_set_params(
    e: CUgraphExec,
    node: CUgraphNode,
    f: CUfunction,
    grid: [u32; 3],
    block: [u32; 3],
    shared_mem_bytes: u32,
    params: *mut *mut c_void,
) -> Result<()> {
    let p = kernel_params(f, grid, block, shared_mem_bytes, params);
    // SAFETY: forwarded from the caller.
    check("cuGraphExecKernelNodeSetParams", unsafe {
        sys::cuGraphExecKernelNodeSetParams_v2(e, node, &p)
    })
}

/// Why `cuGraphExecUpdate` refused: the driver's result code name.
pub(crate) type UpdateRefusal = &'static str;

/// Updates `e` to the parameters of `g` (same topology). `Ok(Err(reason))` when the driver
/// refuses the update (the exec is unchanged and still usable).
///
/// # Safety
/// `e` and `g` are live.
pub(crate) unsafe fn graph_exec_update(
    e: CUgraphExec,
    g: CUgraph,
) -> Result<core::result::Result<(), UpdateRefusal>> {
    // Never a Rust value of the struct: its `result` enum has codes these bindings may not
    // know (and no zero value), so the driver writes into zeroed bytes read as integers.
    let mut info = core::mem::MaybeUninit::<sys::CUgraphExecUpdateResultInfo>::zeroed();
    // SAFETY: forwarded from the caller; valid out-pointer to writable memory of the size.
    let r = unsafe { sys::cuGraphExecUpdate_v2(e, g, info.as_mut_ptr()) };
    // SAFETY: the bytes are initialised (zeroed, then maybe written); `result` is a
    // `repr(u32)` field, read as a plain u32.
    let code = unsafe { (&raw const (*info.as_ptr()).result).cast::<u32>().read() };
    let reason = match code {
        0 => None,
        2 => Some("the topology changed"),
        3 => Some("a node's type changed"),
        4 => Some("a kernel node's function changed"),
        5 => Some("a node's parameters changed in a way that cannot be updated"),
        6 => Some("the update is not supported"),
        7 => Some("the function change is not supported"),
        8 => Some("node attributes changed"),
        _ => Some("CU_GRAPH_EXEC_UPDATE_ERROR"),
    };
    match reason {
        Some(reason) => Ok(Err(reason)),
        None if r == sys::CUresult::CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE => {
            Ok(Err("CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE"))
        }
        None => check("cuGraphExecUpdate", r).map(Ok),
    }
}

/// Creates a conditional handle for a conditional node of `g`, its value set to `default` at
/// the start of each launch (`CU_GRAPH_COND_ASSIGN_DEFAULT`).
///
/// # Safety
/// `g` is live and `ctx` current.
pub(crate) unsafe fn graph_conditional_handle(
    g: CUgraph,
    ctx: CUcontext,
    default: u32,
) -> Result<u64> {
    let mut h: sys::CUgraphConditionalHandle = 0;
    // SAFETY: valid out-pointer; forwarded from the caller.
    check("cuGraphConditionalHandleCreate", unsafe {
        sys::cuGraphConditionalHandleCreate(
            &mut h,
            g,
            ctx,
            default,
            sys::CU_GRAPH_COND_ASSIGN_DEFAULT,
        )
    })?;
    Ok(h)
}

/// Adds a conditional node (`if` when `is_while` is false, else `while`) reading `handle`,
/// with one body graph, which the node owns; returns the node and its body.
///
/// # Safety
/// `g` is live, `deps` are its nodes, `handle` was created for `g`, `ctx` is current.
pub(crate) unsafe fn graph_add_conditional(
    g: CUgraph,
    deps: &[CUgraphNode],
    handle: u64,
    is_while: bool,
    ctx: CUcontext,
) -> Result<(CUgraphNode, CUgraph)> {
    use sys::CUgraphConditionalNodeType::{CU_GRAPH_COND_TYPE_IF, CU_GRAPH_COND_TYPE_WHILE};
    // The union is zeroed and then the conditional member written as a whole: its other
    // members are unused, and the struct's enums are only ever written with valid values.
    let mut p = core::mem::MaybeUninit::<sys::CUgraphNodeParams>::zeroed();
    let cond = sys::CUDA_CONDITIONAL_NODE_PARAMS {
        handle,
        type_: if is_while {
            CU_GRAPH_COND_TYPE_WHILE
        } else {
            CU_GRAPH_COND_TYPE_IF
        },
        size: 1,
        // Written by the driver: a CUDA-owned array of the node's `size` body graphs.
        phGraph_out: core::ptr::null_mut(),
        ctx,
    };
    // SAFETY: writes into zeroed memory of the struct's size, field by field, with valid
    // values (`type_` a valid `CUgraphNodeType`).
    unsafe {
        let raw = p.as_mut_ptr();
        (&raw mut (*raw).type_).write(sys::CUgraphNodeType::CU_GRAPH_NODE_TYPE_CONDITIONAL);
        (&raw mut (*raw).__bindgen_anon_1.conditional).write(cond);
    }
    let mut n: CUgraphNode = core::ptr::null_mut();
    // SAFETY: forwarded from the caller; `p` lives for the call.
    check("cuGraphAddNode", unsafe {
        sys::cuGraphAddNode_v2(
            &mut n,
            g,
            deps.as_ptr(),
            core::ptr::null(),
            deps.len(),
            p.as_mut_ptr(),
        )
    })?;
    // SAFETY: the driver filled `phGraph_out` with an array of `size` (1) body graphs, valid
    // for the node's lifetime; the conditional member is the one written above.
    let body = unsafe {
        let out = (*p.as_ptr()).__bindgen_anon_1.conditional.phGraph_out;
        if out.is_null() {
            core::ptr::null_mut()
        } else {
            *out
        }
    };
    if body.is_null() {
        return Err(crate::error::Error::Driver {
            call: "cuGraphAddNode",
            error: super::cuda_error(sys::CUresult::CUDA_ERROR_INVALID_VALUE),
            context: Some("the conditional node came back without a body graph".to_owned()),
        });
    }
    Ok((n, body))
}

/// Sets the launch attributes of kernel node `n` (`cuGraphKernelNodeSetAttribute`, one call
/// per attribute).
///
/// # Safety
/// `n` is a live kernel node.
pub(crate) unsafe fn graph_kernel_node_set_attrs(
    n: CUgraphNode,
    attrs: &super::module::LaunchAttrs,
) -> Result<()> {
    for a in attrs.records() {
        // SAFETY: `n` live (caller); the value is a valid attribute value for `a.id`.
        check("cuGraphKernelNodeSetAttribute", unsafe {
            sys::cuGraphKernelNodeSetAttribute(n, a.id, &a.value)
        })?;
    }
    Ok(())
}
