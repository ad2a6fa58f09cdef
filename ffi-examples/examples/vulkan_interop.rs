//! Vulkan and a gpukernel kernel on the same memory, ordered by Vulkan's semaphores, with no
//! copy between the APIs:
//!
//! 1. Vulkan allocates a device-local buffer with exportable memory (`VK_KHR_external_memory_fd`,
//!    opaque fd) and two exportable semaphores (`VK_KHR_external_semaphore_fd`): a binary one
//!    (Vulkan → CUDA) and a timeline one (CUDA → Vulkan).
//! 2. gpukernel imports the memory as a `DeviceBuffer<f32>` and both semaphores.
//! 3. Vulkan fills the buffer (`vkCmdFillBuffer`) and signals the binary semaphore; a stream
//!    waits on it, runs `saxpy` on the buffer and sets the timeline to 1; Vulkan waits for 1 and
//!    copies the buffer into a host-visible one, which is checked here.
//!
//! Needs a GPU and the Vulkan loader (`libvulkan.so.1`; `GPUKERNEL_VULKAN_LOADER` names another
//! path). Run: `cargo run -p ffi-examples --example vulkan_interop`.
#![allow(
    clippy::undocumented_unsafe_blocks,
    reason = "every Vulkan call is unsafe in ash"
)]

use std::os::fd::{FromRawFd, OwnedFd};

use ash::vk;
use ffi_examples_kernels::{PTX, saxpy};
use gpukernel_runtime::external::{
    ExternalMemory, ExternalMemoryHandle, ExternalSemaphore, ExternalSemaphoreHandle, SemaphoreKind,
};
use gpukernel_runtime::link::Linker;
use gpukernel_runtime::{Context, Device, Kernel, LaunchConfig};

type Res<T> = Result<T, Box<dyn std::error::Error>>;

/// A Vulkan device on the same GPU as a gpukernel context, with the two extensions.
pub struct Vk {
    _entry: ash::Entry,
    instance: ash::Instance,
    pub device: ash::Device,
    pub queue: vk::Queue,
    pool: vk::CommandPool,
    props: vk::PhysicalDeviceMemoryProperties,
    mem_fd: ash::khr::external_memory_fd::Device,
    sem_fd: ash::khr::external_semaphore_fd::Device,
}

impl std::fmt::Debug for Vk {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Vk").field("queue", &self.queue).finish()
    }
}

/// A buffer and its memory.
#[derive(Debug)]
pub struct VkBuffer {
    pub buffer: vk::Buffer,
    pub memory: vk::DeviceMemory,
    /// The allocation's size (what CUDA imports).
    pub size: u64,
}

impl Vk {
    /// Loads the loader, creates an instance (Vulkan 1.2) and a device on the GPU whose UUID
    /// is `uuid` (the first NVIDIA device when none matches).
    pub fn new(uuid: [u8; 16]) -> Res<Vk> {
        let loader =
            std::env::var("GPUKERNEL_VULKAN_LOADER").unwrap_or_else(|_| "libvulkan.so.1".into());
        let entry = unsafe { ash::Entry::load_from(&loader) }
            .map_err(|e| format!("loading the Vulkan loader `{loader}`: {e}"))?;
        let app = vk::ApplicationInfo::default().api_version(vk::API_VERSION_1_2);
        let instance = unsafe {
            entry.create_instance(
                &vk::InstanceCreateInfo::default().application_info(&app),
                None,
            )
        }?;
        let mut chosen = None;
        for pd in unsafe { instance.enumerate_physical_devices() }? {
            let mut id = vk::PhysicalDeviceIDProperties::default();
            let mut p2 = vk::PhysicalDeviceProperties2::default().push_next(&mut id);
            unsafe { instance.get_physical_device_properties2(pd, &mut p2) };
            let vendor = p2.properties.vendor_id;
            if id.device_uuid == uuid {
                chosen = Some(pd);
                break;
            }
            if vendor == 0x10de && chosen.is_none() {
                eprintln!("vulkan_interop: no UUID match yet; keeping the first NVIDIA device");
                chosen = Some(pd);
            }
        }
        let pd = chosen.ok_or("no Vulkan device on the GPU")?;
        let qf = unsafe { instance.get_physical_device_queue_family_properties(pd) }
            .iter()
            .position(|q| {
                q.queue_flags
                    .intersects(vk::QueueFlags::GRAPHICS | vk::QueueFlags::COMPUTE)
            })
            .ok_or("no graphics or compute queue")? as u32;
        let exts = [
            ash::khr::external_memory_fd::NAME.as_ptr(),
            ash::khr::external_semaphore_fd::NAME.as_ptr(),
        ];
        let mut v12 = vk::PhysicalDeviceVulkan12Features::default().timeline_semaphore(true);
        let prio = [1.0f32];
        let queues = [vk::DeviceQueueCreateInfo::default()
            .queue_family_index(qf)
            .queue_priorities(&prio)];
        let info = vk::DeviceCreateInfo::default()
            .queue_create_infos(&queues)
            .enabled_extension_names(&exts)
            .push_next(&mut v12);
        let device = unsafe { instance.create_device(pd, &info, None) }?;
        let queue = unsafe { device.get_device_queue(qf, 0) };
        let pool = unsafe {
            device.create_command_pool(
                &vk::CommandPoolCreateInfo::default()
                    .queue_family_index(qf)
                    .flags(vk::CommandPoolCreateFlags::RESET_COMMAND_BUFFER),
                None,
            )
        }?;
        let props = unsafe { instance.get_physical_device_memory_properties(pd) };
        let mem_fd = ash::khr::external_memory_fd::Device::new(&instance, &device);
        let sem_fd = ash::khr::external_semaphore_fd::Device::new(&instance, &device);
        Ok(Vk {
            _entry: entry,
            instance,
            device,
            queue,
            pool,
            props,
            mem_fd,
            sem_fd,
        })
    }

