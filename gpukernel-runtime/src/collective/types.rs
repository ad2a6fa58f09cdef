//! What a collective moves and how it combines: element types, reduction operators, and the
//! unique id that joins the ranks of several processes.

use gpukernel_device::DeviceCopy;

use crate::error::{Error, Result};

/// An element type NCCL reduces natively (`ncclDataType_t`).
///
/// ```
/// # use gpukernel_runtime::{Device, collective::{self, Communicator, ReduceOp, UniqueId, DataType, CollectiveType}};
/// # fn main() -> gpukernel_runtime::Result<()> {
/// assert_eq!(<f32 as CollectiveType>::DATA_TYPE, DataType::F32);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum DataType {
    /// `i8` (`ncclInt8`).
    I8,
    /// `u8` (`ncclUint8`).
    U8,
    /// `i32` (`ncclInt32`).
    I32,
    /// `u32` (`ncclUint32`).
    U32,
    /// `i64` (`ncclInt64`).
    I64,
    /// `u64` (`ncclUint64`).
    U64,
    /// `f32` (`ncclFloat32`).
    F32,
    /// `f64` (`ncclFloat64`).
    F64,
}

/// How a reduction combines the ranks' elements (`ncclRedOp_t`). Integer sums and products
/// wrap; `Avg` is the sum divided by the number of ranks: for integers as NCCL computes it,
/// the sum wrapped in the element type, then divided exactly and truncated toward zero (so
/// 128 ranks of `-1i8` average to `-1`, and 256 ranks of `u8` to `0`).
///
/// ```
/// # use gpukernel_runtime::{Device, collective::{self, Communicator, ReduceOp, UniqueId, DataType, CollectiveType}};
/// # fn main() -> gpukernel_runtime::Result<()> {
/// let ctx = Device::simulator().primary_context()?;
/// let comm = &Communicator::for_contexts(&[ctx.clone()])?[0];
/// let mut v = ctx.htod_copy(&[5u64, 9])?;
/// comm.all_reduce_in_place(&ctx.default_stream(), &mut v, ReduceOp::Avg)?;
/// assert_eq!(v.to_host_vec()?, [5, 9]);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ReduceOp {
    /// Sum (`ncclSum`).
    Sum,
    /// Product (`ncclProd`).
    Prod,
    /// Maximum (`ncclMax`).
    Max,
    /// Minimum (`ncclMin`).
    Min,
    /// Average (`ncclAvg`).
    Avg,
}

mod sealed {
    pub trait Sealed {}
}

/// An element type collectives accept: `i8`, `u8`, `i32`, `u32`, `i64`, `u64`, `f32`, `f64`.
/// Sealed: the list is NCCL's.
///
/// ```
/// # use gpukernel_runtime::{Device, collective::{self, Communicator, ReduceOp, UniqueId, DataType, CollectiveType}};
/// # fn main() -> gpukernel_runtime::Result<()> {
/// fn bytes<T: CollectiveType>(n: usize) -> usize {
///     n * T::DATA_TYPE.size()
/// }
/// assert_eq!(bytes::<i64>(4), 32);
/// # Ok(()) }
/// ```
pub trait CollectiveType: DeviceCopy + PartialOrd + sealed::Sealed {
    /// NCCL's name for it.
    const DATA_TYPE: DataType;
    #[doc(hidden)]
    fn combine(op: ReduceOp, a: Self, b: Self) -> Self;
    #[doc(hidden)]
    fn divide(self, n: usize) -> Self;
}

