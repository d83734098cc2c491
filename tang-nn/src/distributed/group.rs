//! [`ProcessGroup`]: this process's place in an MPI job, and the thread that makes every
//! MPI call.
//!
//! One thread owns MPI: it initialises it, then runs the collective operations handed to
//! it in the order they were handed over. The training thread goes on recording GPU work
//! while a bucket of gradients is read back and all-reduced there (the overlap of
//! PyTorch's DDP), and no communicator crosses a thread (OpenMPI's handles are pointers).
//! MPI is asked for `MPI_THREAD_MULTIPLE` only so that [`ProcessGroup::abort`] may be
//! called from the failing thread while the MPI thread waits in a collective.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use mpi::collective::SystemOperation;
use mpi::datatype::Equivalence;
use mpi::environment::Threading;
use mpi::topology::{Communicator, SimpleCommunicator};
use mpi::traits::{CommunicatorCollectives, Root};

use super::DistError;

/// A collective operation, run on the MPI thread with the world communicator.
type Job = Box<dyn FnOnce(&SimpleCommunicator) + Send>;

/// The environment variables by which MPI launchers tell a process it is one rank of a
/// job: MPICH's and Intel MPI's hydra (`PMI_RANK`), OpenMPI's `mpirun`
/// (`OMPI_COMM_WORLD_SIZE`), PMIx launchers and Slurm's `srun --mpi=pmix` (`PMIX_RANK`).
const LAUNCHER_VARIABLES: [&str; 3] = ["PMI_RANK", "OMPI_COMM_WORLD_SIZE", "PMIX_RANK"];

/// How [`ProcessGroup::all_reduce`] combines the ranks' values (`MPI_SUM`, `MPI_MAX`).
///
/// ```
/// use tang_nn::distributed::Reduce;
/// assert_ne!(Reduce::Sum, Reduce::Max);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reduce {
    /// The sum over the ranks.
    Sum,
    /// The largest value.
    Max,
}

/// This process's rank in the MPI job it was launched in, the job's size, and its rank
/// among the ranks of its host (which picks its GPU); collectives run on a thread of
/// their own (see the module documentation).
///
/// ```no_run
/// // mpirun -np 2 ./train
/// match tang_nn::distributed::process_group()? {
///     Some(group) => println!("rank {} of {}", group.rank(), group.world_size()),
///     None => println!("one process"),
/// }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct ProcessGroup {
    rank: usize,
    world_size: usize,
    local_rank: usize,
    jobs: Sender<Job>,
}

/// The process group of this process, set up once.
static GROUP: OnceLock<Result<Option<ProcessGroup>, String>> = OnceLock::new();

/// Set by [`finalize_at_exit`]: the MPI thread finalises MPI after the job it runs.
static EXITING: AtomicBool = AtomicBool::new(false);
/// Where the MPI thread reports that MPI is finalised, while the process exits.
static FINALIZED: Mutex<Option<Sender<()>>> = Mutex::new(None);
/// How long an exiting process waits for MPI_Finalize, which waits for the other ranks:
/// long enough for rank 0 to finish writing after the others are done, short enough that
/// a rank left in a collective by a failed peer does not hang the job.
const FINALIZE_WAIT: Duration = Duration::from_secs(300);

/// Runs when the process exits (registered with `atexit`): has the MPI thread call
/// MPI_Finalize and waits for it. Without it a rank that returns from `main` first ends
/// the job under MPICH's launcher, which kills the ranks still running: rank 0 lost its
/// loss curve and everything `main` printed after training.
extern "C" fn finalize_at_exit() {
    let Some(Ok(Some(group))) = GROUP.get() else {
        return;
    };
    let (done, finalized) = channel();
    match FINALIZED.lock() {
        Ok(mut slot) => *slot = Some(done),
        Err(_) => return,
    }
    EXITING.store(true, Ordering::SeqCst);
    // A job of its own wakes the MPI thread, which finalises after it.
    if group
        .jobs
        .send(Box::new(|_: &SimpleCommunicator| {}))
        .is_ok()
    {
        let _ = finalized.recv_timeout(FINALIZE_WAIT);
    }
}

/// Registers [`finalize_at_exit`] once.
fn finalize_when_the_process_exits() -> Result<(), String> {
    // SAFETY: `atexit` stores a pointer to a function with the C ABI, no arguments and no
    // result, which lives as long as the program; `finalize_at_exit` never unwinds (it
    // has no panicking call), so no unwinding crosses the C boundary.
    #[allow(unsafe_code)]
    let status = unsafe { libc::atexit(finalize_at_exit) };
    if status == 0 {
        Ok(())
    } else {
        Err("could not register MPI's finalisation at exit (atexit failed)".into())
    }
}

