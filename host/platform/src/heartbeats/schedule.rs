//! When a heartbeat runs: the next due time of each schedule type, the per-tenant offset of
//! interval heartbeats, active hours and cooldown. Pure functions of the manifest's heartbeat,
//! its zone and a time, so every rule is tested with a clock the test chooses.
//!
//! - **Interval** heartbeats run every `interval_minutes` on a grid fixed in absolute time
//!   (zones and daylight saving do not move it). The grid's phase is a stable hash: a tenant
//!   offset, the same for all of the tenant's heartbeats of one interval, spreads tenants over
//!   the whole interval; a routine offset of under five minutes (or under the interval when it
//!   is shorter) spreads one tenant's heartbeats of that interval within a five-minute window.
//!   The hash is of names, never a random draw, so restarts and other hosts agree.
//! - **Daily**, **weekly** and **cron** heartbeats run at wall-clock times of their zone.
//!   A time that a daylight-saving change skips (02:30 on the night clocks go forward) runs
//!   once, at the first valid instant after the gap (03:00); several skipped times collapse
//!   into that one run. A time that a change repeats (01:30 on the night clocks go back) runs
//!   once, at its first occurrence.
//! - **Active hours** `[start, end)` in their zone; a window whose end is before its start
//!   crosses midnight. The next run of a schedule held to its active hours
//!   ([`Schedule::within`]) is the first time of the schedule inside the window, so a row's
//!   `next_run_at` lies inside it; a due time outside the window (a wake, a tick too late for
//!   the window) is skipped silently.
//! - **Cooldown**: a due time less than `cooldown_seconds` after the last run is skipped.

use atrium_manifest::cron::CronExpr;
use atrium_manifest::{ActiveHours, HeartbeatSchedule, TimeOfDay};
use jiff::civil::{DateTime, Weekday};
use jiff::tz::{AmbiguousOffset, TimeZone};
use jiff::{SignedDuration, Timestamp};
use sha2::{Digest, Sha256};

/// The window within which one tenant's heartbeats of one interval fire.
pub const CLUSTER_WINDOW_SECONDS: i64 = 5 * 60;

/// The zone name meaning the tenant's configured time zone.
pub const USER_ZONE: &str = "user";

/// A heartbeat's schedule, resolved for one install: what [`Schedule::next_after`] needs.
#[derive(Debug, Clone)]
pub struct Schedule {
    kind: Kind,
    zone: TimeZone,
    /// The active hours its due times are held to, read in `zone`.
    hours: Option<ActiveHours>,
}

/// The most due times outside the active hours [`Schedule::next_after`] passes over before it
/// concludes that none lies inside them (a daily time outside its window): more than a leap
/// day's cron finds in four years, window by window.
const MAX_OUTSIDE_WINDOW: usize = 2_000;

#[derive(Debug, Clone)]
enum Kind {
    /// Every `period` seconds, at times `t` with `t ≡ phase (mod period)`.
    Interval {
        period: i64,
        phase: i64,
    },
    Daily(TimeOfDay),
    Weekly(TimeOfDay, Weekday),
    Cron(CronExpr),
    /// A cron expression that does not parse.
    Never,
}

/// What names a heartbeat for its offset.
#[derive(Debug, Clone, Copy)]
pub struct Routine<'a> {
    /// The organization.
    pub org_id: &'a str,
    /// The tenant.
    pub tenant_id: &'a str,
    /// The app.
    pub app_slug: &'a str,
    /// The agent.
    pub agent: &'a str,
    /// The heartbeat.
    pub slug: &'a str,
}

/// A stable hash of `parts` (SHA-256, the first eight bytes), reduced modulo `modulus`.
fn stable_hash(parts: &[&str], modulus: i64) -> i64 {
    let mut hasher = Sha256::new();
    for part in parts {
        hasher.update(part.as_bytes());
        hasher.update([0]);
    }
    let digest = hasher.finalize();
    let mut first = [0u8; 8];
    first.copy_from_slice(&digest[..8]);
    let n = u64::from_be_bytes(first);
    i64::try_from(n % u64::try_from(modulus.max(1)).unwrap_or(1)).unwrap_or(0)
}