macro_rules! int_type {
    ($($t:ty => $d:ident),*) => { $(
        impl sealed::Sealed for $t {}
        impl CollectiveType for $t {
            const DATA_TYPE: DataType = DataType::$d;
            fn combine(op: ReduceOp, a: Self, b: Self) -> Self {
                match op {
                    ReduceOp::Sum | ReduceOp::Avg => a.wrapping_add(b),
                    ReduceOp::Prod => a.wrapping_mul(b),
                    ReduceOp::Max => a.max(b),
                    ReduceOp::Min => a.min(b),
                }
            }
            /// NCCL's integer `ncclAvg` (`FuncSumPostDiv`): the sum, wrapped in the type, then
            /// divided by the number of ranks exactly, truncating toward zero (signed types by
            /// their magnitude, then negated); `n` may exceed the type's range (an 8-bit sum
            /// over 256 ranks averages to 0).
            fn divide(self, n: usize) -> Self {
                // Every value of the six types and every rank count fit an `i128`, and the
                // quotient's magnitude is at most the dividend's, so it converts back exactly.
                ((self as i128) / (n.max(1) as i128)) as $t
            }
        }
    )* };
}

macro_rules! float_type {
    ($($t:ty => $d:ident),*) => { $(
        impl sealed::Sealed for $t {}
        impl CollectiveType for $t {
            const DATA_TYPE: DataType = DataType::$d;
            fn combine(op: ReduceOp, a: Self, b: Self) -> Self {
                match op {
                    ReduceOp::Sum | ReduceOp::Avg => a + b,
                    ReduceOp::Prod => a * b,
                    ReduceOp::Max => a.max(b),
                    ReduceOp::Min => a.min(b),
                }
            }
            fn divide(self, n: usize) -> Self {
                self / (n as $t)
            }
        }
    )* };
}

int_type!(i8 => I8, u8 => U8, i32 => I32, u32 => U32, i64 => I64, u64 => U64);
float_type!(f32 => F32, f64 => F64);

impl DataType {
    /// Bytes per element.
    ///
    /// ```
    /// # use gpukernel_runtime::{Device, collective::{self, Communicator, ReduceOp, UniqueId, DataType, CollectiveType}};
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// assert_eq!(DataType::F64.size(), 8);
    /// assert_eq!(DataType::U8.size(), 1);
    /// # Ok(()) }
    /// ```
    pub fn size(self) -> usize {
        match self {
            DataType::I8 | DataType::U8 => 1,
            DataType::I32 | DataType::U32 | DataType::F32 => 4,
            DataType::I64 | DataType::U64 | DataType::F64 => 8,
        }
    }
}

/// The bytes that join the ranks of one communicator across processes (`ncclUniqueId`, 128
/// bytes): rank 0 makes it ([`UniqueId::new`]), sends [`as_bytes`](Self::as_bytes) to the
/// other processes by any means (a file, a socket, an environment variable of a child), and
/// every rank passes it to [`Communicator::init_rank`](super::Communicator::init_rank).
///
/// ```
/// # use gpukernel_runtime::{Device, collective::{self, Communicator, ReduceOp, UniqueId, DataType, CollectiveType}};
/// # fn main() -> gpukernel_runtime::Result<()> {
/// let ctx = Device::simulator().primary_context()?;
/// let id = UniqueId::new(&ctx)?;
/// assert_eq!(id.as_bytes().len(), UniqueId::LEN);
/// # Ok(()) }
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct UniqueId {
    pub(crate) bytes: [u8; UniqueId::LEN],
    /// Whether it joins simulated devices (made on the simulator) or GPUs (made by NCCL).
    pub(crate) simulated: bool,
}

impl std::fmt::Debug for UniqueId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "UniqueId({})", &self.to_hex()[..16])
    }
}

impl UniqueId {
    /// Length of the id in bytes.
    pub const LEN: usize = 128;

    /// A new id for a communicator of `ctx`'s backend: `ncclGetUniqueId` for GPUs (it also
    /// starts NCCL's bootstrap listener in this process, which rank 0 must keep running), a
    /// random id of this process for the simulator (whose ranks are threads of one process).
    ///
    /// ```
    /// # use gpukernel_runtime::{Device, collective::{self, Communicator, ReduceOp, UniqueId, DataType, CollectiveType}};
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// let ctx = Device::simulator().primary_context()?;
    /// let id = UniqueId::new(&ctx)?;
    /// assert_ne!(id, UniqueId::new(&ctx)?);
    /// # Ok(()) }
    /// ```
    pub fn new(ctx: &crate::Context) -> Result<UniqueId> {
        if ctx.is_simulator() {
            Ok(super::sim::new_id())
        } else {
            super::nccl_unique_id()
        }
    }

