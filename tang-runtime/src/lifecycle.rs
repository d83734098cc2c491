//! One device created or torn down at a time in the process.
//!
//! NVIDIA's Vulkan driver (580 series, seen on an H200) sometimes hangs when several
//! threads destroy devices at once: threads in `vkDestroyDevice` wait on a driver lock
//! while one of the driver's own threads spins, and the process never finishes. Tests
//! that open and drop a device each, in parallel, hit it within a few runs. Creating and
//! destroying devices is rare and slow anyway, so tang does both under one process-wide
//! lock; work on live devices is not affected.

#[cfg(not(target_arch = "wasm32"))]
use std::sync::{Condvar, Mutex};

#[cfg(not(target_arch = "wasm32"))]
static BUSY: Mutex<bool> = Mutex::new(false);
#[cfg(not(target_arch = "wasm32"))]
static FREED: Condvar = Condvar::new();

/// Held while a device is created or destroyed; dropping it lets the next one through.
///
/// A plain token rather than a `MutexGuard`, so it can be kept across `.await` in
/// `Device::new_async` (the future stays `Send`) and stored in the device while it is torn
/// down.
#[derive(Debug)]
pub(crate) struct LifecycleToken(());

impl LifecycleToken {
    /// Waits until no other device is being created or destroyed.
    #[cfg(not(target_arch = "wasm32"))]
    pub(crate) fn acquire() -> LifecycleToken {
        // A poisoned lock only means a thread panicked while waiting; the flag is intact.
        let mut busy = BUSY.lock().unwrap_or_else(|p| p.into_inner());
        while *busy {
            busy = FREED.wait(busy).unwrap_or_else(|p| p.into_inner());
        }
        *busy = true;
        LifecycleToken(())
    }
}

#[cfg(target_arch = "wasm32")]
impl LifecycleToken {
    /// A browser page cannot wait on a lock (one thread; two `Device::new_async` calls
    /// awaited together would deadlock on it) and has no driver threads to race: a
    /// token that excludes nothing.
    pub(crate) fn acquire() -> LifecycleToken {
        LifecycleToken(())
    }
}

#[cfg(not(target_arch = "wasm32"))]
impl Drop for LifecycleToken {
    fn drop(&mut self) {
        let mut busy = BUSY.lock().unwrap_or_else(|p| p.into_inner());
        *busy = false;
        FREED.notify_one();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn one_holder_at_a_time() {
        static INSIDE: AtomicUsize = AtomicUsize::new(0);
        let threads: Vec<_> = (0..8)
            .map(|_| {
                std::thread::spawn(|| {
                    for _ in 0..200 {
                        let _t = LifecycleToken::acquire();
                        assert_eq!(INSIDE.fetch_add(1, Ordering::SeqCst), 0);
                        std::thread::yield_now();
                        INSIDE.fetch_sub(1, Ordering::SeqCst);
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
    }
}