/// The phase of an interval heartbeat, in seconds from the epoch modulo the period: the
/// tenant's offset for this interval plus the routine's offset within the cluster window.
#[must_use]
pub fn interval_phase(routine: Routine<'_>, period_seconds: i64) -> i64 {
    let interval = period_seconds.to_string();
    let tenant = stable_hash(
        &[routine.org_id, routine.tenant_id, &interval],
        period_seconds,
    );
    let window = CLUSTER_WINDOW_SECONDS.min(period_seconds);
    let own = stable_hash(
        &[
            routine.org_id,
            routine.tenant_id,
            routine.app_slug,
            routine.agent,
            routine.slug,
        ],
        window,
    );
    (tenant + own).rem_euclid(period_seconds)
}

/// The zone a heartbeat's times are read in: `name` when given (`user`: the tenant's zone),
/// else the tenant's zone, else UTC. An unknown name (the validator refuses them; a tenant's
/// zone is checked when set) reads as UTC.
#[must_use]
pub fn zone(name: Option<&str>, tenant_zone: Option<&str>) -> TimeZone {
    let name = match name {
        Some(USER_ZONE) | None => tenant_zone,
        Some(name) => Some(name),
    };
    name.and_then(|n| TimeZone::get(n).ok())
        .unwrap_or(TimeZone::UTC)
}

impl Schedule {
    /// The schedule of a heartbeat of `routine`, its times read in `zone`. A cron expression
    /// that does not parse (the validator refuses those) never fires.
    #[must_use]
    pub fn new(schedule: &HeartbeatSchedule, routine: Routine<'_>, zone: TimeZone) -> Schedule {
        let kind = match schedule {
            HeartbeatSchedule::Interval { interval_minutes } => {
                let period = i64::from((*interval_minutes).max(1)) * 60;
                Kind::Interval {
                    period,
                    phase: interval_phase(routine, period),
                }
            }
            HeartbeatSchedule::Daily { time_of_day } => Kind::Daily(*time_of_day),
            HeartbeatSchedule::Weekly {
                time_of_day,
                day_of_week,
            } => Kind::Weekly(*time_of_day, monday_zero(*day_of_week)),
            HeartbeatSchedule::Cron { cron_expression } => match CronExpr::parse(cron_expression) {
                Ok(expr) => Kind::Cron(expr),
                Err(_) => Kind::Never,
            },
        };
        Schedule {
            kind,
            zone,
            hours: None,
        }
    }

    /// The same schedule held to `hours` (none: every due time), read in the schedule's zone,
    /// which is the active hours' own (`active_hours.timezone`): [`Schedule::next_after`] then
    /// answers only due times inside the window.
    #[must_use]
    pub fn within(mut self, hours: Option<&ActiveHours>) -> Schedule {
        self.hours = hours.cloned();
        self
    }

    /// The first due time strictly after `after` (inside the active hours, when the schedule
    /// is held to them); none for a cron expression that never fires, or a schedule none of
    /// whose times lies inside its window.
    #[must_use]
    pub fn next_after(&self, after: Timestamp) -> Option<Timestamp> {
        let Some(hours) = &self.hours else {
            return self.next_on_schedule(after);
        };
        let mut from = after;
        for _ in 0..MAX_OUTSIDE_WINDOW {
            let due = self.next_on_schedule(from)?;
            if within_active_hours(hours, &self.zone, due) {
                return Some(due);
            }
            // The first due time at or after the window opens again.
            let opening = self.next_opening(hours, due)?;
            from = opening.checked_sub(SignedDuration::from_nanos(1)).ok()?;
        }
        None
    }

    /// The first instant after `after` at which the window `hours` opens (its `start`, read in
    /// the zone: the end of the gap when daylight saving skips it).
    fn next_opening(&self, hours: &ActiveHours, after: Timestamp) -> Option<Timestamp> {
        let mut date = self.zone.to_datetime(after).date();
        for _ in 0..3 {
            let start = date.at(i8_of(hours.start.hour), i8_of(hours.start.minute), 0, 0);
            if let Some(at) = self.instant_of(start)
                && at > after
            {
                return Some(at);
            }
            date = date.tomorrow().ok()?;
        }
        None
    }