/// The MPI job this process runs in (PyTorch's `init_process_group("mpi")`, done on first
/// use): `None` when no MPI launcher started it, or it is the only rank, so one process
/// trains as before. MPI is initialised the first time this is called under a launcher.
///
/// ```no_run
/// let ranks = tang_nn::distributed::process_group()?.map_or(1, |g| g.world_size());
/// println!("{ranks} ranks");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
/// [`DistError::Init`] when the launcher's environment is there but MPI fails to start.
pub fn process_group() -> Result<Option<&'static ProcessGroup>, DistError> {
    let launched = LAUNCHER_VARIABLES
        .iter()
        .any(|v| std::env::var_os(v).is_some());
    if !launched {
        return Ok(None);
    }
    match GROUP.get_or_init(ProcessGroup::start) {
        Ok(group) => Ok(group.as_ref()),
        Err(e) => Err(DistError::Init(e.clone())),
    }
}

impl ProcessGroup {
    /// Starts the MPI thread and learns this process's place from it; `None` for a job
    /// of one rank.
    fn start() -> Result<Option<ProcessGroup>, String> {
        let (jobs, queue) = channel::<Job>();
        let (placed, place) = channel::<Result<(usize, usize, usize), String>>();
        std::thread::Builder::new()
            .name("tang-mpi".into())
            .spawn(move || serve(&placed, &queue))
            .map_err(|e| format!("the MPI thread could not be started: {e}"))?;
        let (rank, world_size, local_rank) = place
            .recv()
            .map_err(|_| "the MPI thread stopped while starting".to_string())??;
        finalize_when_the_process_exits()?;
        Ok((world_size > 1).then_some(ProcessGroup {
            rank,
            world_size,
            local_rank,
            jobs,
        }))
    }

    /// This process's rank (0-based; PyTorch's `dist.get_rank()`).
    ///
    /// ```no_run
    /// if let Some(group) = tang_nn::distributed::process_group()? {
    ///     assert!(group.rank() < group.world_size());
    /// }
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn rank(&self) -> usize {
        self.rank
    }

