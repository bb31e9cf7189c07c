//! The `#[tune]` attribute of gputune (issue #3).