    /// The first time of the schedule strictly after `after`, whatever the active hours.
    fn next_on_schedule(&self, after: Timestamp) -> Option<Timestamp> {
        match &self.kind {
            Kind::Interval { period, phase } => {
                let t = after.as_second();
                let next = t - (t - phase).rem_euclid(*period) + period;
                Timestamp::from_second(next).ok()
            }
            Kind::Daily(time) => self.next_wall_time(after, |civil| {
                let today = civil.date().at(i8_of(time.hour), i8_of(time.minute), 0, 0);
                Some(if today > civil {
                    today
                } else {
                    civil
                        .date()
                        .tomorrow()
                        .ok()?
                        .at(i8_of(time.hour), i8_of(time.minute), 0, 0)
                })
            }),
            Kind::Weekly(time, day) => self.next_wall_time(after, |civil| {
                let mut date = civil.date();
                for _ in 0..8 {
                    let at = date.at(i8_of(time.hour), i8_of(time.minute), 0, 0);
                    if date.weekday() == *day && at > civil {
                        return Some(at);
                    }
                    date = date.tomorrow().ok()?;
                }
                None
            }),
            Kind::Cron(expr) => self.next_wall_time(after, |civil| expr.next_after(civil)),
            Kind::Never => None,
        }
    }

    /// The first instant after `after` of the wall-clock times `next_civil` lists (each call
    /// gives the first such time strictly after the civil time it is given).
    fn next_wall_time(
        &self,
        after: Timestamp,
        next_civil: impl Fn(DateTime) -> Option<DateTime>,
    ) -> Option<Timestamp> {
        let mut civil = self.zone.to_datetime(after);
        // A repeated hour may yield civil times whose first occurrence is already past.
        for _ in 0..10_000 {
            let candidate = next_civil(civil)?;
            let at = self.instant_of(candidate)?;
            if at > after {
                return Some(at);
            }
            civil = candidate;
        }
        None
    }

    /// The instant of a wall-clock time: its first occurrence when the hour repeats, the end
    /// of the gap when the time is skipped.
    fn instant_of(&self, civil: DateTime) -> Option<Timestamp> {
        let ambiguous = self.zone.to_ambiguous_timestamp(civil);
        match ambiguous.offset() {
            AmbiguousOffset::Unambiguous { .. } | AmbiguousOffset::Fold { .. } => {
                ambiguous.earlier().ok()
            }
            AmbiguousOffset::Gap { .. } => {
                // Read with the offset before the change, the time lies after the change:
                // the change itself is the first valid instant.
                let past = ambiguous.later().ok()?;
                let transition = self.zone.preceding(past).next()?;
                Some(transition.timestamp())
            }
        }
    }
}

fn i8_of(n: u8) -> i8 {
    i8::try_from(n).unwrap_or(0)
}

/// The manifest's `day_of_week` (0 Monday to 6 Sunday).
fn monday_zero(day: u8) -> Weekday {
    Weekday::from_monday_zero_offset(i8::try_from(day.min(6)).unwrap_or(0))
        .unwrap_or(Weekday::Monday)
}

/// Whether `at` lies within `hours`, read in `zone`: `[start, end)`, across midnight when the
/// end is before the start. An empty window (the validator refuses it) allows nothing.
#[must_use]
pub fn within_active_hours(hours: &ActiveHours, zone: &TimeZone, at: Timestamp) -> bool {
    let civil = zone.to_datetime(at);
    hours.contains(TimeOfDay {
        hour: u8::try_from(civil.hour()).unwrap_or(0),
        minute: u8::try_from(civil.minute()).unwrap_or(0),
    })
}