    /// How many ranks the job has (`dist.get_world_size()`).
    ///
    /// ```no_run
    /// let n = tang_nn::distributed::process_group()?.map_or(1, |g| g.world_size());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn world_size(&self) -> usize {
        self.world_size
    }

    /// This process's rank among the ranks on its host (`LOCAL_RANK`): the index of the
    /// GPU it should use when the host has several.
    ///
    /// ```no_run
    /// if let Some(group) = tang_nn::distributed::process_group()? {
    ///     println!("GPU {} of this host", group.local_rank());
    /// }
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn local_rank(&self) -> usize {
        self.local_rank
    }

    /// Ends the whole job now with `code` (`MPI_Abort`): what a rank that failed does, so
    /// the others do not wait for it in a collective forever. Prints nothing itself:
    /// print the error first.
    ///
    /// ```no_run
    /// if let Some(group) = tang_nn::distributed::process_group()? {
    ///     eprintln!("rank {}: the data set is missing", group.rank());
    ///     group.abort(1);
    /// }
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn abort(&self, code: i32) -> ! {
        // The launcher forwards a rank's output through a pipe and tears the job down at
        // MPI_Abort: what the rank printed just before can be lost (seen with MPICH's
        // hydra: one run in three lost the error line, or kept only its first word).
        // Flush, then give the launcher a moment to forward it.
        use std::io::Write;
        let _ = std::io::stdout().flush();
        let _ = std::io::stderr().flush();
        std::thread::sleep(std::time::Duration::from_millis(300));
        SimpleCommunicator::world().abort(code)
    }

    /// Runs `job` on the MPI thread after the jobs handed over before it; its result
    /// arrives on the returned receiver.
    pub(crate) fn submit<T, F>(&self, job: F) -> Result<Receiver<T>, DistError>
    where
        T: Send + 'static,
        F: FnOnce(&SimpleCommunicator) -> T + Send + 'static,
    {
        let (done, result) = channel();
        self.jobs
            .send(Box::new(move |world: &SimpleCommunicator| {
                // The receiver may have been dropped by a caller that failed meanwhile.
                let _ = done.send(job(world));
            }))
            .map_err(|_| stopped())?;
        Ok(result)
    }

    /// Runs `job` on the MPI thread and waits for its result.
    pub(crate) fn run<T, F>(&self, job: F) -> Result<T, DistError>
    where
        T: Send + 'static,
        F: FnOnce(&SimpleCommunicator) -> T + Send + 'static,
    {
        self.submit(job)?.recv().map_err(|_| stopped())
    }

    /// The element-wise reduction of `values` over the ranks, on every rank
    /// (`dist.all_reduce`). Every rank must call it, with as many values.
    ///
    /// ```no_run
    /// use tang_nn::distributed::{Reduce, process_group};
    /// let group = process_group()?.ok_or("run this under mpirun")?;
    /// let total = group.all_reduce(vec![1u64], Reduce::Sum)?;
    /// assert_eq!(total, [group.world_size() as u64]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`DistError::Communication`] when the MPI thread has stopped.
    pub fn all_reduce<T>(&self, values: Vec<T>, op: Reduce) -> Result<Vec<T>, DistError>
    where
        T: Equivalence + Copy + Default + Send + 'static,
    {
        self.run(move |world| all_reduce_on(world, &values, op))
    }

    /// The mean over the ranks of one value (the loss the trainer prints).
    ///
    /// ```no_run
    /// let group = tang_nn::distributed::process_group()?.ok_or("run this under mpirun")?;
    /// let mean_rank = group.mean(group.rank() as f64)?; // 0.5 on 2 ranks
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// As [`ProcessGroup::all_reduce`].
    pub fn mean(&self, value: f64) -> Result<f64, DistError> {
        let sum = self.all_reduce(vec![value], Reduce::Sum)?;
        Ok(sum.first().copied().unwrap_or(value) / self.world_size as f64)
    }

    /// `values` as rank 0 has them, on every rank (`dist.broadcast(t, src=0)`). Every
    /// rank must call it, with as many values.
    ///
    /// ```no_run
    /// let group = tang_nn::distributed::process_group()?.ok_or("run this under mpirun")?;
    /// let seed = group.broadcast(vec![group.rank() as u64 + 7])?;
    /// assert_eq!(seed, [7]); // rank 0's
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// As [`ProcessGroup::all_reduce`].
    pub fn broadcast<T>(&self, mut values: Vec<T>) -> Result<Vec<T>, DistError>
    where
        T: Equivalence + Send + 'static,
    {
        self.run(move |world| {
            world.process_at_rank(0).broadcast_into(&mut values[..]);
            values
        })
    }

    /// Waits until every rank has reached this call (`dist.barrier()`).
    ///
    /// ```no_run
    /// let group = tang_nn::distributed::process_group()?.ok_or("run this under mpirun")?;
    /// group.barrier()?; // rank 0 has written what the others read next
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// As [`ProcessGroup::all_reduce`].
    pub fn barrier(&self) -> Result<(), DistError> {
        self.run(|world| world.barrier())
    }
}

/// The element-wise reduction of `values` over the ranks of `world`.
pub(crate) fn all_reduce_on<T>(world: &SimpleCommunicator, values: &[T], op: Reduce) -> Vec<T>
where
    T: Equivalence + Copy + Default,
{
    let mut out = vec![T::default(); values.len()];
    let op = match op {
        Reduce::Sum => SystemOperation::sum(),
        Reduce::Max => SystemOperation::max(),
    };
    world.all_reduce_into(values, &mut out[..], op);
    out
}

/// The error of a collective whose thread is gone.
fn stopped() -> DistError {
    DistError::Communication("the MPI thread has stopped".into())
}

/// The MPI thread: initialises MPI, reports this process's place, then runs jobs until
/// the process exits, when it finalises MPI ([`finalize_at_exit`]).
fn serve(placed: &Sender<Result<(usize, usize, usize), String>>, queue: &Receiver<Job>) {
    let Some((universe, _threading)) = mpi::initialize_with_threading(Threading::Multiple) else {
        let _ = placed.send(Err("MPI was already initialised by other code".into()));
        return;
    };
    let world = SimpleCommunicator::world();
    let rank = usize::try_from(world.rank()).unwrap_or(0);
    let size = usize::try_from(world.size()).unwrap_or(1);
    // The ranks that share this host's memory, numbered in rank order.
    let local = usize::try_from(world.split_shared(world.rank()).rank()).unwrap_or(0);
    if placed.send(Ok((rank, size, local))).is_err() {
        return;
    }
    while let Ok(job) = queue.recv() {
        job(&world);
        if EXITING.load(Ordering::SeqCst) {
            break;
        }
    }
    // Dropping the universe calls MPI_Finalize.
    drop(universe);
    if let Ok(mut slot) = FINALIZED.lock()
        && let Some(done) = slot.take()
    {
        let _ = done.send(());
    }
}