    fn memory_type(&self, bits: u32, want: vk::MemoryPropertyFlags) -> Res<u32> {
        (0..self.props.memory_type_count)
            .find(|&i| {
                bits & (1 << i) != 0
                    && self.props.memory_types[i as usize]
                        .property_flags
                        .contains(want)
            })
            .ok_or_else(|| format!("no memory type with {want:?}").into())
    }

    /// A transfer buffer of `bytes`: device-local and exportable as an opaque fd, or host-visible.
    pub fn buffer(&self, bytes: u64, exportable: bool) -> Res<VkBuffer> {
        let usage = vk::BufferUsageFlags::TRANSFER_SRC | vk::BufferUsageFlags::TRANSFER_DST;
        let mut ext = vk::ExternalMemoryBufferCreateInfo::default()
            .handle_types(vk::ExternalMemoryHandleTypeFlags::OPAQUE_FD);
        let mut info = vk::BufferCreateInfo::default().size(bytes).usage(usage);
        if exportable {
            info = info.push_next(&mut ext);
        }
        let buffer = unsafe { self.device.create_buffer(&info, None) }?;
        let req = unsafe { self.device.get_buffer_memory_requirements(buffer) };
        let flags = if exportable {
            vk::MemoryPropertyFlags::DEVICE_LOCAL
        } else {
            vk::MemoryPropertyFlags::HOST_VISIBLE | vk::MemoryPropertyFlags::HOST_COHERENT
        };
        let mut export = vk::ExportMemoryAllocateInfo::default()
            .handle_types(vk::ExternalMemoryHandleTypeFlags::OPAQUE_FD);
        let mut dedicated = vk::MemoryDedicatedAllocateInfo::default().buffer(buffer);
        let mut alloc = vk::MemoryAllocateInfo::default()
            .allocation_size(req.size)
            .memory_type_index(self.memory_type(req.memory_type_bits, flags)?);
        if exportable {
            alloc = alloc.push_next(&mut export).push_next(&mut dedicated);
        }
        let memory = unsafe { self.device.allocate_memory(&alloc, None) }?;
        unsafe { self.device.bind_buffer_memory(buffer, memory, 0) }?;
        Ok(VkBuffer {
            buffer,
            memory,
            size: req.size,
        })
    }

    /// A new opaque fd of an exportable buffer's memory (each call gives a new descriptor).
    pub fn memory_fd(&self, b: &VkBuffer) -> Res<OwnedFd> {
        let fd = unsafe {
            self.mem_fd.get_memory_fd(
                &vk::MemoryGetFdInfoKHR::default()
                    .memory(b.memory)
                    .handle_type(vk::ExternalMemoryHandleTypeFlags::OPAQUE_FD),
            )
        }?;
        Ok(unsafe { OwnedFd::from_raw_fd(fd) })
    }

