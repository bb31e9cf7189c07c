//! Child processes in their own process group, with a wall-clock limit that kills the whole
//! group (a bench's or a build's children too).

use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Command, ExitStatus};
use std::time::{Duration, Instant};

/// How a child ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// It exited with this code.
    Code(i32),
    /// A signal ended it (a crash: SIGSEGV, SIGABRT, …).
    Signal(i32),
    /// It ran past its limit and its group was killed.
    TimedOut,
}

/// A finished child.
#[derive(Debug, Clone, Copy)]
pub struct Finished {
    /// How it ended.
    pub exit: Exit,
    /// Wall time.
    pub seconds: f64,
}

/// Runs `cmd` (stdio already set by the caller) in a new process group; past `limit`, kills
/// the group with SIGKILL.
pub fn run(cmd: &mut Command, limit: Option<Duration>) -> std::io::Result<Finished> {
    run_observed(cmd, limit, || Ok::<bool, std::io::Error>(false))
}

/// [`run`], calling `observe` every few milliseconds while the child runs and once after it
/// ended. `observe` says whether the child made progress; `limit` then counts from the last
/// progress, so it bounds each step of a long run rather than the whole. An error from
/// `observe` kills the group and is returned.
pub fn run_observed<E: From<std::io::Error>>(
    cmd: &mut Command,
    limit: Option<Duration>,
    mut observe: impl FnMut() -> Result<bool, E>,
) -> Result<Finished, E> {
    let mut group = Group::spawn(cmd)?;
    loop {
        // The observer here never says stop, so the watch ends with the child.
        let watched = group.watch(limit, || {
            observe().map(|p| if p { Step::Progress } else { Step::Idle })
        })?;
        if let Watched::Ended(f) = watched {
            return Ok(f);
        }
    }
}

/// What an observer of [`Group::watch`] saw this time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// Nothing new.
    Idle,
    /// The child made progress: its limit counts from now.
    Progress,
    /// What the watch waited for has happened: return with the child still running.
    Stop,
}

/// How a [`Group::watch`] returned.
#[derive(Debug, Clone, Copy)]
pub enum Watched {
    /// The child ended.
    Ended(Finished),
    /// The observer said [`Step::Stop`]; the child still runs.
    Stopped,
}

/// A child in a process group of its own, killed with the group when it outlives its limit
/// and (`PR_SET_PDEATHSIG`) when this process dies.
#[derive(Debug)]
pub struct Group {
    child: std::process::Child,
    pid: libc::pid_t,
    start: Instant,
}

impl Group {
    /// Spawns `cmd` (stdio already set by the caller) in a new process group.
    pub fn spawn(cmd: &mut Command) -> std::io::Result<Group> {
        // SAFETY: prctl is async-signal-safe; between fork and exec it only asks the kernel to
        // SIGKILL the child when this process dies, so a killed cargo-gputune leaves no bench
        // running on the GPU.
        unsafe {
            cmd.pre_exec(|| {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                Ok(())
            });
        }
        let child = cmd.process_group(0).spawn()?;
        Ok(Group {
            pid: child.id() as libc::pid_t,
            child,
            start: Instant::now(),
        })
    }

    /// The child's stdin, when the caller piped it.
    pub fn stdin(&mut self) -> &mut Option<std::process::ChildStdin> {
        &mut self.child.stdin
    }

    /// Kills the whole group and reaps the child.
    pub fn kill(&mut self) {
        // SAFETY: signals the group this value created; no memory is touched.
        unsafe { libc::kill(-self.pid, libc::SIGKILL) };
        let _ = self.child.wait();
    }

    /// Waits until the child ends or `observe` (called every few milliseconds, and once more
    /// after the child ended) says [`Step::Stop`]. Past `limit` since the last progress (or
    /// since this call), the group is killed: [`Exit::TimedOut`]. An error from `observe`
    /// kills the group and is returned.
    pub fn watch<E: From<std::io::Error>>(
        &mut self,
        limit: Option<Duration>,
        mut observe: impl FnMut() -> Result<Step, E>,
    ) -> Result<Watched, E> {
        let mut last_progress = Instant::now();
        let status: ExitStatus = loop {
            if let Some(status) = self.child.try_wait()? {
                break status;
            }
            match observe() {
                Ok(Step::Progress) => last_progress = Instant::now(),
                Ok(Step::Idle) => {}
                Ok(Step::Stop) => return Ok(Watched::Stopped),
                Err(e) => {
                    self.kill();
                    return Err(e);
                }
            }
            if limit.is_some_and(|l| last_progress.elapsed() > l) {
                self.kill();
                observe()?;
                return Ok(Watched::Ended(Finished {
                    exit: Exit::TimedOut,
                    seconds: self.start.elapsed().as_secs_f64(),
                }));
            }
            std::thread::sleep(Duration::from_millis(10));
        };
        observe()?;
        let exit = match (status.code(), status.signal()) {
            (Some(code), _) => Exit::Code(code),
            (None, Some(sig)) => Exit::Signal(sig),
            (None, None) => Exit::Code(-1),
        };
        Ok(Watched::Ended(Finished {
            exit,
            seconds: self.start.elapsed().as_secs_f64(),
        }))
    }
}

/// `SIGSEGV (signal 11)`: how a crash reads in the store.
pub fn signal_name(sig: i32) -> String {
    let name = match sig {
        libc::SIGABRT => "SIGABRT",
        libc::SIGBUS => "SIGBUS",
        libc::SIGFPE => "SIGFPE",
        libc::SIGILL => "SIGILL",
        libc::SIGKILL => "SIGKILL",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGTERM => "SIGTERM",
        _ => "signal",
    };
    format!("{name} (signal {sig})")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_signals_and_timeouts() {
        let f = run(Command::new("sh").args(["-c", "exit 3"]), None).expect("runs");
        assert_eq!(f.exit, Exit::Code(3));
        let f = run(Command::new("sh").args(["-c", "kill -SEGV $$"]), None).expect("runs");
        assert_eq!(f.exit, Exit::Signal(libc::SIGSEGV));
        // The grandchild sleeps too; killing the group ends both, so this returns promptly.
        let f = run(
            Command::new("sh").args(["-c", "sleep 30 & sleep 30"]),
            Some(Duration::from_millis(200)),
        )
        .expect("runs");
        assert_eq!(f.exit, Exit::TimedOut);
        assert!(f.seconds < 10.0);
    }

    #[test]
    fn progress_restarts_the_limit_and_observer_errors_kill() {
        // Five steps of 0.6 s (3 s in all) under a 1.5 s limit: each step is progress, so the
        // run is not killed although it outlasts the limit.
        let mut ticks = 0u32;
        let dir = std::env::temp_dir().join(format!("gputune-proc-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let file = dir.join("steps");
        let script = format!(
            "for i in 1 2 3 4 5; do sleep 0.6; echo $i >> {}; done",
            file.display()
        );
        let mut seen = 0;
        let f = run_observed(
            Command::new("sh").args(["-c", &script]),
            Some(Duration::from_millis(1500)),
            || {
                ticks += 1;
                let n = std::fs::read_to_string(&file).map_or(0, |t| t.lines().count());
                let progress = n > seen;
                seen = n;
                Ok::<bool, std::io::Error>(progress)
            },
        )
        .expect("runs");
        assert_eq!(f.exit, Exit::Code(0));
        assert_eq!(seen, 5);
        assert!(ticks > 5);
        let r = run_observed(Command::new("sleep").arg("30"), None, || {
            Err::<bool, std::io::Error>(std::io::Error::other("stop"))
        });
        assert!(r.is_err());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
