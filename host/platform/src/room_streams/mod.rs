//! The live streams of group rooms on one host: the [`RoomHub`] each stream subscribes to
//! ([`hub`]) and the [`RoomListener`] job that hears the other hosts' posts through
//! PostgreSQL `LISTEN`. It knows the store and nothing of the platform above it: the rooms
//! capability (`crate::rooms`) publishes to it, the serving core holds it.

pub mod hub;
mod listen;

use std::time::Duration;

pub use hub::{Delivery, HubStats, Next, RoomHub, Subscription};
pub use listen::RoomListener;

/// How rooms behave on a host.
#[derive(Debug, Clone)]
pub struct RoomsConfig {
    /// How often an idle stream sends `: keepalive` (15 s; shorter in tests).
    pub keepalive: Duration,
    /// How many messages wait for one slow stream before it reads the rest from the
    /// timeline.
    pub buffer: usize,
    /// Whether a post notifies the other hosts (PostgreSQL `NOTIFY`); off only to measure
    /// what notifying costs.
    pub notify: bool,
}

impl Default for RoomsConfig {
    fn default() -> Self {
        RoomsConfig {
            keepalive: Duration::from_secs(15),
            buffer: 256,
            notify: true,
        }
    }
}

impl RoomsConfig {
    /// The defaults with the operator's variables applied (`ATRIUM_ROOM_KEEPALIVE_MS`, 100 to
    /// 3,600,000; `ATRIUM_ROOM_BUFFER`, 1 to 65,536 messages; `ATRIUM_ROOM_NOTIFY`, `0` or
    /// `1`); an error names the variable.
    pub fn from_env(vars: &[(String, String)]) -> Result<RoomsConfig, String> {
        let var = |name: &str| vars.iter().find(|(k, _)| k == name).map(|(_, v)| v.trim());
        let number = |name: &str, range| crate::env_number(vars, name, range);
        let mut config = RoomsConfig::default();
        if let Some(ms) = number("ATRIUM_ROOM_KEEPALIVE_MS", 100..=3_600_000)? {
            config.keepalive = Duration::from_millis(ms);
        }
        if let Some(n) = number("ATRIUM_ROOM_BUFFER", 1..=65_536)? {
            config.buffer = usize::try_from(n).unwrap_or(config.buffer);
        }
        match var("ATRIUM_ROOM_NOTIFY") {
            None | Some("1") => {}
            Some("0") => config.notify = false,
            Some(other) => {
                return Err(format!("ATRIUM_ROOM_NOTIFY must be 0 or 1, got `{other}`"));
            }
        }
        Ok(config)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_operator_configures_rooms_and_a_bad_variable_is_named() {
        let vars = crate::test_vars;
        let config = RoomsConfig::from_env(&vars(&[
            ("ATRIUM_ROOM_KEEPALIVE_MS", "250"),
            ("ATRIUM_ROOM_BUFFER", "8"),
            ("ATRIUM_ROOM_NOTIFY", "0"),
        ]))
        .unwrap();
        assert_eq!(config.keepalive, Duration::from_millis(250));
        assert_eq!((config.buffer, config.notify), (8, false));
        let defaults = RoomsConfig::from_env(&[]).unwrap();
        assert_eq!(defaults.keepalive, Duration::from_secs(15));
        for (name, value) in [
            ("ATRIUM_ROOM_KEEPALIVE_MS", "10"),
            ("ATRIUM_ROOM_BUFFER", "0"),
            ("ATRIUM_ROOM_NOTIFY", "yes"),
        ] {
            let e = RoomsConfig::from_env(&vars(&[(name, value)])).unwrap_err();
            assert!(e.contains(name), "{e}");
        }
    }
}
