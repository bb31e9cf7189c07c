//! Advisory file locks (`flock`): the kernel drops them when the process dies, however it
//! dies, so a killed search never leaves a stale lock behind.

use std::fs::File;
use std::io::{Read, Seek, Write};
use std::os::fd::AsRawFd;
use std::path::Path;

use anyhow::{Context, Result};

/// An exclusive lock on a file, held until dropped.
#[derive(Debug)]
pub struct FileLock {
    _file: File,
}

/// How [`FileLock::acquire`] met a lock that another process holds.
pub enum Busy {
    /// Wait for it.
    Wait,
    /// Give up at once; the error names the holder's pid, read from the file.
    Fail,
}

impl FileLock {
    /// Takes the lock on `path` (created if missing) and writes this process's id into it.
    /// With [`Busy::Fail`], `Ok(Err(pid))` says another process holds it (its pid, if known).
    pub fn acquire(path: &Path, busy: Busy) -> Result<std::result::Result<FileLock, Option<u32>>> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("cannot create {}", dir.display()))?;
        }
        let mut file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .with_context(|| format!("cannot open {}", path.display()))?;
        let flags = match busy {
            Busy::Wait => libc::LOCK_EX,
            Busy::Fail => libc::LOCK_EX | libc::LOCK_NB,
        };
        loop {
            // SAFETY: flock on a descriptor this function owns; no memory is involved.
            if unsafe { libc::flock(file.as_raw_fd(), flags) } == 0 {
                break;
            }
            let err = std::io::Error::last_os_error();
            match busy {
                Busy::Wait if err.kind() == std::io::ErrorKind::Interrupted => continue,
                Busy::Wait => {
                    return Err(err).with_context(|| format!("cannot lock {}", path.display()))
                }
                Busy::Fail => {
                    let mut holder = String::new();
                    let _ = file.read_to_string(&mut holder);
                    return Ok(Err(holder.trim().parse::<u32>().ok()));
                }
            }
        }
        file.set_len(0)?;
        file.rewind()?;
        write!(file, "{}", std::process::id())?;
        Ok(Ok(FileLock { _file: file }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_held_lock_is_reported_with_its_holder() {
        let dir = std::env::temp_dir().join(format!("gputune-lock-{}", std::process::id()));
        let path = dir.join("x.lock");
        let held = FileLock::acquire(&path, Busy::Fail)
            .expect("opens")
            .expect("free");
        // flock locks belong to the open file description, so a second open in this process
        // conflicts as another process's would.
        let again = FileLock::acquire(&path, Busy::Fail).expect("opens");
        assert_eq!(again.err(), Some(Some(std::process::id())));
        drop(held);
        assert!(FileLock::acquire(&path, Busy::Fail).expect("opens").is_ok());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
