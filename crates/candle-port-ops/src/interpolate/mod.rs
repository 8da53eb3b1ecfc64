//! Resizing: every `F.interpolate` mode.
