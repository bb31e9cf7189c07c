//! Headless Chromium for the tests of `report --html`, driven over the DevTools protocol on a
//! pipe (`--remote-debugging-pipe`: commands in on fd 3, replies and events out on fd 4, each
//! message JSON ended by a NUL), so that no port is opened and no WebSocket crate is needed.

use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::os::fd::{FromRawFd, RawFd};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

/// How long one command or page load may take before the browser counts as hung.
const PATIENCE: Duration = Duration::from_secs(120);

/// A running headless Chromium with one page attached.
pub struct Browser {
    child: Child,
    to: File,
    from: Receiver<Value>,
    next: u64,
    session: String,
    /// Events received and not yet asked for, oldest first.
    events: Vec<Value>,
    profile: PathBuf,
}

/// The Chromium executable: `$CHROMIUM`, else `chromium` or `chromium-browser` on PATH.
fn executable() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("CHROMIUM").filter(|p| !p.is_empty()) {
        return Some(PathBuf::from(p));
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .flat_map(|d| [d.join("chromium"), d.join("chromium-browser")])
        .find(|p| p.is_file())
}

/// A pipe whose ends are at 10 or above and closed on exec, so that making them the child's
/// fds 3 and 4 cannot overwrite one another.
fn pipe() -> std::io::Result<(RawFd, RawFd)> {
    let mut fds = [0; 2];
    // SAFETY: `fds` is a valid array of two ints for pipe(2) to fill.
    if unsafe { libc::pipe(fds.as_mut_ptr()) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    let mut high = [0; 2];
    for (h, fd) in high.iter_mut().zip(fds) {
        // SAFETY: `fd` was just opened by pipe(2) and is owned here.
        *h = unsafe { libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 10) };
        unsafe { libc::close(fd) };
        if *h < 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok((high[0], high[1]))
}

impl Browser {
    /// Starts Chromium with a `width` × `height` viewport and attaches to its page; `Err`
    /// says why it cannot run here (not installed, or it would not start).
    pub fn launch(width: u32, height: u32) -> Result<Browser, String> {
        let exe = executable().ok_or("no chromium on PATH (Debian: apt-get install chromium)")?;
        let profile = std::env::temp_dir().join(format!(
            "gputune-chromium-{}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        let _ = std::fs::remove_dir_all(&profile);
        let (child_in, to) = pipe().map_err(|e| format!("pipe: {e}"))?;
        let (from, child_out) = pipe().map_err(|e| format!("pipe: {e}"))?;
        let mut cmd = Command::new(&exe);
        cmd.args([
            "--headless",
            "--remote-debugging-pipe",
            // Root in a container has no user namespace to sandbox with.
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--no-first-run",
            "--no-default-browser-check",
            "--hide-scrollbars",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg(format!("--window-size={width},{height}"))
        .arg("about:blank")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
        // SAFETY: only dup2, which is async-signal-safe, runs between fork and exec.
        unsafe {
            cmd.pre_exec(move || {
                if libc::dup2(child_in, 3) < 0 || libc::dup2(child_out, 4) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let spawned = cmd.spawn();
        // SAFETY: the child's copies are made; these ends are ours to close.
        unsafe {
            libc::close(child_in);
            libc::close(child_out);
        }
        let child = spawned.map_err(|e| format!("{} did not start: {e}", exe.display()))?;
        // SAFETY: `to` and `from` are open pipe ends owned by nothing else.
        let (to, from) = unsafe { (File::from_raw_fd(to), File::from_raw_fd(from)) };
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut reader = BufReader::new(from);
            let mut buf = Vec::new();
            while reader.read_until(0, &mut buf).is_ok_and(|n| n > 0) {
                buf.pop();
                if let Ok(v) = serde_json::from_slice::<Value>(&buf) {
                    if tx.send(v).is_err() {
                        break;
                    }
                }
                buf.clear();
            }
        });
        let mut b = Browser {
            child,
            to,
            from: rx,
            next: 0,
            session: String::new(),
            events: Vec::new(),
            profile,
        };
        let targets = b
            .call("Target.getTargets", json!({}))
            .map_err(|e| format!("{} started but does not answer: {e}", exe.display()))?;
        let page = targets["targetInfos"]
            .as_array()
            .and_then(|t| t.iter().find(|t| t["type"] == "page"))
            .and_then(|t| t["targetId"].as_str())
            .ok_or("chromium has no page")?
            .to_string();
        let attached = b.call(
            "Target.attachToTarget",
            json!({ "targetId": page, "flatten": true }),
        )?;
        b.session = attached["sessionId"]
            .as_str()
            .ok_or("no session")?
            .to_string();
        for domain in ["Page", "Runtime", "Log"] {
            b.page_call(&format!("{domain}.enable"), json!({}))?;
        }
        b.page_call(
            "Emulation.setDeviceMetricsOverride",
            json!({ "width": width, "height": height, "deviceScaleFactor": 1, "mobile": false }),
        )?;
        Ok(b)
    }

    fn next_message(&mut self, deadline: Instant) -> Result<Value, String> {
        let left = deadline.saturating_duration_since(Instant::now());
        match self.from.recv_timeout(left) {
            Ok(v) => Ok(v),
            Err(RecvTimeoutError::Timeout) => {
                Err(format!("chromium gave no answer in {PATIENCE:?}"))
            }
            Err(RecvTimeoutError::Disconnected) => Err("chromium closed its pipe".into()),
        }
    }

    fn send(&mut self, method: &str, params: Value, session: bool) -> Result<Value, String> {
        self.next += 1;
        let mut msg = json!({ "id": self.next, "method": method, "params": params });
        if session {
            msg["sessionId"] = Value::from(self.session.clone());
        }
        let mut bytes = msg.to_string().into_bytes();
        bytes.push(0);
        self.to
            .write_all(&bytes)
            .map_err(|e| format!("{method}: {e}"))?;
        let deadline = Instant::now() + PATIENCE;
        loop {
            let m = self.next_message(deadline)?;
            if m["id"] == self.next {
                if !m["error"].is_null() {
                    return Err(format!("{method}: {}", m["error"]));
                }
                return Ok(m["result"].clone());
            }
            self.events.push(m);
        }
    }

    /// A command to the browser.
    fn call(&mut self, method: &str, params: Value) -> Result<Value, String> {
        self.send(method, params, false)
    }

    /// A command to the page.
    fn page_call(&mut self, method: &str, params: Value) -> Result<Value, String> {
        self.send(method, params, true)
    }

    /// Waits for the page's event `method`, keeping the others.
    fn wait_for(&mut self, method: &str) -> Result<Value, String> {
        let deadline = Instant::now() + PATIENCE;
        loop {
            if let Some(k) = self.events.iter().position(|e| e["method"] == method) {
                return Ok(self.events.remove(k));
            }
            let m = self.next_message(deadline)?;
            self.events.push(m);
        }
    }

    /// Opens `path` and waits for its load event; what was logged before is forgotten.
    pub fn open(&mut self, path: &Path) -> Result<(), String> {
        let path = path
            .canonicalize()
            .map_err(|e| format!("{}: {e}", path.display()))?;
        self.events.clear();
        self.page_call(
            "Page.navigate",
            json!({ "url": format!("file://{}", path.display()) }),
        )?;
        self.wait_for("Page.loadEventFired").map(|_| ())
    }

    /// The value of the JavaScript `expression` in the page (promises awaited).
    pub fn eval(&mut self, expression: &str) -> Result<Value, String> {
        let r = self.page_call(
            "Runtime.evaluate",
            json!({ "expression": expression, "returnByValue": true, "awaitPromise": true }),
        )?;
        if !r["exceptionDetails"].is_null() {
            return Err(format!("{expression}: {}", r["exceptionDetails"]));
        }
        Ok(r["result"]["value"].clone())
    }

    /// Types `text` into the focused element, as a keyboard would.
    pub fn type_text(&mut self, text: &str) -> Result<(), String> {
        self.page_call("Input.insertText", json!({ "text": text }))
            .map(|_| ())
    }

    /// Clicks the centre of the first element `selector` matches, with the mouse.
    pub fn click(&mut self, selector: &str) -> Result<(), String> {
        let at = self.eval(&format!(
            "(() => {{ const e = document.querySelector({}); e.scrollIntoView({{block: 'center'}}); \
             const r = e.getBoundingClientRect(); return [r.x + r.width / 2, r.y + r.height / 2]; }})()",
            Value::from(selector)
        ))?;
        let (x, y) = (at[0].as_f64().unwrap_or(0.0), at[1].as_f64().unwrap_or(0.0));
        for kind in ["mousePressed", "mouseReleased"] {
            self.page_call(
                "Input.dispatchMouseEvent",
                json!({ "type": kind, "x": x, "y": y, "button": "left", "clickCount": 1 }),
            )?;
        }
        Ok(())
    }

    /// A PNG of the viewport.
    pub fn screenshot(&mut self) -> Result<Vec<u8>, String> {
        let shot = self.page_call("Page.captureScreenshot", json!({ "format": "png" }))?;
        decode_base64(shot["data"].as_str().unwrap_or_default())
            .ok_or_else(|| "the screenshot is not base64".into())
    }

    /// The console errors and uncaught exceptions of the page since it was opened.
    pub fn errors(&mut self) -> Vec<String> {
        // Drain what has arrived, without waiting.
        while let Ok(m) = self.from.try_recv() {
            self.events.push(m);
        }
        self.events
            .iter()
            .filter_map(|e| {
                let p = &e["params"];
                match e["method"].as_str()? {
                    "Runtime.exceptionThrown" => Some(p["exceptionDetails"].to_string()),
                    "Runtime.consoleAPICalled" if p["type"] == "error" => {
                        Some(p["args"].to_string())
                    }
                    "Log.entryAdded" if p["entry"]["level"] == "error" => {
                        Some(p["entry"].to_string())
                    }
                    _ => None,
                }
            })
            .collect()
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.profile);
    }
}

/// Standard base64, padding allowed; `None` on any other character.
fn decode_base64(text: &str) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(text.len() / 4 * 3);
    let (mut acc, mut bits) = (0u32, 0u32);
    for c in text.bytes().filter(|&c| c != b'=') {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        };
        acc = (acc << 6) | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    #[test]
    fn base64_decodes() {
        assert_eq!(super::decode_base64("aGVsbG8="), Some(b"hello".to_vec()));
        assert_eq!(
            super::decode_base64("iVBORw0KGgo="),
            Some(b"\x89PNG\r\n\x1a\n".to_vec())
        );
        assert_eq!(super::decode_base64("a!"), None);
    }
}
