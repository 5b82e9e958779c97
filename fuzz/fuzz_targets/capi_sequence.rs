#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| zarrshard_fuzz::capi_sequence(data));
