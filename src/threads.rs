//! Helper threads that run beside their caller, not after it.
//!
//! Every helper noma starts splits work with its caller: the two halves of
//! a big parse, id registration beside the validation walk, pre-validation
//! and the staged write beside a patch. That only pays when both run at
//! once on different CPUs. Some kernels place a new thread on its
//! creator's CPU and leave it there while another CPU idles. The VM this
//! project is measured on boots with a vCPU-packing scheduler option
//! (`sched_vcpu_pack`): there a 7.6 ms job beside a 7.6 ms helper took
//! 15 ms, not 7.8.
//!
//! So a helper started here first steps off the CPU its caller ran on, by
//! narrowing its own affinity for an instant, and then restores the
//! affinity it had: the move is made once, and the scheduler stays free to
//! place the thread afterwards. The caller yields right after the spawn,
//! because a helper put on the caller's busy CPU otherwise waited up to
//! 2.5 ms for the slice it needs to step off at all. Where none of this is
//! possible (one CPU allowed, another OS, a failing call) the helper runs
//! where it was put.

use std::io;
use std::thread::{Builder, JoinHandle, Scope, ScopedJoinHandle};

/// [`Builder::spawn_scoped`] for a helper named `name` that starts on
/// another CPU than the calling thread's when one is allowed.
pub(crate) fn spawn_scoped<'scope, 'env, F, T>(
    scope: &'scope Scope<'scope, 'env>,
    name: &str,
    job: F,
) -> io::Result<ScopedJoinHandle<'scope, T>>
where
    F: FnOnce() -> T + Send + 'scope,
    T: Send + 'scope,
{
    placed(name, |builder, caller| {
        builder.spawn_scoped(scope, stepping_off(caller, job))
    })
}

/// [`Builder::spawn`] for a helper named `name`, placed like
/// [`spawn_scoped`]'s.
pub(crate) fn spawn<F, T>(name: &str, job: F) -> io::Result<JoinHandle<T>>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    placed(name, |builder, caller| {
        builder.spawn(stepping_off(caller, job))
    })
}

/// Starts a helper named `name` through `start` (given the caller's CPU,
/// which the helper's job must step off), then lets it run.
fn placed<H>(
    name: &str,
    start: impl FnOnce(Builder, Option<usize>) -> io::Result<H>,
) -> io::Result<H> {
    let caller = current_cpu();
    let handle = start(Builder::new().name(name.into()), caller)?;
    let_helper_start(caller);
    Ok(handle)
}

/// Drops `value` on a detached helper thread named `name`, for work the
/// caller need not wait for (freeing a big tree, the last close of a big
/// replaced file). A process that exits meanwhile is fine: the OS reclaims
/// memory at once and the kernel completes a close while tearing the
/// thread down. Without a thread (resource limits) the value, moved into
/// the failed closure, is dropped here.
pub(crate) fn drop_on_helper<T: Send + 'static>(name: &str, value: T) {
    let spawned = spawn(name, move || drop(value));
    drop(spawned);
}

/// `job`, run once the helper has stepped off `caller`'s CPU.
fn stepping_off<T>(caller: Option<usize>, job: impl FnOnce() -> T) -> impl FnOnce() -> T {
    move || {
        step_off(caller);
        job()
    }
}

/// Gives a just-spawned helper the CPU for the instant it needs to step
/// off it (a no-op when nothing else is runnable here).
fn let_helper_start(caller: Option<usize>) {
    if caller.is_some() {
        std::thread::yield_now();
    }
}

/// The CPU the calling thread is running on, if the OS says.
#[cfg(target_os = "linux")]
fn current_cpu() -> Option<usize> {
    // SAFETY: sched_getcpu has no preconditions; it returns -1 on failure.
    let cpu = unsafe { libc::sched_getcpu() };
    usize::try_from(cpu).ok()
}

#[cfg(not(target_os = "linux"))]
fn current_cpu() -> Option<usize> {
    None
}

/// The calling thread's affinity mask, if the OS gives it.
#[cfg(target_os = "linux")]
fn affinity_mask() -> Option<libc::cpu_set_t> {
    // SAFETY: cpu_set_t is a plain bit array, valid when zeroed, and
    // sched_getaffinity writes at most the `size` bytes it is given.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        let size = std::mem::size_of::<libc::cpu_set_t>();
        (libc::sched_getaffinity(0, size, &mut set) == 0).then_some(set)
    }
}

/// Moves the calling thread off `cpu` (when it may run elsewhere), then
/// gives it back the affinity it had.
#[cfg(target_os = "linux")]
fn step_off(cpu: Option<usize>) {
    let (Some(cpu), Some(allowed)) = (cpu, affinity_mask()) else {
        return;
    };
    let size = std::mem::size_of::<libc::cpu_set_t>();
    // SAFETY: the CPU_* helpers are given an index below the set's capacity
    // (checked first), and the affinity calls read exactly `size` bytes.
    unsafe {
        if cpu >= 8 * size || !libc::CPU_ISSET(cpu, &allowed) || libc::CPU_COUNT(&allowed) < 2 {
            return;
        }
        let mut elsewhere = allowed;
        libc::CPU_CLR(cpu, &mut elsewhere);
        // Setting an affinity that excludes the current CPU migrates the
        // thread before the call returns; widening it again moves nothing.
        if libc::sched_setaffinity(0, size, &elsewhere) == 0 {
            libc::sched_setaffinity(0, size, &allowed);
        }
    }
}

#[cfg(not(target_os = "linux"))]
fn step_off(_cpu: Option<usize>) {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn helpers_return_their_results_and_keep_their_affinity() {
        let before = affinity();
        let sum = std::thread::scope(|scope| {
            let helper = spawn_scoped(scope, "noma-test", || (1..=10).sum::<u32>()).expect("spawn");
            helper.join().expect("join")
        });
        assert_eq!(sum, 55);
        let after = spawn("noma-test", affinity)
            .expect("spawn")
            .join()
            .expect("join");
        // The helper's affinity is the caller's again once it has moved.
        assert_eq!(after, before);
    }

    #[test]
    fn stepping_off_moves_the_thread_and_restores_its_affinity() {
        let before = affinity();
        if before.as_ref().is_none_or(|cpus| cpus.len() < 2) {
            eprintln!("one CPU allowed (or not Linux): nothing to step off to");
            return;
        }
        // Each try moves this thread; the scheduler could in principle move
        // it back in the instant before the second reading, so one miss in
        // ten is tolerated. Without the move every try would miss.
        let moved = (0..10)
            .filter(|_| {
                let from = current_cpu();
                step_off(from);
                current_cpu() != from
            })
            .count();
        assert!(
            moved >= 9,
            "moved off the current CPU in {moved} of 10 tries"
        );
        assert_eq!(affinity(), before);
    }

    /// The CPUs the calling thread may run on (Linux only).
    fn affinity() -> Option<Vec<usize>> {
        #[cfg(target_os = "linux")]
        {
            let set = affinity_mask()?;
            let capacity = 8 * std::mem::size_of::<libc::cpu_set_t>();
            // SAFETY: every index is below the set's capacity.
            Some(
                (0..capacity)
                    .filter(|&c| unsafe { libc::CPU_ISSET(c, &set) })
                    .collect(),
            )
        }
        #[cfg(not(target_os = "linux"))]
        None
    }
}
