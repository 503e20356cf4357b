//! The settings a tenant's admin sets for the whole tenant (`/api/tenant/settings`): the most
//! members of a group room and the tenant's time zone. Their rules are here, and a change is
//! one transaction of the store: the settings, and the heartbeats that a new time zone
//! reschedules.

use atrium_store::{Store, TenantKey};

use crate::Refusal;
use crate::rooms::{DEFAULT_MEMBER_LIMIT, MAX_MEMBER_LIMIT};

/// A tenant's settings, defaults filled in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    /// The most members of a group room.
    pub room_member_limit: i64,
    /// Whether `room_member_limit` is the platform's default.
    pub room_member_limit_is_default: bool,
    /// The tenant's IANA time zone; none when unset (then UTC).
    pub time_zone: Option<String>,
}

/// What the tenant's admin sets: every setting; none is the platform's default.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NewSettings {
    /// The most members of a group room, 1 to [`MAX_MEMBER_LIMIT`].
    pub room_member_limit: Option<i64>,
    /// An IANA time-zone name the host knows, such as `Europe/Berlin`.
    pub time_zone: Option<String>,
}

/// The tenant's settings.
pub async fn read(store: &Store, tenant: &TenantKey) -> Result<Settings, Refusal> {
    let stored = store.tenant_settings(tenant).await?;
    Ok(Settings {
        room_member_limit: stored.room_member_limit.unwrap_or(DEFAULT_MEMBER_LIMIT),
        room_member_limit_is_default: stored.room_member_limit.is_none(),
        time_zone: stored.time_zone,
    })
}

/// Checks `new` and replaces the tenant's settings with it, in one transaction with the
/// rescheduling of its heartbeats when the time zone changes; nothing is stored when a field
/// is refused. Answers the settings after it.
pub async fn replace(
    store: &Store,
    tenant: &TenantKey,
    new: NewSettings,
) -> Result<Settings, Refusal> {
    check(&new)?;
    store
        .set_tenant_settings(
            tenant,
            &atrium_store::TenantSettings {
                room_member_limit: new.room_member_limit,
                time_zone: new.time_zone,
            },
        )
        .await?;
    read(store, tenant).await
}

/// The rules of each field.
fn check(new: &NewSettings) -> Result<(), Refusal> {
    if let Some(limit) = new.room_member_limit
        && !(1..=MAX_MEMBER_LIMIT).contains(&limit)
    {
        return Err(Refusal::invalid(
            "room_member_limit",
            format!("room_member_limit must be from 1 to {MAX_MEMBER_LIMIT}, got {limit}"),
        ));
    }
    if let Some(name) = &new.time_zone
        && (name.is_empty() || jiff::tz::TimeZone::get(name).is_err())
    {
        return Err(Refusal::invalid(
            "time_zone",
            format!(
                "time_zone must be an IANA time-zone name such as `Europe/Berlin` or `UTC`, got `{name}`"
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field_of(new: NewSettings) -> Option<String> {
        match check(&new) {
            Ok(()) => None,
            Err(Refusal::Invalid { field, .. }) => Some(field.into_owned()),
            Err(other) => panic!("not a field's refusal: {other:?}"),
        }
    }

    #[test]
    fn each_setting_is_checked_by_its_rule() {
        let limit = |n| NewSettings {
            room_member_limit: Some(n),
            ..NewSettings::default()
        };
        let zone = |z: &str| NewSettings {
            time_zone: Some(z.into()),
            ..NewSettings::default()
        };
        assert_eq!(field_of(NewSettings::default()), None, "all defaults");
        assert_eq!(field_of(limit(1)), None);
        assert_eq!(field_of(limit(MAX_MEMBER_LIMIT)), None);
        assert_eq!(field_of(limit(0)).as_deref(), Some("room_member_limit"));
        assert_eq!(
            field_of(limit(MAX_MEMBER_LIMIT + 1)).as_deref(),
            Some("room_member_limit")
        );
        assert_eq!(field_of(zone("Europe/Berlin")), None);
        assert_eq!(field_of(zone("UTC")), None);
        assert_eq!(field_of(zone("")).as_deref(), Some("time_zone"));
        assert_eq!(field_of(zone("Mars/Olympus")).as_deref(), Some("time_zone"));
    }
}
