//! Ctrl-C that stops training cleanly: the first Ctrl-C (or SIGTERM, as a cluster
//! scheduler sends before preempting a job) sets a flag that the loop checks between
//! steps, so it finishes the step, saves a checkpoint and exits; a second one exits at
//! once with status 130, for a loop that is stuck.
//!
//! The handler comes from the `ctrlc` crate: it covers Unix signals and Windows console
//! events alike, and runs the handler on its own thread, where printing and exiting are
//! safe (a raw signal handler may do neither).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

use super::TrainError;

/// The process's one flag: a process has one Ctrl-C handler, so every [`Interrupt`]
/// shares it. The error is kept so that every install after a failed one reports it.
static FLAG: OnceLock<Result<Arc<AtomicBool>, String>> = OnceLock::new();

/// Exit status after a second Ctrl-C: 128 + SIGINT, as shells report it.
#[cfg(not(target_arch = "wasm32"))]
const FORCED_EXIT_STATUS: i32 = 130;

/// Sets the flag on Ctrl-C or SIGTERM; exits on the second.
#[cfg(not(target_arch = "wasm32"))]
fn install_handler(seen: Arc<AtomicBool>) -> Result<(), String> {
    ctrlc::set_handler(move || {
        if seen.swap(true, Ordering::SeqCst) {
            eprintln!("second interrupt: exiting now without saving");
            std::process::exit(FORCED_EXIT_STATUS);
        }
        eprintln!("interrupt: finishing this step, then saving and exiting (press Ctrl-C again to exit now)");
    })
    .map_err(|e| e.to_string())
}

/// A browser page receives no signals: only [`Interrupt::request`] sets the flag there.
#[cfg(target_arch = "wasm32")]
fn install_handler(_flag: Arc<AtomicBool>) -> Result<(), String> {
    Ok(())
}

/// Whether a stop was requested (by Ctrl-C, SIGTERM or [`Interrupt::request`]).
///
/// ```no_run
/// use tang_nn::train::Interrupt;
/// let stop = Interrupt::install()?; // Ctrl-C or SIGTERM sets it
/// for step in 0..1_000_000 {
///     // ... one training step ...
///     if stop.requested() {
///         println!("stopping after step {step}");
///         break;
///     }
/// }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug)]
pub struct Interrupt {
    flag: Arc<AtomicBool>,
}

impl Interrupt {
    /// Installs the process's Ctrl-C handler (once; later calls share it) and returns a
    /// handle to its flag.
    ///
    /// ```no_run
    /// let stop = tang_nn::train::Interrupt::install()?;
    /// assert!(!stop.requested());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`TrainError::Interrupt`] when the handler cannot be installed, for example
    /// because the program installed its own.
    pub fn install() -> Result<Interrupt, TrainError> {
        let flag = FLAG.get_or_init(|| {
            let flag = Arc::new(AtomicBool::new(false));
            install_handler(Arc::clone(&flag)).map(|()| flag)
        });
        match flag {
            Ok(flag) => Ok(Interrupt {
                flag: Arc::clone(flag),
            }),
            Err(e) => Err(TrainError::Interrupt(e.clone())),
        }
    }

    /// Whether a stop was requested: check it after each step.
    ///
    /// ```no_run
    /// let stop = tang_nn::train::Interrupt::install()?;
    /// while !stop.requested() {
    ///     // train
    /// #   break;
    /// }
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn requested(&self) -> bool {
        self.flag.load(Ordering::SeqCst)
    }

    /// Requests a stop from the program itself (a time limit, a divergence check).
    ///
    /// ```no_run
    /// let stop = tang_nn::train::Interrupt::install()?;
    /// stop.request(); // a time limit was reached
    /// assert!(stop.requested());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn request(&self) {
        self.flag.store(true, Ordering::SeqCst);
    }

    /// Forgets a request, for a program that handled it and goes on (an interactive
    /// session that stops one run and starts another).
    ///
    /// ```no_run
    /// let stop = tang_nn::train::Interrupt::install()?;
    /// stop.request();
    /// stop.clear(); // handled: the next run starts fresh
    /// assert!(!stop.requested());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn clear(&self) {
        self.flag.store(false, Ordering::SeqCst);
    }
}
