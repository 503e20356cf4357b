//! The host's limits: the shape of a token bucket and the operator's settings, read from the
//! environment with errors that name the variable.

use std::time::Duration;

/// A token bucket's shape: `rate` requests a second on average, `burst` at once.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rate {
    /// Requests a second.
    pub rate: f64,
    /// Requests at once.
    pub burst: f64,
}

/// The host's limits. Every field has a default fit for one host; `from_env` reads the
/// operator's.
#[derive(Debug, Clone, PartialEq)]
pub struct Limits {
    /// Per credential (`ATRIUM_KEY_RATE`, `ATRIUM_KEY_BURST`); none is unlimited.
    pub per_key: Option<Rate>,
    /// Per tenant of an organization (`ATRIUM_TENANT_RATE`, `ATRIUM_TENANT_BURST`).
    pub per_tenant: Option<Rate>,
    /// Requests in flight on the host (`ATRIUM_MAX_IN_FLIGHT`).
    pub max_in_flight: usize,
    /// The longest a request may wait before the host reads it, or a ready request for a core
    /// (`ATRIUM_MAX_QUEUE_DELAY_MS`).
    pub max_queue_delay: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            per_key: Some(Rate {
                rate: 1000.0,
                burst: 2000.0,
            }),
            per_tenant: Some(Rate {
                rate: 1000.0,
                burst: 2000.0,
            }),
            max_in_flight: 4096,
            max_queue_delay: Duration::from_millis(200),
        }
    }
}

impl Limits {
    /// The defaults with the operator's variables applied; an error names the variable.
    /// A rate of 0 turns that limit off.
    pub fn from_env(vars: &[(String, String)]) -> Result<Limits, String> {
        let var = |name: &str| {
            vars.iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.trim().to_owned())
        };
        fn number(name: &str, text: &str) -> Result<f64, String> {
            match text.parse::<f64>() {
                Ok(n) if n.is_finite() && n >= 0.0 => Ok(n),
                _ => Err(format!(
                    "{name} must be a number of 0 or more, not `{text}`"
                )),
            }
        }
        let rate = |rate_var: &str, burst_var: &str, default: Option<Rate>| {
            let rate = match var(rate_var) {
                Some(text) => number(rate_var, &text)?,
                None => default.map_or(0.0, |r| r.rate),
            };
            if rate == 0.0 {
                return Ok::<_, String>(None);
            }
            let burst = match var(burst_var) {
                Some(text) => number(burst_var, &text)?,
                None => (rate * 2.0).max(1.0),
            };
            if burst < 1.0 {
                return Err(format!("{burst_var} must be at least 1, not {burst}"));
            }
            Ok(Some(Rate { rate, burst }))
        };
        let defaults = Limits::default();
        let max_in_flight = match var("ATRIUM_MAX_IN_FLIGHT") {
            Some(text) => match text.parse::<usize>() {
                Ok(n) if n > 0 => n,
                _ => {
                    return Err(format!(
                        "ATRIUM_MAX_IN_FLIGHT must be a whole number above 0, not `{text}`"
                    ));
                }
            },
            None => defaults.max_in_flight,
        };
        let max_queue_delay = match var("ATRIUM_MAX_QUEUE_DELAY_MS") {
            Some(text) => match text.parse::<u64>() {
                Ok(n) if n > 0 => Duration::from_millis(n),
                _ => {
                    return Err(format!(
                        "ATRIUM_MAX_QUEUE_DELAY_MS must be a whole number of milliseconds above 0, not `{text}`"
                    ));
                }
            },
            None => defaults.max_queue_delay,
        };
        Ok(Limits {
            per_key: rate("ATRIUM_KEY_RATE", "ATRIUM_KEY_BURST", defaults.per_key)?,
            per_tenant: rate(
                "ATRIUM_TENANT_RATE",
                "ATRIUM_TENANT_BURST",
                defaults.per_tenant,
            )?,
            max_in_flight,
            max_queue_delay,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn the_limits_come_from_the_environment_and_bad_values_name_the_variable() {
        assert_eq!(Limits::from_env(&[]).unwrap(), Limits::default());
        let limits = Limits::from_env(&vars(&[
            ("ATRIUM_KEY_RATE", "5"),
            ("ATRIUM_TENANT_RATE", "0"),
            ("ATRIUM_MAX_IN_FLIGHT", "64"),
            ("ATRIUM_MAX_QUEUE_DELAY_MS", "250"),
        ]))
        .unwrap();
        assert_eq!(
            limits.per_key,
            Some(Rate {
                rate: 5.0,
                burst: 10.0
            })
        );
        assert_eq!(limits.per_tenant, None);
        assert_eq!(limits.max_in_flight, 64);
        assert_eq!(limits.max_queue_delay, Duration::from_millis(250));
        for (name, value) in [
            ("ATRIUM_KEY_RATE", "fast"),
            ("ATRIUM_TENANT_BURST", "0.5"),
            ("ATRIUM_MAX_IN_FLIGHT", "0"),
            ("ATRIUM_MAX_QUEUE_DELAY_MS", "-1"),
        ] {
            let err = Limits::from_env(&vars(&[(name, value)])).unwrap_err();
            assert!(err.starts_with(name), "{err}");
        }
    }
}
