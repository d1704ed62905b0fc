// Placeholder while the real implementation is being written.