    /// An exportable semaphore, binary or timeline (initial value 0), and an opaque fd of it.
    pub fn semaphore(&self, timeline: bool) -> Res<(vk::Semaphore, OwnedFd)> {
        let mut export = vk::ExportSemaphoreCreateInfo::default()
            .handle_types(vk::ExternalSemaphoreHandleTypeFlags::OPAQUE_FD);
        let mut ty = vk::SemaphoreTypeCreateInfo::default()
            .semaphore_type(vk::SemaphoreType::TIMELINE)
            .initial_value(0);
        let mut info = vk::SemaphoreCreateInfo::default().push_next(&mut export);
        if timeline {
            info = info.push_next(&mut ty);
        }
        let s = unsafe { self.device.create_semaphore(&info, None) }?;
        let fd = unsafe {
            self.sem_fd.get_semaphore_fd(
                &vk::SemaphoreGetFdInfoKHR::default()
                    .semaphore(s)
                    .handle_type(vk::ExternalSemaphoreHandleTypeFlags::OPAQUE_FD),
            )
        }?;
        Ok((s, unsafe { OwnedFd::from_raw_fd(fd) }))
    }

    /// Records `f` into a new command buffer and submits it, waiting for `wait` (a semaphore
    /// and, for timelines, a value) and signalling `signal`; returns a fence to wait on.
    pub fn submit(
        &self,
        wait: Option<(vk::Semaphore, Option<u64>)>,
        signal: Option<vk::Semaphore>,
        f: impl FnOnce(&ash::Device, vk::CommandBuffer),
    ) -> Res<vk::Fence> {
        let d = &self.device;
        let cb = unsafe {
            d.allocate_command_buffers(
                &vk::CommandBufferAllocateInfo::default()
                    .command_pool(self.pool)
                    .level(vk::CommandBufferLevel::PRIMARY)
                    .command_buffer_count(1),
            )
        }?[0];
        unsafe { d.begin_command_buffer(cb, &vk::CommandBufferBeginInfo::default()) }?;
        f(d, cb);
        unsafe { d.end_command_buffer(cb) }?;
        let cbs = [cb];
        let waits: Vec<vk::Semaphore> = wait.iter().map(|w| w.0).collect();
        let values: Vec<u64> = wait.iter().map(|w| w.1.unwrap_or(0)).collect();
        let stages = [vk::PipelineStageFlags::TRANSFER];
        let signals: Vec<vk::Semaphore> = signal.into_iter().collect();
        let mut timeline =
            vk::TimelineSemaphoreSubmitInfo::default().wait_semaphore_values(&values);
        let mut info = vk::SubmitInfo::default()
            .command_buffers(&cbs)
            .signal_semaphores(&signals);
        if !waits.is_empty() {
            info = info
                .wait_semaphores(&waits)
                .wait_dst_stage_mask(&stages[..waits.len()]);
        }
        if wait.is_some_and(|w| w.1.is_some()) {
            info = info.push_next(&mut timeline);
        }
        let fence = unsafe { d.create_fence(&vk::FenceCreateInfo::default(), None) }?;
        unsafe { d.queue_submit(self.queue, &[info], fence) }?;
        Ok(fence)
    }

    /// Waits for a fence and destroys it.
    pub fn wait(&self, fence: vk::Fence) -> Res<()> {
        unsafe { self.device.wait_for_fences(&[fence], true, 10_000_000_000) }?;
        unsafe { self.device.destroy_fence(fence, None) };
        Ok(())
    }

    /// Reads a host-visible buffer.
    pub fn read_f32(&self, b: &VkBuffer, n: usize) -> Res<Vec<f32>> {
        let p = unsafe {
            self.device
                .map_memory(b.memory, 0, (n * 4) as u64, vk::MemoryMapFlags::empty())
        }?;
        let v = unsafe { std::slice::from_raw_parts(p.cast::<f32>(), n) }.to_vec();
        unsafe { self.device.unmap_memory(b.memory) };
        Ok(v)
    }

    /// Destroys a buffer and frees its memory.
    pub fn free(&self, b: VkBuffer) {
        unsafe {
            self.device.destroy_buffer(b.buffer, None);
            self.device.free_memory(b.memory, None);
        }
    }
}

impl Drop for Vk {
    fn drop(&mut self) {
        unsafe {
            let _ = self.device.device_wait_idle();
            self.device.destroy_command_pool(self.pool, None);
            self.device.destroy_device(None);
            self.instance.destroy_instance(None);
        }
    }
}

/// The fill values of the two halves and saxpy's factor.
pub const LOW: f32 = 1.5;
pub const HIGH: f32 = -0.25;
pub const A: f32 = 2.0;

