//! Where the bytes live: [`io`] is positional I/O of one object (the seam between the codec
//! core and storage: memory, a file, or the host's callbacks), and [`store`] maps keys
//! (`zarr.json`, `c/0/1`, …) to such objects (a directory, memory, a path prefix, the host's
//! store). The engine above never sees paths or handles, only these two traits.

pub mod io;
pub mod store;
