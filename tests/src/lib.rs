//! End-to-end tests live in `tests/`; this library is empty.
