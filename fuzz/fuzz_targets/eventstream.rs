#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| behest_fuzz::checks::eventstream::check(data));
