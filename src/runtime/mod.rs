//! What the library does inside its host's process besides computing: the [`threads`] it
//! encodes and decodes on, the [`limits`] on the buffers metadata may ask for, and the
//! [`memory`] it keeps between calls and gives back on request. Each is a documented,
//! bounded, host-settable piece of process state; nothing else is.

pub mod limits;
pub mod memory;
mod placement;
pub mod read_buffers;
pub mod threads;
