//! A hostile app: written against the `atrium:app/platform` world with wit-bindgen alone, so
//! nothing of the SDK's checks stands between it and the host. Each tool attacks the host in
//! one way; `describe` reports whatever registrations `HOSTILE_REGISTER` names.

#[cfg(target_arch = "wasm32")]
// The bindings export functions by name, and the memory scan reads raw addresses.
#[allow(unsafe_code)]
mod component {
    wit_bindgen::generate!({ path: "../../../wit", world: "atrium:app/platform" });

    use std::io::Write;
    use std::sync::atomic::{AtomicU8, Ordering};

    use atrium::app::logging::log;
    use atrium::app::types::{
        AppEvent, HandlerError, InboundEnvelope, LogLevel, Registration, RoomMessage, UserAdded,
    };
    use serde_json::Value;

    const MANIFEST: &str = include_str!("../atrium.app.yaml");
    const TOOLS: [&str; 8] = [
        "noop",
        "newline_flood",
        "record_flood",
        "stderr_flood",
        "leave_marker",
        "find_marker",
        "spin",
        "grow",
    ];

    /// A marker left in the module's static data (its `.bss`).
    static STATIC_MARK: [AtomicU8; 64] = [const { AtomicU8::new(0) }; 64];

    struct Hostile;

    fn none(what: &str) -> HandlerError {
        HandlerError::NoHandler(what.to_owned())
    }

    fn number(args: &Value, key: &str) -> usize {
        args.get(key)
            .and_then(Value::as_u64)
            .and_then(|n| usize::try_from(n).ok())
            .unwrap_or(0)
    }

    /// The marker's bytes, sent XOR 0xFF so that the plain marker is never in the scanner's
    /// own memory.
    fn masked(args: &Value) -> Vec<u8> {
        args.get("masked")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_u64)
                    .map(|b| u8::try_from(b).unwrap_or(0))
                    .collect()
            })
            .unwrap_or_default()
    }

    fn leave_marker(mask: &[u8]) -> usize {
        let marker: Vec<u8> = mask.iter().map(|b| b ^ 0xFF).collect();
        for (slot, b) in STATIC_MARK.iter().zip(&marker) {
            slot.store(*b, Ordering::Relaxed);
        }
        // On the heap, and again at the end of 4 MiB of freshly grown memory.
        let heap = marker.clone().into_boxed_slice();
        let mut grown = vec![0u8; 4 << 20];
        let end = grown.len() - marker.len();
        grown[end..].copy_from_slice(&marker);
        // Kept opaque to the optimiser, which would otherwise drop allocations nobody reads.
        std::mem::forget(std::hint::black_box(heap));
        std::mem::forget(std::hint::black_box(grown));
        std::mem::forget(std::hint::black_box(marker));
        memory_bytes()
    }

    fn memory_bytes() -> usize {
        core::arch::wasm32::memory_size(0) * 65536
    }

    /// Counts the places in all of linear memory (from address 1) where the marker sits.
    fn find_marker(mask: &[u8]) -> (usize, usize) {
        let size = memory_bytes();
        let Some(&first) = mask.first() else {
            return (0, size);
        };
        let mut found = 0;
        for at in 1..size.saturating_sub(mask.len()) {
            // SAFETY: every address below memory.size is in bounds of linear memory.
            let byte = |i: usize| unsafe { core::ptr::read_volatile((at + i) as *const u8) };
            if byte(0) ^ 0xFF != first {
                continue;
            }
            if (1..mask.len()).all(|i| byte(i) ^ 0xFF == mask[i]) {
                found += 1;
            }
        }
        (found, size)
    }

    fn grow() -> usize {
        let mut kept: Vec<Vec<u8>> = Vec::new();
        loop {
            let mut block = vec![0u8; 1 << 20];
            block[0] = 1;
            kept.push(block);
            if kept.len() == usize::MAX {
                return kept.len();
            }
        }
    }

    fn spin() -> u64 {
        let mut n: u64 = 0;
        loop {
            n = std::hint::black_box(n.wrapping_add(1));
            if n == u64::MAX {
                return n;
            }
        }
    }

    fn extra_registrations(registration: &mut Registration) {
        let wanted = std::env::var("HOSTILE_REGISTER").unwrap_or_default();
        for item in wanted.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let (kind, name) = item.split_once(':').unwrap_or((item, ""));
            let name = name.to_owned();
            match kind {
                "tool" => registration.tools.push(name),
                "lifecycle" => registration.lifecycle.push(name),
                "schedule" => registration.schedules.push(name),
                "event" => registration.events.push(name),
                "route" => registration.routes.push(name),
                "room" => registration.room_messages = true,
                _ => {}
            }
        }
    }

    impl exports::atrium::app::handlers::Guest for Hostile {
        fn describe() -> Result<Registration, HandlerError> {
            let mut registration = Registration {
                manifest: MANIFEST.to_owned(),
                tools: TOOLS.iter().map(|t| (*t).to_owned()).collect(),
                lifecycle: vec![],
                schedules: vec![],
                events: vec![],
                room_messages: false,
                routes: vec![],
            };
            extra_registrations(&mut registration);
            Ok(registration)
        }

        fn call_tool(name: String, args: String) -> Result<String, HandlerError> {
            let args: Value = serde_json::from_str(&args).unwrap_or(Value::Null);
            let answer = match name.as_str() {
                "noop" => "{}".to_owned(),
                "newline_flood" => {
                    let n = number(&args, "bytes");
                    let _ = std::io::stdout().write_all(&vec![b'\n'; n]);
                    let _ = std::io::stdout().flush();
                    n.to_string()
                }
                "record_flood" => {
                    let n = number(&args, "count");
                    for _ in 0..n {
                        log(LogLevel::Info, "");
                    }
                    n.to_string()
                }
                "stderr_flood" => {
                    let n = number(&args, "bytes");
                    let _ = std::io::stderr().write_all(&vec![b'x'; n]);
                    n.to_string()
                }
                "leave_marker" => leave_marker(&masked(&args)).to_string(),
                "find_marker" => {
                    // `leave_first` is the control: the scan must find what this call left.
                    if args.get("leave_first").and_then(Value::as_bool) == Some(true) {
                        leave_marker(&masked(&args));
                    }
                    let (found, scanned) = find_marker(&masked(&args));
                    format!("{{\"found\": {found}, \"scanned\": {scanned}}}")
                }
                "spin" => spin().to_string(),
                "grow" => grow().to_string(),
                _ => return Err(none(&name)),
            };
            Ok(answer)
        }

        fn on_install() -> Result<(), HandlerError> {
            Err(none("on_install"))
        }
        fn on_uninstall() -> Result<(), HandlerError> {
            Err(none("on_uninstall"))
        }
        fn on_inbound(_: InboundEnvelope) -> Result<(), HandlerError> {
            Err(none("on_inbound"))
        }
        fn on_user_added(_: UserAdded) -> Result<(), HandlerError> {
            Err(none("on_user_added"))
        }
        fn on_schedule(name: String) -> Result<(), HandlerError> {
            Err(none(&name))
        }
        fn on_event(event: AppEvent) -> Result<String, HandlerError> {
            Err(none(&event.event_name))
        }
        fn on_message(_: String, _: RoomMessage) -> Result<(), HandlerError> {
            Err(none("on_message"))
        }
    }

    export!(Hostile);
}
