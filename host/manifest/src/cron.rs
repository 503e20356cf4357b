//! Standard 5-field cron expressions (minute precision), as used by `lifecycle.schedules[].cron`
//! and cron heartbeats.
//!
//! Fields: minute (0–59), hour (0–23), day of month (1–31), month (1–12 or `JAN`–`DEC`), day of
//! week (0–7 or `SUN`–`SAT`, both 0 and 7 are Sunday). Each field is a comma-separated list of
//! `*`, `N`, `N-M`, each optionally followed by `/STEP`. As in Vixie cron, when both day fields
//! are restricted a day matches when either matches. Macros (`@daily`), seconds and the
//! non-standard `L`, `W`, `#` and `?` are refused.
//!
//! ```
//! let expr = atrium_manifest::cron::CronExpr::parse("*/15 9-17 * * MON-FRI").unwrap();
//! let t = jiff::civil::date(2026, 11, 23).at(9, 0, 0, 0); // a Monday
//! assert!(expr.matches(t));
//! ```

use std::fmt;

use jiff::civil::{Date, DateTime};

/// A parsed cron expression.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CronExpr {
    minutes: u64,
    hours: u64,
    days_of_month: u64,
    months: u64,
    days_of_week: u64,
    dom_restricted: bool,
    dow_restricted: bool,
    source: String,
}

struct Field {
    name: &'static str,
    min: u32,
    max: u32,
    names: &'static [&'static str],
}

const FIELDS: [Field; 5] = [
    Field {
        name: "minute",
        min: 0,
        max: 59,
        names: &[],
    },
    Field {
        name: "hour",
        min: 0,
        max: 23,
        names: &[],
    },
    Field {
        name: "day of month",
        min: 1,
        max: 31,
        names: &[],
    },
    Field {
        name: "month",
        min: 1,
        max: 12,
        names: &[
            "JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC",
        ],
    },
    Field {
        name: "day of week",
        min: 0,
        max: 7,
        names: &["SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"],
    },
];

impl Field {
    fn value(&self, text: &str) -> Result<u32, String> {
        let upper = text.to_ascii_uppercase();
        if let Some(i) = self.names.iter().position(|n| *n == upper) {
            let offset = if self.min == 1 { 1 } else { 0 };
            return Ok(u32::try_from(i).unwrap_or(0) + offset);
        }
        if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
            let names = if self.names.is_empty() {
                String::new()
            } else {
                format!(
                    " or a name {}-{}",
                    self.names[0],
                    self.names[self.names.len() - 1]
                )
            };
            return Err(format!(
                "{} field: `{text}` is not a number{names}",
                self.name
            ));
        }
        let value: u32 = text
            .parse()
            .map_err(|_| format!("{} field: `{text}` is too large", self.name))?;
        if value < self.min || value > self.max {
            return Err(format!(
                "{} field: {value} is out of range {}-{}",
                self.name, self.min, self.max
            ));
        }
        Ok(value)
    }

    /// Parses one field into a bit set of allowed values.
    fn parse(&self, text: &str) -> Result<u64, String> {
        let mut bits = 0u64;
        for item in text.split(',') {
            if item.is_empty() {
                return Err(format!("{} field: empty list entry in `{text}`", self.name));
            }
            let (range, step) = match item.split_once('/') {
                Some((range, step)) => {
                    let step: u32 = step
                        .parse()
                        .ok()
                        .filter(|s| *s >= 1 && *s <= self.max)
                        .ok_or_else(|| {
                            format!(
                                "{} field: step `{step}` must be a number from 1 to {}",
                                self.name, self.max
                            )
                        })?;
                    (range, step)
                }
                None => (item, 1),
            };
            let (lo, hi) = if range == "*" {
                (self.min, self.max)
            } else if let Some((a, b)) = range.split_once('-') {
                let (a, b) = (self.value(a)?, self.value(b)?);
                if a > b {
                    return Err(format!(
                        "{} field: range `{range}` runs backwards",
                        self.name
                    ));
                }
                (a, b)
            } else {
                let a = self.value(range)?;
                // `N/STEP` means N through the maximum, as in Vixie cron.
                if step > 1 { (a, self.max) } else { (a, a) }
            };
            let mut v = lo;
            while v <= hi {
                bits |= 1 << v;
                v += step;
            }
        }
        Ok(bits)
    }
}

