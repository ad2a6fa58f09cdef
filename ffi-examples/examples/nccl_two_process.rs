//! Two processes, one rank each, joined by a unique id: rank 0 makes the id
//! (`ncclGetUniqueId`), starts rank 1 as a child process (this program again, the id in the
//! environment variable `GPUKERNEL_NCCL_ID`, its rank in `GPUKERNEL_NCCL_RANK`), both make
//! their communicator with `Communicator::init_rank` on their own GPU, all-reduce a buffer and
//! check the sum. Any channel works for the id (a file, a socket, MPI): it is 128 bytes.
//!
//! With `--one-gpu-each`, the processes are set up as on two hosts: this process starts both
//! ranks, each seeing one GPU only (`CUDA_VISIBLE_DEVICES=0` and `=1`, so each uses its
//! device 0); rank 0 makes the id and writes its 128 bytes (`UniqueId::as_bytes`) to its
//! standard output, this process relays them to rank 1's standard input, and rank 1 reads them
//! back (`UniqueId::from_bytes`). Between hosts the relay would be the application's own
//! channel (a shared file, a socket, MPI, the job scheduler); the rest is the same code.
//!
//! `NCCL_NVLS_ENABLE=0` is set for this process when unset and for every child process
//! (NVLink multicast stays off on shared machines); build with `--features nccl` for GPUs. On
//! two GPUs it runs two processes; on the simulator the same code runs its ranks as two
//! threads of one process (the simulator's devices live in one process, so `--one-gpu-each`
//! needs GPUs); with one GPU it says it needs two and exits with status 2.

use std::io::{Read, Write};
use std::process::{Command, ExitCode, Stdio};

use gpukernel_runtime::collective::{Communicator, ReduceOp, UniqueId};
use gpukernel_runtime::{Context, Device};

const N: usize = 1 << 20;
const ID_VAR: &str = "GPUKERNEL_NCCL_ID";
const RANK_VAR: &str = "GPUKERNEL_NCCL_RANK";
/// Set (to `pipe`) in the children of `--one-gpu-each`: rank 0 writes the id's bytes to its
/// standard output, rank 1 reads them from its standard input.
const PIPE_VAR: &str = "GPUKERNEL_NCCL_ID_PIPE";

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
    // A child of `--one-gpu-each`: one rank, one visible GPU, the id through a pipe.
    if std::env::var_os(PIPE_VAR).is_some() {
        let rank: usize = std::env::var(RANK_VAR)?.parse()?;
        return one_gpu_rank(rank).map(|()| ExitCode::SUCCESS);
    }
    if std::env::args().any(|a| a == "--one-gpu-each") {
        return one_gpu_each();
    }
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

/// Rank `rank` in a process that sees one GPU, as on its own host: rank 0 makes the id and
/// writes its bytes to standard output; rank 1 reads them from standard input.
fn one_gpu_rank(rank: usize) -> Result<(), BoxError> {
    let visible = Device::count()?;
    if visible != 1 {
        return Err(
            format!("rank {rank} sees {visible} GPUs, expected 1 (CUDA_VISIBLE_DEVICES)").into(),
        );
    }
    let ctx = Device::get(0)?.primary_context()?;
    let id = if rank == 0 {
        let id = UniqueId::new(&ctx)?;
        let mut out = std::io::stdout().lock();
        out.write_all(id.as_bytes())?;
        out.flush()?;
        id
    } else {
        let mut bytes = [0u8; UniqueId::LEN];
        std::io::stdin().lock().read_exact(&mut bytes)?;
        UniqueId::from_bytes(bytes)
    };
    // Standard output carried the id: report on standard error.
    eprintln!(
        "rank {rank}: the only GPU it sees is {} (CUDA_VISIBLE_DEVICES={})",
        ctx.device().name()?,
        std::env::var("CUDA_VISIBLE_DEVICES").unwrap_or_default()
    );
    rank_main(&ctx, &id, rank)
}

/// `--one-gpu-each`: starts both ranks, each seeing one GPU, and relays the id from rank 0's
/// standard output to rank 1's standard input.
fn one_gpu_each() -> Result<ExitCode, BoxError> {
    let device = Device::default_device()?;
    if device.is_simulator() {
        return Err("--one-gpu-each runs one process per GPU: it needs two CUDA devices (the simulator's devices live in one process)".into());
    }
    let count = Device::count()?;
    if count < 2 {
        println!("nccl_two_process: SKIPPED: needs 2 GPUs, found {count} (not a pass)");
        return Ok(ExitCode::from(2));
    }
    let exe = std::env::current_exe()?;
    let start = |rank: usize, stdin: Stdio, stdout: Stdio| {
        Command::new(&exe)
            .env(PIPE_VAR, "pipe")
            .env(RANK_VAR, rank.to_string())
            .env("CUDA_VISIBLE_DEVICES", rank.to_string())
            .env("NCCL_NVLS_ENABLE", "0")
            .env_remove(ID_VAR)
            .stdin(stdin)
            .stdout(stdout)
            .spawn()
    };
    let mut rank0 = start(0, Stdio::null(), Stdio::piped())?;
    let mut id = [0u8; UniqueId::LEN];
    let mut out0 = rank0.stdout.take().ok_or("rank 0 has no standard output")?;
    if let Err(e) = out0.read_exact(&mut id) {
        let status = rank0.wait()?;
        return Err(format!("rank 0 sent no id ({e}); it ended with {status}").into());
    }
    // What rank 0 prints after the id goes on to this process's output.
    let relay = std::thread::spawn(move || std::io::copy(&mut out0, &mut std::io::stdout()));
    let mut rank1 = start(1, Stdio::piped(), Stdio::inherit())?;
    {
        let mut pipe = rank1.stdin.take().ok_or("rank 1 has no standard input")?;
        pipe.write_all(&id)?;
    } // closed: rank 1 reads exactly the id
    let (s0, s1) = (rank0.wait()?, rank1.wait()?);
    let _ = relay.join();
    if !(s0.success() && s1.success()) {
        return Err(format!("rank 0 ended with {s0}, rank 1 with {s1}").into());
    }
    println!(
        "nccl_two_process --one-gpu-each: two processes, each seeing one GPU, joined by the id's bytes relayed through pipes, agreed"
    );
    Ok(ExitCode::SUCCESS)
}
