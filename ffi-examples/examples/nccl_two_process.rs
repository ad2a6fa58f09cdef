//! Two processes, one rank each, joined by a unique id: rank 0 makes the id
//! (`ncclGetUniqueId`), starts rank 1 as a child process (this program again, the id in the
//! environment variable `GPUKERNEL_NCCL_ID`, its rank in `GPUKERNEL_NCCL_RANK`), both make
//! their communicator with `Communicator::init_rank` on their own GPU, all-reduce a buffer and
//! check the sum. Any channel works for the id (a file, a socket, MPI): it is 128 bytes.
//!
//! `NCCL_NVLS_ENABLE=0` is set for both processes when unset (NVLink multicast stays off on
//! shared machines); build with `--features nccl` for GPUs. On two GPUs it runs two processes;
//! on the simulator the same code runs its ranks as two threads of one process (the simulator's
//! devices live in one process); with one GPU it says it needs two and exits with status 2.

use std::process::{Command, ExitCode};

use gpukernel_runtime::collective::{Communicator, ReduceOp, UniqueId};
use gpukernel_runtime::{Context, Device};

const N: usize = 1 << 20;
const ID_VAR: &str = "GPUKERNEL_NCCL_ID";
const RANK_VAR: &str = "GPUKERNEL_NCCL_RANK";

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Rank `rank`'s part: join, all-reduce `rank + 1` everywhere, check `1 + 2`.
fn rank_main(ctx: &Context, id: &UniqueId, rank: usize) -> Result<(), BoxError> {
    let comm = Communicator::init_rank(ctx, id, rank, 2)?;
    let mut buf = ctx.htod_copy(&vec![(rank + 1) as f32; N])?;
    comm.all_reduce_in_place(&ctx.default_stream(), &mut buf, ReduceOp::Sum)?;
    let got = buf.to_host_vec()?;
    if got.iter().any(|&v| v != 3.0) {
        return Err(format!("rank {rank}: wrong sum {:?}", &got[..4]).into());
    }
    println!(
        "rank {rank} on {}: all-reduce of {N} floats = 3.0 everywhere",
        ctx.device()
    );
    Ok(())
}

fn main() -> ExitCode {
    if std::env::var_os("NCCL_NVLS_ENABLE").is_none() {
        // SAFETY: no other thread exists yet; the child inherits it.
        unsafe { std::env::set_var("NCCL_NVLS_ENABLE", "0") };
    }
    match run() {
        Ok(code) => code,
        Err(e) => {
            eprintln!("nccl_two_process: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> Result<ExitCode, BoxError> {
    // The child: rank 1, on GPU 1.
    if let (Ok(hex), Ok(rank)) = (std::env::var(ID_VAR), std::env::var(RANK_VAR)) {
        let rank: usize = rank.parse()?;
        let ctx = Device::get(rank)?.primary_context()?;
        rank_main(&ctx, &UniqueId::from_hex(&hex)?, rank)?;
        return Ok(ExitCode::SUCCESS);
    }
    let device = Device::default_device()?;
    if device.is_simulator() {
        // One process: the ranks are threads, on simulated device 0 (any device works).
        let ctx = device.primary_context()?;
        let id = UniqueId::new(&ctx)?;
        let other = {
            let (ctx, id) = (ctx.clone(), id);
            std::thread::spawn(move || rank_main(&ctx, &id, 1))
        };
        rank_main(&ctx, &id, 0)?;
        other.join().map_err(|_| "rank 1 panicked")??;
        println!("nccl_two_process: ran as two threads on the simulator");
        return Ok(ExitCode::SUCCESS);
    }
    let count = Device::count()?;
    if count < 2 {
        println!("nccl_two_process: SKIPPED: needs 2 GPUs, found {count} (not a pass)");
        return Ok(ExitCode::from(2));
    }
    let ctx = device.primary_context()?;
    let id = UniqueId::new(&ctx)?;
    let mut child = Command::new(std::env::current_exe()?)
        .env(ID_VAR, id.to_hex())
        .env(RANK_VAR, "1")
        .env("NCCL_NVLS_ENABLE", "0")
        .spawn()?;
    // Blocks until the child joins.
    let mine = rank_main(&ctx, &id, 0);
    let status = child.wait()?;
    mine?;
    if !status.success() {
        return Err(format!("rank 1 (the child process) failed: {status}").into());
    }
    println!("nccl_two_process: two processes, one rank each, agreed");
    Ok(ExitCode::SUCCESS)
}
