//! What a PTX text says about itself, read without a driver.

/// The kernel symbols a PTX text defines (`.visible .entry NAME(`), in order.
pub fn entries(ptx: &str) -> Vec<String> {
    ptx.lines()
        .filter_map(|l| {
            let rest = l.trim_start();
            let rest = rest.strip_prefix(".visible").unwrap_or(rest).trim_start();
            let rest = rest.strip_prefix(".entry")?.trim_start();
            let end = rest.find(|c: char| c == '(' || c.is_whitespace())?;
            Some(rest[..end].to_string())
        })
        .collect()
}
