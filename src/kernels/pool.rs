//! A persistent thread pool for the kernels: workers are spawned once, park between calls,
//! and each call broadcasts one closure to all threads (the caller is thread 0) and returns
//! when every thread has finished (a completion barrier).
//!
//! Why not rayon: a model step is ~200 small GEMMs, so per-call overhead matters; we want a
//! fixed thread ↔ index mapping (per-thread scratch, AMX tile state per thread, optional
//! pinning) rather than work stealing. Wake-up is spin-then-park: after a call, workers spin
//! for [`PoolConfig::spin`] before sleeping on a condvar, so back-to-back GEMMs never pay a
//! futex wake. The AMX permission (`arch_prctl`) is requested once, before any worker starts.
//!
//! Each thread owns a 64-byte aligned scratch buffer ([`Worker::scratch`]) that grows on
//! demand and is kept across calls, so kernels do not allocate in steady state.
//! A panic inside the closure on any thread is re-raised on the caller after all threads
//! have finished the call.

use std::cell::UnsafeCell;
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::buf::AlignedBuf;

/// Pool construction options.
#[derive(Clone, Debug)]
pub struct PoolConfig {
    /// Total threads, the caller included (≥ 1).
    pub threads: usize,
    /// How long an idle worker spins before parking.
    pub spin: Duration,
    /// Pin worker i to the i-th CPU of the process affinity mask (Linux only; the caller
    /// thread is left alone). Off by default: on a shared machine pinning can hurt.
    pub pin: bool,
}

impl PoolConfig {
    /// `threads` threads, 50 µs spin, no pinning.
    pub fn new(threads: usize) -> Self {
        Self {
            threads: threads.max(1),
            spin: Duration::from_micros(50),
            pin: false,
        }
    }
}

/// What one thread sees during a [`ThreadPool::run`] call.
pub struct Worker<'a> {
    /// This thread's index, 0..threads (0 is the caller).
    pub index: usize,
    /// Threads taking part.
    pub threads: usize,
    scratch: &'a mut AlignedBuf<u8>,
}

impl Worker<'_> {
    /// This thread's scratch, at least `bytes` long, 64-byte aligned. Grows (allocates) only
    /// when a call needs more than any earlier one; contents are unspecified.
    pub fn scratch(&mut self, bytes: usize) -> &mut [u8] {
        self.scratch.ensure_len(bytes);
        &mut self.scratch[..bytes]
    }
}

type Job<'a> = dyn Fn(&mut Worker<'_>) + Sync + 'a;

struct Shared {
    generation: AtomicU64,
    /// The current job, lifetime-erased; valid while `remaining > 0` for the current generation.
    job: UnsafeCell<Option<*const Job<'static>>>,
    remaining: AtomicUsize,
    panicked: AtomicBool,
    shutdown: AtomicBool,
    sleepers: AtomicUsize,
    lock: Mutex<()>,
    wake: Condvar,
    scratch: Box<[UnsafeCell<AlignedBuf<u8>>]>,
    spin: Duration,
}

// SAFETY: `job` is written only by the caller of `run` (serialised by `ThreadPool::run_lock`)
// before the generation bump (Release) and read by workers after observing it (Acquire);
// each scratch slot is touched only by the one thread owning that index during a call.
unsafe impl Sync for Shared {}
// SAFETY: as above; the raw job pointer is only dereferenced under that protocol.
unsafe impl Send for Shared {}

/// The persistent pool. See the module docs.
pub struct ThreadPool {
    shared: Arc<Shared>,
    handles: Vec<JoinHandle<()>>,
    run_lock: Mutex<()>,
    partials: Mutex<AlignedBuf<f32>>,
    threads: usize,
}

impl ThreadPool {
    /// Start a pool of `threads` threads (the caller counts as one).
    pub fn new(threads: usize) -> std::io::Result<Self> {
        Self::with_config(PoolConfig::new(threads))
    }

    /// Start a pool with explicit options. Requests the AMX tile permission first.
    pub fn with_config(cfg: PoolConfig) -> std::io::Result<Self> {
        // Before any worker exists (kernels.md §6.3); a no-op off x86 or without AMX.
        let _ = super::cpu::amx_permission();
        let threads = cfg.threads.max(1);
        let shared = Arc::new(Shared {
            generation: AtomicU64::new(0),
            job: UnsafeCell::new(None),
            remaining: AtomicUsize::new(0),
            panicked: AtomicBool::new(false),
            shutdown: AtomicBool::new(false),
            sleepers: AtomicUsize::new(0),
            lock: Mutex::new(()),
            wake: Condvar::new(),
            scratch: (0..threads)
                .map(|_| UnsafeCell::new(AlignedBuf::zeroed(0)))
                .collect(),
            spin: cfg.spin,
        });
        let cpus = if cfg.pin { allowed_cpus() } else { Vec::new() };
        let mut handles = Vec::with_capacity(threads - 1);
        for index in 1..threads {
            let sh = Arc::clone(&shared);
            let cpu = (!cpus.is_empty()).then(|| cpus[index % cpus.len()]);
            let h = std::thread::Builder::new()
                .name(format!("edgeplan-kernel-{index}"))
                .spawn(move || {
                    if let Some(cpu) = cpu {
                        pin_current(cpu);
                    }
                    worker_loop(&sh, index, threads)
                });
            match h {
                Ok(h) => handles.push(h),
                Err(e) => {
                    let pool = Self {
                        shared,
                        handles,
                        run_lock: Mutex::new(()),
                        partials: Mutex::new(AlignedBuf::zeroed(0)),
                        threads,
                    };
                    drop(pool); // joins the ones already started
                    return Err(e);
                }
            }
        }
        Ok(Self {
            shared,
            handles,
            run_lock: Mutex::new(()),
            partials: Mutex::new(AlignedBuf::zeroed(0)),
            threads,
        })
    }

