//! Heartbeats: the background routines of an install's agents (`agents[].heartbeats[]`),
//! run by the heartbeat scheduler (docs/platform.md, "Heartbeats").
//!
//! - [`schedule`]: when a heartbeat is due (schedule types, zones, daylight saving, offsets,
//!   active hours, cooldown), as pure functions of a time.

pub mod schedule;