/// What the pipeline should produce at element `i` of `n`.
pub fn expected(i: usize, n: usize) -> f32 {
    A * i as f32 + if i < n / 2 { LOW } else { HIGH }
}

/// The whole round trip on `ctx`; returns the values Vulkan read back.
pub fn round_trip(ctx: &Context, vk: &Vk, n: usize) -> Res<Vec<f32>> {
    let bytes = (n * 4) as u64;
    let shared = vk.buffer(bytes, true)?;
    let host = vk.buffer(bytes, false)?;
    let (fill_done, fill_fd) = vk.semaphore(false)?;
    let (cuda_done, cuda_fd) = vk.semaphore(true)?;

    // ANCHOR: import
    // SAFETY: the fd is an export of `shared.size` bytes of this GPU's memory; Vulkan touches
    // it only in the submissions ordered by the two semaphores below.
    let mem = unsafe {
        ExternalMemory::import(
            ctx,
            ExternalMemoryHandle::OpaqueFd(vk.memory_fd(&shared)?),
            shared.size,
            true,
        )
    }?;
    let mut y = mem.map::<f32>(0, n)?;
    // ANCHOR_END: import
    // SAFETY: exports of a binary and a timeline semaphore of this GPU.
    let (wait_fill, signal_done) = unsafe {
        (
            ExternalSemaphore::import(
                ctx,
                ExternalSemaphoreHandle::OpaqueFd(fill_fd),
                SemaphoreKind::Binary,
            )?,
            ExternalSemaphore::import(
                ctx,
                ExternalSemaphoreHandle::OpaqueFd(cuda_fd),
                SemaphoreKind::Timeline,
            )?,
        )
    };

    let module = Linker::new(ctx)?
        .add_ptx_kernels(PTX, "kernels.ptx", &[saxpy::NAME])
        .link_and_load()?;
    let kernel = module.kernel(saxpy)?;
    let x = ctx.htod_copy(&(0..n).map(|i| i as f32).collect::<Vec<_>>())?;
    let stream = ctx.new_stream()?;

    // Vulkan fills the two halves, then signals `fill_done`.
    let half = bytes / 2;
    let fill = vk.submit(None, Some(fill_done), |d, cb| unsafe {
        d.cmd_fill_buffer(cb, shared.buffer, 0, half, LOW.to_bits());
        d.cmd_fill_buffer(cb, shared.buffer, half, bytes - half, HIGH.to_bits());
    })?;
    // The stream waits for it, transforms, and sets the timeline to 1.
    // ANCHOR: order
    wait_fill.wait(&stream)?;
    stream.launch(&kernel, LaunchConfig::for_elements(n)?, (A, &x, &mut y))?;
    signal_done.signal_value(&stream, 1)?;
    // ANCHOR_END: order
    // Vulkan waits for 1 and copies into host-visible memory.
    let copy = vk.submit(Some((cuda_done, Some(1))), None, |d, cb| unsafe {
        d.cmd_copy_buffer(
            cb,
            shared.buffer,
            host.buffer,
            &[vk::BufferCopy::default().size(bytes)],
        );
    })?;
    vk.wait(fill)?;
    vk.wait(copy)?;
    let got = vk.read_f32(&host, n)?;

    drop((y, mem, wait_fill, signal_done));
    unsafe {
        vk.device.destroy_semaphore(fill_done, None);
        vk.device.destroy_semaphore(cuda_done, None);
    }
    vk.free(shared);
    vk.free(host);
    Ok(got)
}

#[allow(
    dead_code,
    reason = "the test includes this file as a module and calls round_trip"
)]
fn main() -> Res<()> {
    let ctx = Device::get(0)?.primary_context()?;
    let vk = Vk::new(ctx.device_uuid()?)?;
    let n = 1 << 16;
    let got = round_trip(&ctx, &vk, n)?;
    let bad = (0..n).filter(|&i| got[i] != expected(i, n)).count();
    println!(
        "vulkan_interop: Vulkan filled, saxpy transformed, Vulkan read back {n} floats: {} \
         (y[0] = {}, y[n-1] = {})",
        if bad == 0 {
            "all correct".to_string()
        } else {
            format!("{bad} wrong")
        },
        got[0],
        got[n - 1]
    );
    if bad != 0 {
        return Err(format!("{bad} of {n} values wrong").into());
    }
    Ok(())
}