    /// A shared f32 buffer of at least `len` values (kept across calls), for split-K partial
    /// sums: lock it before [`ThreadPool::run`], hand workers disjoint views of it (the
    /// splitter's `OutSink`s), reduce after. Contents are unspecified.
    pub fn partials(&self, len: usize) -> std::sync::MutexGuard<'_, AlignedBuf<f32>> {
        let mut g = self.partials.lock().unwrap_or_else(|e| e.into_inner());
        g.ensure_len(len);
        g
    }

    /// Threads taking part in each call.
    pub fn threads(&self) -> usize {
        self.threads
    }

    /// Run `f` once on every thread (caller = index 0) and wait for all of them.
    pub fn run<F: Fn(&mut Worker<'_>) + Sync>(&self, f: F) {
        let guard = self.run_lock.lock().unwrap_or_else(|e| e.into_inner());
        let sh = &*self.shared;
        let job: &Job<'_> = &f;
        // SAFETY: erase the closure's lifetime. Workers only use the pointer between the
        // generation bump below and their `remaining` decrement, and this function does not
        // return (nor unwind: see `Finish`) before `remaining` is 0 again.
        let job: *const Job<'static> = unsafe { std::mem::transmute(job as *const Job<'_>) };
        // SAFETY: no worker reads `job` now: the previous call ended with remaining == 0.
        unsafe { *sh.job.get() = Some(job) };
        sh.panicked.store(false, Ordering::Relaxed);
        sh.remaining.store(self.threads - 1, Ordering::Relaxed);
        sh.generation.fetch_add(1, Ordering::SeqCst);
        if sh.sleepers.load(Ordering::SeqCst) > 0 {
            let _l = sh.lock.lock().unwrap_or_else(|e| e.into_inner());
            sh.wake.notify_all();
        }
        // Wait for the workers even if the caller's share panics.
        struct Finish<'a>(&'a Shared);
        impl Drop for Finish<'_> {
            fn drop(&mut self) {
                let mut spins = 0u32;
                while self.0.remaining.load(Ordering::Acquire) != 0 {
                    spins += 1;
                    if spins < 2000 {
                        std::hint::spin_loop();
                    } else {
                        std::thread::yield_now();
                    }
                }
                // SAFETY: every worker has finished with the job pointer.
                unsafe { *self.0.job.get() = None };
            }
        }
        let finish = Finish(sh);
        // SAFETY: slot 0 belongs to the caller thread; run_lock excludes other callers.
        let scratch = unsafe { &mut *sh.scratch[0].get() };
        f(&mut Worker {
            index: 0,
            threads: self.threads,
            scratch,
        });
        drop(finish);
        drop(guard);
        if sh.panicked.load(Ordering::Acquire) {
            resume_unwind(Box::new("a kernel worker thread panicked"));
        }
    }
}

fn worker_loop(sh: &Shared, index: usize, threads: usize) {
    let mut seen = 0u64;
    loop {
        // Spin, then park.
        let start = Instant::now();
        let mut n = 0u32;
        while sh.generation.load(Ordering::Acquire) == seen && !sh.shutdown.load(Ordering::Relaxed)
        {
            n = n.wrapping_add(1);
            if n.is_multiple_of(64) && start.elapsed() >= sh.spin {
                let mut l = sh.lock.lock().unwrap_or_else(|e| e.into_inner());
                sh.sleepers.fetch_add(1, Ordering::SeqCst);
                while sh.generation.load(Ordering::SeqCst) == seen
                    && !sh.shutdown.load(Ordering::SeqCst)
                {
                    l = sh.wake.wait(l).unwrap_or_else(|e| e.into_inner());
                }
                sh.sleepers.fetch_sub(1, Ordering::SeqCst);
                break;
            }
            std::hint::spin_loop();
        }
        if sh.shutdown.load(Ordering::Acquire) {
            return;
        }
        seen = sh.generation.load(Ordering::Acquire);
        // SAFETY: the caller stored the job before bumping the generation we observed, and
        // keeps it alive until we decrement `remaining`.
        let job = unsafe { (*sh.job.get()).expect("job set before generation bump") };
        // SAFETY: slot `index` is used only by this thread.
        let scratch = unsafe { &mut *sh.scratch[index].get() };
        let r = catch_unwind(AssertUnwindSafe(|| {
            // SAFETY: see above: the pointee outlives this call.
            let f = unsafe { &*job };
            f(&mut Worker {
                index,
                threads,
                scratch,
            });
        }));
        if r.is_err() {
            sh.panicked.store(true, Ordering::Release);
        }
        sh.remaining.fetch_sub(1, Ordering::AcqRel);
    }
}

