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
    let start = Instant::now();
    let mut child = cmd.process_group(0).spawn()?;
    let pid = child.id() as libc::pid_t;
    let status: ExitStatus = loop {
        if let Some(status) = child.try_wait()? {
            break status;
        }
        if limit.is_some_and(|l| start.elapsed() > l) {
            // SAFETY: signals the group this function created; no memory is touched.
            unsafe { libc::kill(-pid, libc::SIGKILL) };
            let _ = child.wait();
            return Ok(Finished {
                exit: Exit::TimedOut,
                seconds: start.elapsed().as_secs_f64(),
            });
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let exit = match (status.code(), status.signal()) {
        (Some(code), _) => Exit::Code(code),
        (None, Some(sig)) => Exit::Signal(sig),
        (None, None) => Exit::Code(-1),
    };
    Ok(Finished {
        exit,
        seconds: start.elapsed().as_secs_f64(),
    })
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
}