/// Whether a run at `at` respects the cooldown after the last run.
#[must_use]
pub fn cooled_down(
    cooldown_seconds: Option<u64>,
    last_run: Option<Timestamp>,
    at: Timestamp,
) -> bool {
    match (cooldown_seconds, last_run) {
        (Some(seconds), Some(last)) => {
            let seconds = i64::try_from(seconds).unwrap_or(i64::MAX);
            at.duration_since(last) >= SignedDuration::from_secs(seconds)
        }
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ts(text: &str) -> Timestamp {
        text.parse().unwrap()
    }

    fn routine<'a>(tenant: &'a str, slug: &'a str) -> Routine<'a> {
        Routine {
            org_id: "org",
            tenant_id: tenant,
            app_slug: "app",
            agent: "clerk",
            slug,
        }
    }

    fn at(hour: u8, minute: u8) -> TimeOfDay {
        TimeOfDay { hour, minute }
    }

    fn zoned(schedule: HeartbeatSchedule, zone_name: &str) -> Schedule {
        Schedule::new(
            &schedule,
            routine("t", "s"),
            TimeZone::get(zone_name).unwrap(),
        )
    }

    /// The due times after `from`, `n` of them, shown in `zone_name`.
    fn runs(schedule: &Schedule, from: &str, n: usize, zone_name: &str) -> Vec<String> {
        let zone = TimeZone::get(zone_name).unwrap();
        let mut t = ts(from);
        (0..n)
            .map(|_| {
                t = schedule.next_after(t).unwrap();
                t.to_zoned(zone.clone()).strftime("%F %H:%M %Z").to_string()
            })
            .collect()
    }

    #[test]
    fn interval_runs_on_a_fixed_grid_with_stable_offsets() {
        let every = HeartbeatSchedule::Interval {
            interval_minutes: 60,
        };
        let s = Schedule::new(&every, routine("t", "s"), TimeZone::UTC);
        let first = s.next_after(ts("2026-03-01T00:00:00Z")).unwrap();
        let second = s.next_after(first).unwrap();
        assert_eq!(second.as_second() - first.as_second(), 3600);
        // Not on the hour for every tenant: the phase comes from the names, the same each time.
        assert_eq!(
            interval_phase(routine("t", "s"), 3600),
            interval_phase(routine("t", "s"), 3600)
        );
        let phases: std::collections::BTreeSet<i64> = (0..50)
            .map(|i| interval_phase(routine(&format!("tenant-{i}"), "s"), 3600) / 60)
            .collect();
        assert!(
            phases.len() > 25,
            "tenants spread over the hour: {phases:?}"
        );
        // One tenant's heartbeats of one interval fall within five minutes of each other.
        for tenant in ["a", "b", "c"] {
            let mine: Vec<i64> = (0..20)
                .map(|i| interval_phase(routine(tenant, &format!("beat-{i}")), 3600))
                .collect();
            let base = stable_hash(&["org", tenant, "3600"], 3600);
            for phase in mine {
                let within = (phase - base).rem_euclid(3600);
                assert!(within < CLUSTER_WINDOW_SECONDS, "{tenant}: {within}");
            }
        }
        // A five-minute interval: the window is the interval itself.
        let short = interval_phase(routine("t", "s"), 300);
        assert!((0..300).contains(&short));
        // Daylight saving does not move an interval grid.
        let ny = Schedule::new(
            &every,
            routine("t", "s"),
            TimeZone::get("America/New_York").unwrap(),
        );
        let mut t = ts("2026-03-08T05:00:00Z");
        for _ in 0..5 {
            let next = ny.next_after(t).unwrap();
            assert!(next > t && next.as_second() - t.as_second() <= 3600);
            t = next;
        }
    }

    #[test]
    fn daily_and_weekly_run_at_their_wall_clock_time_across_daylight_saving() {
        // New York springs forward on 2026-03-08 (02:00 → 03:00) and falls back on
        // 2026-11-01 (02:00 → 01:00).
        let daily = zoned(
            HeartbeatSchedule::Daily {
                time_of_day: at(9, 0),
            },
            "America/New_York",
        );
        assert_eq!(
            runs(&daily, "2026-03-07T00:00:00Z", 3, "America/New_York"),
            [
                "2026-03-07 09:00 EST",
                "2026-03-08 09:00 EDT",
                "2026-03-09 09:00 EDT"
            ]
        );
        assert_eq!(
            runs(&daily, "2026-03-07T15:00:00Z", 2, "America/New_York"),
            ["2026-03-08 09:00 EDT", "2026-03-09 09:00 EDT"]
        );
        // 02:30 does not exist on 2026-03-08: that day's run is at 03:00, once.
        let skipped = zoned(
            HeartbeatSchedule::Daily {
                time_of_day: at(2, 30),
            },
            "America/New_York",
        );
        assert_eq!(
            runs(&skipped, "2026-03-07T12:00:00Z", 2, "America/New_York"),
            ["2026-03-08 03:00 EDT", "2026-03-09 02:30 EDT"]
        );
        // 01:30 happens twice on 2026-11-01: one run, at the first.
        let repeated = zoned(
            HeartbeatSchedule::Daily {
                time_of_day: at(1, 30),
            },
            "America/New_York",
        );
        assert_eq!(
            runs(&repeated, "2026-10-31T12:00:00Z", 2, "America/New_York"),
            ["2026-11-01 01:30 EDT", "2026-11-02 01:30 EST"]
        );
        // Weekly: day 0 is Monday.
        let weekly = zoned(
            HeartbeatSchedule::Weekly {
                time_of_day: at(8, 15),
                day_of_week: 0,
            },
            "Europe/Berlin",
        );
        assert_eq!(
            runs(&weekly, "2026-11-28T12:00:00Z", 2, "Europe/Berlin"),
            ["2026-11-30 08:15 CET", "2026-12-07 08:15 CET"]
        );
        let sunday = zoned(
            HeartbeatSchedule::Weekly {
                time_of_day: at(23, 0),
                day_of_week: 6,
            },
            "Asia/Tokyo",
        );
        assert_eq!(
            runs(&sunday, "2026-11-28T12:00:00Z", 1, "Asia/Tokyo"),
            ["2026-11-29 23:00 JST"]
        );
    }

    #[test]
    fn cron_runs_in_its_zone_and_each_daylight_saving_hour_runs_once() {
        let quarter = zoned(
            HeartbeatSchedule::Cron {
                cron_expression: "*/30 * * * *".into(),
            },
            "America/New_York",
        );
        // Spring forward: 02:00 and 02:30 do not exist; they run once, at 03:00.
        assert_eq!(
            runs(&quarter, "2026-03-08T06:15:00Z", 4, "America/New_York"),
            [
                "2026-03-08 01:30 EST",
                "2026-03-08 03:00 EDT",
                "2026-03-08 03:30 EDT",
                "2026-03-08 04:00 EDT"
            ]
        );
        // Fall back: 01:00 and 01:30 happen twice; each runs once, the first time.
        assert_eq!(
            runs(&quarter, "2026-11-01T04:45:00Z", 4, "America/New_York"),
            [
                "2026-11-01 01:00 EDT",
                "2026-11-01 01:30 EDT",
                "2026-11-01 02:00 EST",
                "2026-11-01 02:30 EST"
            ]
        );
        let never = zoned(
            HeartbeatSchedule::Cron {
                cron_expression: "not cron".into(),
            },
            "UTC",
        );
        assert_eq!(never.next_after(ts("2026-01-01T00:00:00Z")), None);
    }

    #[test]
    fn active_hours_cross_midnight_and_cooldown_spaces_runs() {
        let berlin = TimeZone::get("Europe/Berlin").unwrap();
        let day = ActiveHours {
            start: at(9, 0),
            end: at(17, 0),
            timezone: "Europe/Berlin".into(),
        };
        // 08:59 and 17:00 Berlin are outside, 09:00 and 16:59 inside (winter: UTC+1).
        for (time, inside) in [
            ("2026-11-30T07:59:00Z", false),
            ("2026-11-30T08:00:00Z", true),
            ("2026-11-30T15:59:00Z", true),
            ("2026-11-30T16:00:00Z", false),
        ] {
            assert_eq!(
                within_active_hours(&day, &berlin, ts(time)),
                inside,
                "{time}"
            );
        }
        let night = ActiveHours {
            start: at(22, 0),
            end: at(6, 0),
            timezone: "Europe/Berlin".into(),
        };
        for (time, inside) in [
            ("2026-11-30T20:59:00Z", false),
            ("2026-11-30T21:00:00Z", true),
            ("2026-11-30T23:30:00Z", true),
            ("2026-12-01T04:59:00Z", true),
            ("2026-12-01T05:00:00Z", false),
            ("2026-12-01T12:00:00Z", false),
        ] {
            assert_eq!(
                within_active_hours(&night, &berlin, ts(time)),
                inside,
                "{time}"
            );
        }
        let empty = ActiveHours {
            start: at(9, 0),
            end: at(9, 0),
            timezone: "UTC".into(),
        };
        assert!(!within_active_hours(
            &empty,
            &TimeZone::UTC,
            ts("2026-11-30T09:00:00Z")
        ));

        let last = ts("2026-11-30T10:00:00Z");
        assert!(cooled_down(None, Some(last), last));
        assert!(cooled_down(Some(600), None, last));
        assert!(!cooled_down(
            Some(600),
            Some(last),
            ts("2026-11-30T10:09:59Z")
        ));
        assert!(cooled_down(
            Some(600),
            Some(last),
            ts("2026-11-30T10:10:00Z")
        ));
    }

    #[test]
    fn the_next_run_is_the_first_time_of_the_schedule_inside_the_active_hours() {
        let window = |start: TimeOfDay, end: TimeOfDay, zone: &str| ActiveHours {
            start,
            end,
            timezone: zone.into(),
        };
        let berlin = TimeZone::get("Europe/Berlin").unwrap();
        let every_five = HeartbeatSchedule::Interval {
            interval_minutes: 5,
        };
        let day = window(at(9, 0), at(17, 0), "Europe/Berlin");
        let plain = Schedule::new(&every_five, routine("t", "s"), berlin.clone());
        let held = plain.clone().within(Some(&day));
        // Inside the window (11:00 in Berlin, winter: UTC+1): the grid, as without hours.
        let from = ts("2026-11-30T10:00:00Z");
        assert_eq!(held.next_after(from), plain.next_after(from));
        // From 17:00, the window's end: not the grid time a few minutes later, but the first
        // grid time at or after 09:00 the next morning.
        let next = held.next_after(ts("2026-11-30T16:00:00Z")).unwrap();
        assert!(
            next >= ts("2026-12-01T08:00:00Z") && next < ts("2026-12-01T08:05:00Z"),
            "{next}"
        );
        assert!(within_active_hours(&day, &berlin, next));
        // Every next run of a day of runs lies inside the window.
        let mut t = ts("2026-11-30T00:00:00Z");
        for _ in 0..200 {
            t = held.next_after(t).unwrap();
            assert!(within_active_hours(&day, &berlin, t), "{t}");
        }

        // Hourly, 02:30 to 05:00 in New York, on the night clocks go forward (02:00 -> 03:00):
        // the window opens at the end of the gap, and 03:00 EDT is its first hour.
        let hourly = Schedule::new(
            &HeartbeatSchedule::Cron {
                cron_expression: "0 * * * *".into(),
            },
            routine("t", "s"),
            TimeZone::get("America/New_York").unwrap(),
        )
        .within(Some(&window(at(2, 30), at(5, 0), "America/New_York")));
        assert_eq!(
            runs(&hourly, "2026-03-08T05:30:00Z", 3, "America/New_York"),
            [
                "2026-03-08 03:00 EDT",
                "2026-03-08 04:00 EDT",
                "2026-03-09 03:00 EDT"
            ]
        );

        // A window across midnight, in Tokyo: from 02:00 the next run is 22:00.
        let tokyo = Schedule::new(
            &HeartbeatSchedule::Cron {
                cron_expression: "0 * * * *".into(),
            },
            routine("t", "s"),
            TimeZone::get("Asia/Tokyo").unwrap(),
        )
        .within(Some(&window(at(22, 0), at(2, 0), "Asia/Tokyo")));
        assert_eq!(
            runs(&tokyo, "2026-11-29T16:30:00Z", 4, "Asia/Tokyo"),
            [
                "2026-11-30 22:00 JST",
                "2026-11-30 23:00 JST",
                "2026-12-01 00:00 JST",
                "2026-12-01 01:00 JST"
            ]
        );

        // A daily time outside its window is never inside it: never due (the validator warns).
        let never = Schedule::new(
            &HeartbeatSchedule::Daily {
                time_of_day: at(7, 30),
            },
            routine("t", "s"),
            TimeZone::UTC,
        )
        .within(Some(&window(at(22, 0), at(6, 0), "UTC")));
        assert_eq!(never.next_after(ts("2026-11-30T00:00:00Z")), None);
        // Inside it, the daily time as without hours.
        let daily = Schedule::new(
            &HeartbeatSchedule::Daily {
                time_of_day: at(7, 30),
            },
            routine("t", "s"),
            TimeZone::UTC,
        )
        .within(Some(&window(at(7, 0), at(19, 0), "UTC")));
        assert_eq!(
            runs(&daily, "2026-11-30T08:00:00Z", 2, "UTC"),
            ["2026-12-01 07:30 UTC", "2026-12-02 07:30 UTC"]
        );
    }

    #[test]
    fn the_zone_is_the_heartbeats_then_the_tenants_then_utc() {
        assert_eq!(
            zone(Some("Asia/Tokyo"), Some("Europe/Berlin")).iana_name(),
            Some("Asia/Tokyo")
        );
        assert_eq!(
            zone(Some("user"), Some("Europe/Berlin")).iana_name(),
            Some("Europe/Berlin")
        );
        assert_eq!(
            zone(None, Some("Europe/Berlin")).iana_name(),
            Some("Europe/Berlin")
        );
        assert_eq!(zone(None, None), TimeZone::UTC);
        assert_eq!(zone(Some("user"), None), TimeZone::UTC);
        assert_eq!(zone(Some("Mars/Olympus"), None), TimeZone::UTC);
    }
}
