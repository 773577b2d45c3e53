//! The torch.export frontend on a bare `model.json` (no archive, so no weights): any text must
//! import or fail with an `ImportError`, never panic. What imports must print, and the printed
//! module must parse back (the frontend never builds a module its own parser rejects).
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    if let Ok(imported) = ember_compiler::frontend::import_json(text, None, "fuzz.json") {
        let printed = ember_ir::print_module(&imported.module);
        if let Err(e) = ember_ir::parse_module(&printed) {
            panic!("an imported module does not parse back: {e}\n{printed}");
        }
    }
});
