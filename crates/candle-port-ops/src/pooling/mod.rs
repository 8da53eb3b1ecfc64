//! Pooling: 1-D/2-D max, average and adaptive pooling.
