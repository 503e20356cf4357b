//! PDF text extraction as a WASI command, run by the host inside a wasm sandbox (a memory cap,
//! an instruction budget, no files, no network): the PDF comes on stdin, its text goes to
//! stdout. A parser bug on a hostile file can only end this one run.
//!
//! On failure the run exits with an error and stderr says why, beginning with a kind:
//! `encrypted:` (a password is needed), `unreadable:` (not a PDF this parser can read) or
//! `too-long:` (the text does not fit the host's output limit). A panic traps, which the host
//! reports as a PDF it could not read.

use std::io::{Read, Write};
use std::process::ExitCode;

fn main() -> ExitCode {
    let mut pdf = Vec::new();
    if let Err(e) = std::io::stdin().read_to_end(&mut pdf) {
        eprintln!("unreadable: cannot read the input: {e}");
        return ExitCode::FAILURE;
    }
    match pdf_extract::extract_text_from_mem(&pdf) {
        Ok(text) => {
            let mut out = std::io::stdout().lock();
            if let Err(e) = out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
                eprintln!("too-long: the text does not fit the output limit: {e}");
                return ExitCode::FAILURE;
            }
            ExitCode::SUCCESS
        }
        Err(pdf_extract::OutputError::PdfError(
            e @ (lopdf::Error::Decryption(_) | lopdf::Error::InvalidPassword),
        )) => {
            eprintln!("encrypted: the PDF cannot be opened without its password ({e})");
            ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("unreadable: {e}");
            ExitCode::FAILURE
        }
    }
}