    /// The id's bytes, to send to the other ranks.
    ///
    /// ```
    /// # use gpukernel_runtime::{Device, collective::{self, Communicator, ReduceOp, UniqueId, DataType, CollectiveType}};
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// let id = UniqueId::from_bytes([7; UniqueId::LEN]);
    /// assert_eq!(id.as_bytes()[0], 7);
    /// # Ok(()) }
    /// ```
    pub fn as_bytes(&self) -> &[u8; UniqueId::LEN] {
        &self.bytes
    }

    /// The id as 256 hexadecimal digits (for an environment variable or a command line); the
    /// simulator's ids start with `sim:`.
    ///
    /// ```
    /// # use gpukernel_runtime::{Device, collective::{self, Communicator, ReduceOp, UniqueId, DataType, CollectiveType}};
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// let id = UniqueId::from_bytes([0xab; UniqueId::LEN]);
    /// assert!(id.to_hex().starts_with("abab"));
    /// assert_eq!(UniqueId::from_hex(&id.to_hex())?, id);
    /// # Ok(()) }
    /// ```
    pub fn to_hex(&self) -> String {
        let mut s = String::with_capacity(4 + 2 * Self::LEN);
        if self.simulated {
            s.push_str("sim:");
        }
        for b in self.bytes {
            s.push_str(&format!("{b:02x}"));
        }
        s
    }

    /// Reads [`to_hex`](Self::to_hex)'s form back; anything else is
    /// [`Error::InvalidCollective`] saying what is wrong.
    ///
    /// ```
    /// # use gpukernel_runtime::{Device, collective::{self, Communicator, ReduceOp, UniqueId, DataType, CollectiveType}};
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// assert!(UniqueId::from_hex("not hex").is_err());
    /// let id = UniqueId::from_bytes([1; UniqueId::LEN]);
    /// assert_eq!(UniqueId::from_hex(&id.to_hex())?, id);
    /// # Ok(()) }
    /// ```
    pub fn from_hex(text: &str) -> Result<UniqueId> {
        let bad = |reason: String| Error::InvalidCollective {
            operation: "UniqueId::from_hex",
            reason,
        };
        let (simulated, hex) = match text.trim().strip_prefix("sim:") {
            Some(rest) => (true, rest),
            None => (false, text.trim()),
        };
        if hex.len() != 2 * Self::LEN {
            return Err(bad(format!(
                "{} hexadecimal digits, expected {}",
                hex.len(),
                2 * Self::LEN
            )));
        }
        let mut bytes = [0u8; Self::LEN];
        for (i, b) in bytes.iter_mut().enumerate() {
            *b = u8::from_str_radix(&hex[2 * i..2 * i + 2], 16)
                .map_err(|_| bad(format!("not hexadecimal at digit {}", 2 * i)))?;
        }
        Ok(UniqueId { bytes, simulated })
    }

    /// An NCCL id from its bytes (received from rank 0).
    ///
    /// ```
    /// # use gpukernel_runtime::{Device, collective::{self, Communicator, ReduceOp, UniqueId, DataType, CollectiveType}};
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// let bytes = [3u8; UniqueId::LEN]; // as received from rank 0
    /// let id = UniqueId::from_bytes(bytes);
    /// assert_eq!(id.as_bytes(), &bytes);
    /// # Ok(()) }
    /// ```
    pub fn from_bytes(bytes: [u8; UniqueId::LEN]) -> UniqueId {
        UniqueId {
            bytes,
            simulated: false,
        }
    }
}
