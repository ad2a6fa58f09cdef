//! CUDA graphs: a set of kernel launches, copies, memsets, host calls, event records and waits,
//! and child graphs, with dependencies between them, built once ([`Graph`]), instantiated
//! ([`GraphExec`]) and launched many times on a stream at the cost of one launch.
//!
//! # Soundness
//! - **Lifetimes.** A `Graph<'a>` and every `GraphExec<'a>` made from it borrow the memory
//!   their nodes use for `'a`: kernel arguments and copy ends must outlive `'a` (`A: 'a`), so
//!   a buffer cannot be dropped, moved or written by the host while a graph that uses it can
//!   still run. To use one buffer in several nodes, register it once:
//!   [`Graph::buffer`] (read by the nodes) or [`Graph::buffer_mut`] (read and written), which
//!   borrow it for `'a` and return a `Copy` handle the nodes take.
//! - **Order inside a graph.** Nodes that use overlapping bytes of one allocation, one of them
//!   writing, are ordered in the order they were added (an edge is added for them, as a stream
//!   would order them); other nodes run concurrently unless given explicit dependencies.
//! - **Order with other work.** [`GraphExec::launch`] orders the launch on its stream after
//!   the pending conflicting work on every allocation the graph uses, and later work after it
//!   (the buffers' stream trackers), exactly as a kernel launch does.
//! - **Host nodes** run `Send + 'static` closures owned by the graph and dropped with the last
//!   `Graph`/`GraphExec` that holds them, after the launches that may call them are done.
//! - **Dropping** a `GraphExec` waits for the streams it was launched on, so nothing borrowed
//!   for `'a` is released while a launch may use it.
//! - **Event nodes** ([`Graph::add_event_record`], [`Graph::add_event_wait`]) borrow their
//!   event for `'a`. **Child graph nodes** ([`Graph::add_child`]) run a copy of a graph of the
//!   same `'a`: its memory uses become the node's (ordered and replayed like the parent's
//!   own) and the parent keeps its kernel arguments and host closures.
//!
//! Kernel arguments are typed and checked exactly as for [`Stream::launch`]: an `unsafe fn`
//! kernel needs [`Graph::add_kernel_unchecked`].
//!
//! A buffer a graph uses cannot be dropped while the graph exists:
//!
//! ```compile_fail
//! # fn f(ctx: &gpukernel_runtime::Context) -> gpukernel_runtime::Result<()> {
//! let mut y = ctx.alloc_zeros::<f32>(16)?;
//! let graph = ctx.new_graph("g")?;
//! let yb = graph.buffer_mut(&mut y);
//! graph.add_memset_zeros(&[], yb)?;
//! drop(y); // error: `y` is borrowed by the graph
//! graph.instantiate()?;
//! # Ok(()) }
//! ```
//!
//! nor read by the host while an instantiation exists:
//!
//! ```compile_fail
//! # fn f(ctx: &gpukernel_runtime::Context) -> gpukernel_runtime::Result<()> {
//! let mut y = ctx.alloc_zeros::<f32>(16)?;
//! let mut host = vec![0.0f32; 16];
//! let graph = ctx.new_graph("g")?;
//! let yb = graph.buffer_mut(&mut y);
//! graph.add_memcpy_dtoh(&[], &mut host, yb)?;
//! let exec = graph.instantiate()?;
//! drop(graph);
//! println!("{}", host[0]); // error: `host` is borrowed by the instantiation
//! exec.launch(&ctx.default_stream())?;
//! # Ok(()) }
//! ```

mod build;
mod capture;
mod child;
mod conditional;
mod exec;
mod order;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_child;
#[cfg(test)]
mod tests_conditional;
mod uses;

use core::ffi::c_void;
use core::marker::PhantomData;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use gpukernel_device::{AnyBitPattern, DeviceCopy, Kernel, SafeKernel, SimEntry};

use crate::backend::{
    CopyEnd, FunctionInfo, GraphExecHandle, GraphHandle, GraphNode, LaunchDesc, NodeHandle,
};
use crate::context::{Context, ContextInner, intern};
use crate::error::{Error, Result};
use crate::event::Event;
use crate::launch::args::Lent;
use crate::launch::{LaunchArgs, LaunchConfig, Safe};
use crate::memory::tracker::{Access, Tracker};
use crate::memory::{DeviceBuffer, DeviceSlice, RawParts};
use crate::module::{ModuleInner, TypedKernel};
use crate::stream::Stream;

use build::*;
pub use build::{Graph, Node};
pub(crate) use build::{in_host_node, not_in_host_node};
pub use capture::Capture;
pub use conditional::ConditionalHandle;
pub use exec::GraphExec;
use exec::*;
use order::*;
pub(crate) use uses::NodeUses;
use uses::*;
pub use uses::{GraphBuffer, GraphBufferMut};
