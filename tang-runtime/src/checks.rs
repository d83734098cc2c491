//! The GPU checks of ids the host knew nothing about (see `ops/index/bounds.rs`): each
//! leaves a flag tensor on the device, read and reported at the next read or sync. The
//! device keeps them type-erased (`Device`'s `pending_checks`), so it names no tensor and
//! stays below this floor.

use crate::{DType, Device, Error, Tensor};

/// A check launched on the GPU whose flag the next read or sync looks at.
pub(crate) struct PendingCheck {
    op: String,
    bound: u64,
    /// `[flag, largest offending id]`.
    fault: Tensor,
}

/// The flag tensor (`[found, value]`) of the GPU check of `op`'s ids against `bound`:
/// the pending one, or a new cleared one that the next read or sync reports. Checks of
/// one op against one bound share their flag (the kernel only raises it), so a loop of
/// GPU-made ids keeps one pending check, and one read at the next sync.
pub(crate) fn fault_flag(dev: &Device, op: &str, bound: u64) -> Result<Tensor, Error> {
    let mut pending = dev
        .inner
        .pending_checks
        .lock()
        .map_err(|_| Error::Poisoned)?;
    let found = pending
        .iter()
        .filter_map(|c| c.downcast_ref::<PendingCheck>())
        .find(|c| c.op == op && c.bound == bound);
    if let Some(c) = found {
        return Ok(c.fault.clone());
    }
    let fault = dev.empty(&[2], DType::U32)?;
    fault.clear()?;
    pending.push(Box::new(PendingCheck {
        op: op.into(),
        bound,
        fault: fault.clone(),
    }));
    Ok(fault)
}

impl PendingCheck {
    /// The error this check's flags (`[found, value]`, read back) report, if any.
    fn into_error(self, bytes: &[u8]) -> Option<Error> {
        let flags: Vec<u32> = bytemuck::pod_collect_to_vec(bytes);
        (flags.first() == Some(&1)).then(|| Error::IndexOutOfRange {
            op: self.op,
            value: u64::from(flags.get(1).copied().unwrap_or(0)),
            bound: self.bound,
        })
    }
}

impl Device {
    /// The id checks launched since the last read or sync, taken off the device.
    fn take_pending_checks(&self) -> Result<Vec<PendingCheck>, Error> {
        let mut pending = self
            .inner
            .pending_checks
            .lock()
            .map_err(|_| Error::Poisoned)?;
        // Only this file puts checks there, so every entry is a `PendingCheck`.
        Ok(std::mem::take(&mut *pending)
            .into_iter()
            .filter_map(|c| c.downcast::<PendingCheck>().ok())
            .map(|c| *c)
            .collect())
    }

    /// Reads the flags of the GPU id checks launched since the last read or sync (a read
    /// of 8 bytes each, only when such checks ran).
    ///
    /// # Errors
    /// [`Error::IndexOutOfRange`] for the first check that found an id out of range.
    pub(crate) fn report_index_faults(&self) -> Result<(), Error> {
        let mut first = None;
        for c in self.take_pending_checks()? {
            let bytes = c.fault.read_bytes("Device::sync")?;
            first = first.or(c.into_error(&bytes));
        }
        first.map_or(Ok(()), Err)
    }

    /// [`Device::report_index_faults`] without blocking.
    pub(crate) async fn report_index_faults_async(&self) -> Result<(), Error> {
        let mut first = None;
        for c in self.take_pending_checks()? {
            let bytes = c.fault.read_bytes_async().await?;
            first = first.or(c.into_error(&bytes));
        }
        first.map_or(Ok(()), Err)
    }
}
