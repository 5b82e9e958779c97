#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| zarrshard_fuzz::store_listing(data));
