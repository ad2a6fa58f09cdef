//! Shared helpers for gpukernel's integration tests.
