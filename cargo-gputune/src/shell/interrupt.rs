//! Ctrl-C: one line that says what was kept, then the process ends by SIGINT as it would
//! have without a handler (a shell reports exit status 130, and a shell loop around it
//! stops).
//!
//! Child processes are handled as before: they run in their own process groups
//! ([`crate::host::process`]), so the terminal's SIGINT does not reach them, and `PR_SET_PDEATHSIG`
//! kills them when this process ends, as when SIGINT killed it outright. The store keeps
//! what was committed (each variant's rows commit as one transaction), as after `kill -9`.

use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, Ordering};

/// Whether this command writes results to a store as it goes.
static STORING: AtomicBool = AtomicBool::new(false);
/// Whether stderr is a terminal (the line then first clears the progress bar and `^C`).
static TERMINAL: AtomicBool = AtomicBool::new(false);

const PLAIN: &[u8] = b"gputune: interrupted\n";
const STORED: &[u8] = b"gputune: interrupted; everything finished so far is in the store\n";
const CLEAR_LINE: &[u8] = b"\r\x1b[2K";

/// Installs the SIGINT handler, unless SIGINT is ignored (a job started with `nohup` or in
/// the background of a script must stay deaf to it).
pub fn install() {
    TERMINAL.store(std::io::stderr().is_terminal(), Ordering::Relaxed);
    // SAFETY: sigaction with zero-initialised structs this function owns; the handler only
    // makes async-signal-safe calls.
    unsafe {
        let mut old: libc::sigaction = std::mem::zeroed();
        if libc::sigaction(libc::SIGINT, std::ptr::null(), &mut old) != 0
            || old.sa_sigaction == libc::SIG_IGN
        {
            return;
        }
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = on_sigint as extern "C" fn(libc::c_int) as libc::sighandler_t;
        // Back to the default action on entry, so that the handler can end the process by
        // raising the signal again (and a second Ctrl-C ends it at once).
        action.sa_flags = libc::SA_RESETHAND | libc::SA_RESTART;
        libc::sigemptyset(&mut action.sa_mask);
        libc::sigaction(libc::SIGINT, &action, std::ptr::null_mut());
    }
}

/// From now on, the line says that what finished is in the store.
pub fn storing() {
    STORING.store(true, Ordering::Relaxed);
}

/// The bytes the handler writes.
fn message(storing: bool, terminal: bool) -> [&'static [u8]; 2] {
    [
        if terminal { CLEAR_LINE } else { b"" },
        if storing { STORED } else { PLAIN },
    ]
}

extern "C" fn on_sigint(_: libc::c_int) {
    // Only async-signal-safe calls: atomic loads, write(2) and raise(3).
    let storing = STORING.load(Ordering::Relaxed);
    let terminal = TERMINAL.load(Ordering::Relaxed);
    for part in message(storing, terminal) {
        // SAFETY: writes a static buffer to stderr's descriptor.
        unsafe { libc::write(2, part.as_ptr().cast(), part.len()) };
    }
    // SAFETY: SIGINT is blocked while this handler runs and its action is the default again
    // (SA_RESETHAND): the raised signal ends the process as soon as the handler returns.
    unsafe { libc::raise(libc::SIGINT) };
}

#[cfg(test)]
mod tests {
    use std::os::unix::process::ExitStatusExt;
    use std::process::Command;

    use super::*;

    const CHILD: &str = "GPUTUNE_TEST_SIGINT_CHILD";

    #[test]
    fn sigint_says_what_was_kept_and_ends_by_the_signal() {
        if std::env::var_os(CHILD).is_some() {
            // The child: install, then Ctrl-C.
            install();
            storing();
            // SAFETY: raises SIGINT in this test process, which the handler ends.
            unsafe { libc::raise(libc::SIGINT) };
            std::thread::sleep(std::time::Duration::from_secs(5));
            std::process::exit(0);
        }
        let exe = std::env::current_exe().expect("the test binary");
        // This test's own name, as libtest knows it (the module path without the crate's).
        let module = module_path!().split_once("::").map_or("", |(_, m)| m);
        let name = format!("{module}::sigint_says_what_was_kept_and_ends_by_the_signal");
        let mut child = Command::new(exe);
        child
            .args(["--exact", &name, "--nocapture"])
            .env(CHILD, "1");
        // A shell starts background jobs (`cargo test &`, `nohup`) with SIGINT ignored, and a
        // child inherits that, where the handler rightly stays off: the child starts as a
        // terminal's foreground job would, with SIGINT's default action.
        // SAFETY: `signal` is async-signal-safe, as code between fork and exec must be.
        unsafe {
            std::os::unix::process::CommandExt::pre_exec(&mut child, || {
                libc::signal(libc::SIGINT, libc::SIG_DFL);
                Ok(())
            });
        }
        let out = child.output().expect("the child runs");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.signal(), Some(libc::SIGINT), "{stderr}");
        assert!(
            stderr.contains("gputune: interrupted; everything finished so far is in the store\n"),
            "{stderr}"
        );
        assert_eq!(
            stderr.matches("gputune: interrupted").count(),
            1,
            "{stderr}"
        );
    }

    #[test]
    fn the_line_clears_the_bar_on_a_terminal_only() {
        assert_eq!(message(false, false), [&b""[..], PLAIN]);
        assert_eq!(message(true, true), [CLEAR_LINE, STORED]);
    }
}
