//! The IR text parser and verifier (`ember opt`, `.mlir` inputs): any text must parse or fail with
//! a `ParseError`, and verify or fail with `VerifyError`s, never panic or overflow the stack.
//! A module that parses must round-trip: print(parse(print(m))) == print(m), or the printer and
//! the parser disagree about some construct and a saved module would come back changed.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let Ok(m) = ember_ir::parse_module(text) else { return };
    let _ = ember_ir::verify::verify(&m);
    let printed = ember_ir::print_module(&m);
    let again = match ember_ir::parse_module(&printed) {
        Ok(m2) => ember_ir::print_module(&m2),
        Err(e) => panic!("a printed module does not parse back: {e}\n--- input\n{text}\n--- printed\n{printed}"),
    };
    assert_eq!(printed, again, "printing is not stable under a parse round trip");
});
