//! How nodes are ordered and lowered: the frontier of memory uses and conditional handles
//! that gives a new node its edges, cycle detection, and the small conversions the node
//! builders share.

use super::*;

/// Records a node the backend has added: its uses join the frontier (replacing the uses
/// inside the ranges it writes, except those of its `programmatic` dependencies: the node's
/// completion does not imply theirs). Returns its index.
pub(super) fn push_node<'a>(
    st: &mut State<'a>,
    handle: NodeHandle,
    deps: Vec<usize>,
    programmatic: Vec<usize>,
    rec: Recorded,
    kernel: Option<Arc<KernelInfo>>,
    kept: Option<KeptBox<'a>>,
) -> usize {
    let index = st.nodes.len();
    let Recorded {
        uses,
        conds,
        body_kernels,
        events,
    } = rec;
    for u in &uses {
        if u.writes() {
            // Uses inside the written range are ordered before this node now.
            let mut i = 0;
            while i < st.frontier.len() {
                let f = st.frontier[i];
                if !programmatic.contains(&st.frontier_node[i])
                    && core::ptr::eq(f.tracker, u.tracker)
                    && u.span.0 <= f.span.0
                    && f.span.1 <= u.span.1
                {
                    st.frontier.swap_remove(i);
                    st.frontier_node.swap_remove(i);
                } else {
                    i += 1;
                }
            }
        }
        st.frontier.push(*u);
        st.frontier_node.push(index);
    }
    st.nodes.push(NodeState {
        handle,
        deps,
        programmatic,
        uses,
        kernel,
        conds,
        body_kernels,
        events,
    });
    st.kept.extend(kept.map(Arc::new));
    index
}

/// Adds to `deps` the earlier nodes `rec` must follow: those whose memory uses conflict with
/// its own (overlapping bytes, one of them writing), and those that set one of its
/// conditional handles.
pub(super) fn conflicts(st: &State<'_>, rec: &Recorded, deps: &mut Vec<usize>) {
    for u in &rec.uses {
        for (f, &n) in st.frontier.iter().zip(&st.frontier_node) {
            if f.overlaps(u) && (f.writes() || u.writes()) && !deps.contains(&n) {
                deps.push(n);
            }
        }
    }
    for (n, node) in st.nodes.iter().enumerate() {
        if node.conds.iter().any(|c| rec.conds.contains(c)) && !deps.contains(&n) {
            deps.push(n);
        }
    }
}

pub(super) fn name_error(e: Error, name: &str) -> Error {
    match e {
        Error::GraphCycle { nodes, .. } => Error::GraphCycle {
            graph: name.to_owned(),
            nodes,
        },
        Error::GraphUpdateRefused { reason, .. } => Error::GraphUpdateRefused {
            graph: name.to_owned(),
            reason,
        },
        e => e,
    }
}

pub(super) fn owner_name(id: u64) -> String {
    format!("#{id}")
}

pub(super) fn check_len(
    operation: &'static str,
    destination: usize,
    source_len: usize,
) -> Result<()> {
    if destination == source_len {
        Ok(())
    } else {
        Err(Error::LengthMismatch {
            operation,
            destination,
            source_len,
        })
    }
}

pub(super) fn copy_node(dst: CopyEnd, src: CopyEnd, bytes: usize) -> GraphNode<'static, 'static> {
    if bytes == 0 {
        GraphNode::Empty
    } else {
        GraphNode::Copy { dst, src, bytes }
    }
}

pub(super) fn desc_of<'k>(info: &'k KernelInfo, config: &LaunchConfig) -> LaunchDesc<'k> {
    LaunchDesc {
        function: info.info.handle,
        name: info.name,
        sim_entry: info.sim_entry,
        grid: config.grid.to_array(),
        block: config.block.to_array(),
        shared_mem_bytes: config.shared_mem_bytes,
        stream: crate::backend::StreamHandle::NULL,
        ffi: info.module.ffi.as_ref().map(|t| &t.record),
        // A node's programmatic dependence is its edges', not an attribute of the node.
        attributes: crate::launch::LaunchAttributes {
            programmatic_dependent: false,
            ..config.attributes
        },
    }
}

/// Boxes the ABI values (so their addresses are stable) and points a parameter array at them.
pub(super) fn pack<'a, K: Kernel, A: LaunchArgs<K::Params> + 'a>(
    abi: A::Abi,
) -> (KeptBox<'a>, Vec<*mut c_void>)
where
    A::Abi: 'a,
{
    let mut abi = Box::new(abi);
    let mut params = crate::launch::args::abi::ParamArray::new();
    A::fill(&mut abi, &mut params);
    (KeptBox(abi), params.as_mut_slice().to_vec())
}

/// A cycle in the graph `deps` (node `i` depends on each of `deps[i]`), as node indices in
/// dependency order, or `None`.
pub(super) fn find_cycle(deps: &[&[usize]]) -> Option<Vec<usize>> {
    // Iterative depth-first search: 0 unvisited, 1 on the stack, 2 done.
    let n = deps.len();
    let mut mark = vec![0u8; n];
    for root in 0..n {
        if mark[root] != 0 {
            continue;
        }
        let mut stack: Vec<(usize, usize)> = vec![(root, 0)];
        mark[root] = 1;
        while let Some(&mut (v, ref mut next)) = stack.last_mut() {
            if let Some(&d) = deps[v].get(*next) {
                *next += 1;
                match mark[d] {
                    0 => {
                        mark[d] = 1;
                        stack.push((d, 0));
                    }
                    1 => {
                        let from = stack.iter().position(|&(x, _)| x == d).unwrap_or(0);
                        let mut cycle: Vec<usize> = stack[from..].iter().map(|&(x, _)| x).collect();
                        cycle.reverse();
                        return Some(cycle);
                    }
                    _ => {}
                }
            } else {
                mark[v] = 2;
                stack.pop();
            }
        }
    }
    None
}