impl Drop for ThreadPool {
    fn drop(&mut self) {
        self.shared.shutdown.store(true, Ordering::SeqCst);
        {
            let _l = self.shared.lock.lock().unwrap_or_else(|e| e.into_inner());
            self.shared.wake.notify_all();
        }
        for h in self.handles.drain(..) {
            let _ = h.join();
        }
    }
}

impl std::fmt::Debug for ThreadPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ThreadPool({} threads)", self.threads)
    }
}

/// Split `0..total` into `parts` near-equal contiguous ranges; range of part `i`.
pub fn split_range(total: usize, parts: usize, i: usize) -> std::ops::Range<usize> {
    let parts = parts.max(1);
    (total * i / parts)..(total * (i + 1) / parts)
}

#[cfg(target_os = "linux")]
fn allowed_cpus() -> Vec<usize> {
    // SAFETY: cpu_set_t is plain data; sched_getaffinity writes at most its size.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return Vec::new();
        }
        (0..libc::CPU_SETSIZE as usize)
            .filter(|&c| libc::CPU_ISSET(c, &set))
            .collect()
    }
}

#[cfg(target_os = "linux")]
fn pin_current(cpu: usize) {
    // SAFETY: as above; failure to pin is harmless (the thread just floats).
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        let _ = libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
    }
}

#[cfg(not(target_os = "linux"))]
fn allowed_cpus() -> Vec<usize> {
    Vec::new()
}

#[cfg(not(target_os = "linux"))]
fn pin_current(_cpu: usize) {}

/// Median wall time of an empty broadcast on `pool` (dispatch + barrier), over `iters` calls.
pub fn dispatch_overhead(pool: &ThreadPool, iters: usize) -> Duration {
    let mut times: Vec<Duration> = (0..iters.max(1))
        .map(|_| {
            let t = Instant::now();
            pool.run(|w| {
                std::hint::black_box(w.index);
            });
            t.elapsed()
        })
        .collect();
    times.sort();
    times[times.len() / 2]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_thread_runs_once_per_call() {
        for threads in [1, 2, 3] {
            let pool = ThreadPool::new(threads).unwrap();
            for _ in 0..100 {
                let hits: Vec<AtomicUsize> = (0..threads).map(|_| AtomicUsize::new(0)).collect();
                pool.run(|w| {
                    assert_eq!(w.threads, threads);
                    hits[w.index].fetch_add(1, Ordering::Relaxed);
                });
                assert!(hits.iter().all(|h| h.load(Ordering::Relaxed) == 1));
            }
        }
    }

    #[test]
    fn parked_workers_wake_up() {
        let cfg = PoolConfig {
            spin: Duration::from_micros(1),
            ..PoolConfig::new(2)
        };
        let pool = ThreadPool::with_config(cfg).unwrap();
        for _ in 0..5 {
            std::thread::sleep(Duration::from_millis(2));
            let n = AtomicUsize::new(0);
            pool.run(|_| {
                n.fetch_add(1, Ordering::Relaxed);
            });
            assert_eq!(n.load(Ordering::Relaxed), 2);
        }
    }

    #[test]
    fn scratch_is_aligned_and_kept() {
        let pool = ThreadPool::new(2).unwrap();
        pool.run(|w| {
            let i = w.index as u8 + 1;
            let s = w.scratch(1000);
            assert_eq!(s.as_ptr() as usize % 64, 0);
            s[999] = i;
        });
        pool.run(|w| {
            let i = w.index as u8 + 1;
            assert_eq!(w.scratch(1000)[999], i);
        });
    }

    #[test]
    fn worker_panic_reaches_the_caller_and_pool_survives() {
        let pool = ThreadPool::new(2).unwrap();
        let r = catch_unwind(AssertUnwindSafe(|| {
            pool.run(|w| {
                if w.index == 1 {
                    panic!("boom");
                }
            })
        }));
        assert!(r.is_err());
        let n = AtomicUsize::new(0);
        pool.run(|_| {
            n.fetch_add(1, Ordering::Relaxed);
        });
        assert_eq!(n.load(Ordering::Relaxed), 2);
    }

    #[test]
    fn split_range_covers_everything() {
        for total in [0, 1, 5, 64] {
            for parts in 1..5 {
                let v: Vec<usize> = (0..parts)
                    .flat_map(|i| split_range(total, parts, i))
                    .collect();
                assert_eq!(v, (0..total).collect::<Vec<_>>());
            }
        }
    }
}