impl CronExpr {
    /// Parses a standard 5-field expression; the error names the field and what is wrong.
    pub fn parse(text: &str) -> Result<CronExpr, String> {
        let trimmed = text.trim();
        if trimmed.starts_with('@') {
            return Err(format!(
                "macro `{trimmed}` is not supported; write the 5 fields, for example `0 0 * * *` for daily"
            ));
        }
        let parts: Vec<&str> = trimmed.split_whitespace().collect();
        if parts.len() != 5 {
            return Err(format!(
                "expected 5 fields (minute hour day-of-month month day-of-week), found {}",
                parts.len()
            ));
        }
        let mut bits = [0u64; 5];
        for (i, (field, part)) in FIELDS.iter().zip(&parts).enumerate() {
            bits[i] = field.parse(part)?;
        }
        // Sunday is both 0 and 7.
        if bits[4] & (1 << 7) != 0 {
            bits[4] = (bits[4] | 1) & !(1 << 7);
        }
        Ok(CronExpr {
            minutes: bits[0],
            hours: bits[1],
            days_of_month: bits[2],
            months: bits[3],
            days_of_week: bits[4],
            dom_restricted: !parts[2].starts_with('*'),
            dow_restricted: !parts[4].starts_with('*'),
            source: parts.join(" "),
        })
    }

    fn day_matches(&self, date: Date) -> bool {
        if self.months & (1 << date.month()) == 0 {
            return false;
        }
        let dom = self.days_of_month & (1 << date.day()) != 0;
        let dow = self.days_of_week & (1 << date.weekday().to_sunday_zero_offset()) != 0;
        match (self.dom_restricted, self.dow_restricted) {
            (true, true) => dom || dow,
            (true, false) => dom,
            (false, true) => dow,
            (false, false) => true,
        }
    }

    /// Whether the expression fires at this minute (seconds are ignored).
    #[must_use]
    pub fn matches(&self, at: DateTime) -> bool {
        self.day_matches(at.date())
            && self.hours & (1 << at.hour()) != 0
            && self.minutes & (1 << at.minute()) != 0
    }

    /// The first minute strictly after `after` at which the expression fires, looking at most
    /// eight years ahead (an expression such as `0 0 30 2 *` never fires).
    #[must_use]
    pub fn next_after(&self, after: DateTime) -> Option<DateTime> {
        let start = after.date();
        let mut date = start;
        for _ in 0..(366 * 8) {
            if self.day_matches(date) {
                for hour in 0..24i8 {
                    if self.hours & (1 << hour) == 0 {
                        continue;
                    }
                    for minute in 0..60i8 {
                        if self.minutes & (1 << minute) == 0 {
                            continue;
                        }
                        let candidate = date.at(hour, minute, 0, 0);
                        if candidate > after {
                            return Some(candidate);
                        }
                    }
                }
            }
            date = date.tomorrow().ok()?;
        }
        None
    }
}

impl fmt::Display for CronExpr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.source)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use jiff::civil::date;

    #[test]
    fn accepts_standard_forms() {
        for ok in [
            "* * * * *",
            "0 0 * * *",
            "*/5 * * * *",
            "0 9-17/2 * * 1-5",
            "15,45 8 1 JAN,jul sun",
            "0 0 * * 7",
            "5/15 * * * *",
        ] {
            assert!(CronExpr::parse(ok).is_ok(), "{ok}");
        }
    }

    #[test]
    fn refuses_with_field_names() {
        let cases = [
            ("* * * *", "expected 5 fields"),
            ("60 * * * *", "minute field: 60 is out of range 0-59"),
            ("* 24 * * *", "hour field: 24"),
            ("* * 0 * *", "day of month field: 0"),
            ("* * * 13 *", "month field: 13"),
            ("* * * * 8", "day of week field: 8"),
            ("*/0 * * * *", "step `0`"),
            ("5-1 * * * *", "runs backwards"),
            ("@daily", "macro"),
            ("0 0 L * *", "day of month field: `L`"),
            ("0 0 * * 1#2", "day of week field"),
            ("1,,2 * * * *", "empty list entry"),
            ("* * * * * *", "found 6"),
        ];
        for (text, expected) in cases {
            let err = CronExpr::parse(text).expect_err(text);
            assert!(err.contains(expected), "{text}: {err}");
        }
    }

    #[test]
    fn next_runs() {
        let e = CronExpr::parse("30 9 * * MON").unwrap();
        let t = date(2026, 11, 21).at(12, 0, 0, 0); // Saturday
        assert_eq!(e.next_after(t), Some(date(2026, 11, 23).at(9, 30, 0, 0)));
        let e = CronExpr::parse("0 0 1 * 0").unwrap(); // first of month OR Sunday
        assert_eq!(e.next_after(t), Some(date(2026, 11, 22).at(0, 0, 0, 0)));
        assert_eq!(CronExpr::parse("0 0 30 2 *").unwrap().next_after(t), None);
        let e = CronExpr::parse("*/15 * * * *").unwrap();
        assert_eq!(
            e.next_after(date(2026, 1, 1).at(0, 0, 0, 0)),
            Some(date(2026, 1, 1).at(0, 15, 0, 0))
        );
    }
}
