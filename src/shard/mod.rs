//! One shard object: its inner chunks read through the index ([`reader`]), written by the
//! strategies the sharding spec describes ([`writer`], with [`encoded`] holding a shard's
//! encoded chunks until they are written and [`streamed`] writing them while they are still
//! being encoded), and recovered after a torn write ([`repair`]). Everything here works on one
//! object's [`crate::ShardIo`]; which object holds which shard is the array's business.

pub mod encoded;
pub mod reader;
pub mod repair;
pub mod streamed;
pub mod writer;
