//! `atrium apps list|show|promote|rollback|archive|call|settings` and `atrium upgrade <slug>`:
//! the developer's apps on the platform, their current versions, a call to try one in the dev
//! tenant and the settings of its install there, and forced upgrades of their installs.

use std::io::Read;
use std::process::ExitCode;

use atrium_manifest::{InstallSetting, SettingType};
use atrium_platform::registry::ForcedUpgrade;
use atrium_server::views::{
    AppChanged, AppDetailView, AppList, DevSettingsView, DevToolResult, PromotedView, UpgradeRun,
};
use serde_json::Value;

use crate::client::{Client, Failure, Target, print_json, print_table};

/// `atrium apps` arguments.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    command: AppsCommand,
    #[command(flatten)]
    target: Target,
}

#[derive(Debug, clap::Subcommand)]
enum AppsCommand {
    /// Your apps: slug, status, current version, last change.
    List {
        /// Print the answer as JSON.
        #[arg(long)]
        json: bool,
    },
    /// One app and its versions: status, build result, date, and the component's digest or
    /// the container image.
    Show {
        /// The app's slug (its manifest's app_id).
        slug: String,
        /// Print the answer as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Make a registered version the app's current one (the auto-upgrading installs and your
    /// dev tenant follow).
    Promote {
        /// The app's slug.
        slug: String,
        /// The version.
        version: String,
        /// Print the answer as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Make the version before the current one current again (`--to` names another one that
    /// was promoted before); the auto-upgrading installs and your dev tenant follow it back.
    Rollback {
        /// The app's slug.
        slug: String,
        /// The version to go back to (default: the newest promoted version older than the
        /// current one).
        #[arg(long, value_name = "VERSION")]
        to: Option<String>,
        /// Print the answer as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Retire the app: no new installs; the existing ones keep running their version.
    Archive {
        /// The app's slug.
        slug: String,
        /// Print the answer as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Call a tool of your app in your dev tenant, as its install there runs it: the call
    /// `atrium deploy` suggests. Prints the tool's answer as JSON.
    Call {
        /// The app's slug.
        slug: String,
        /// The tool's name.
        tool: String,
        /// The tool's arguments, a JSON object (default `{}`).
        #[arg(default_value = "{}")]
        arguments: String,
    },
    /// The settings of your app's install in your dev tenant: `get` shows them, `set` gives
    /// values (a version whose required setting has no default runs there once it has one).
    Settings {
        #[command(subcommand)]
        command: SettingsCommand,
    },
}

#[derive(Debug, clap::Subcommand)]
enum SettingsCommand {
    /// Show the app's install in your dev tenant: its version, the settings of the current
    /// version with their values (secret ones only as set), and those it still needs.
    Get {
        /// The app's slug.
        slug: String,
        /// Print the answer as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Give settings of the app's install in your dev tenant, checked as a tenant admin's
    /// change is; an install not on the current version (or none yet) moves to it with them.
    Set {
        /// The app's slug.
        slug: String,
        /// `KEY=VALUE` (repeatable): the value is text, or a number or true/false for settings
        /// of those types. `KEY` alone reads the value from standard input (a secret then
        /// stays out of the shell's history). None: the install moves to the current version
        /// with the values it has.
        #[arg(value_name = "KEY=VALUE")]
        assignments: Vec<String>,
        /// Print the answer as JSON.
        #[arg(long)]
        json: bool,
    },
}

/// `atrium upgrade` arguments.
#[derive(Debug, clap::Args)]
pub struct UpgradeArgs {
    /// The app's slug.
    slug: String,
    /// The version to move installs to (default: the app's current version).
    #[arg(long, value_name = "VERSION")]
    target_version: Option<String>,
    /// Only the installs of this tenant, as `<organization>/<tenant>` (a tenant id is unique
    /// only within its organization; the organization by its name or `org_...` id), or of
    /// every tenant of one organization as `<organization>/` (default: every install of the
    /// app).
    #[arg(long, value_name = "ORGANIZATION/TENANT")]
    tenant: Option<String>,
    /// Grant the target version's new scopes without the tenant's consent (your own dev
    /// tenant only).
    #[arg(long)]
    force_grant_new_scopes: bool,
    /// Print the answer as JSON.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    target: Target,
}

/// Exit 1 unless `slug` is an app slug.
pub fn check_slug(slug: &str) -> Result<(), Failure> {
    if atrium_manifest::rules::is_app_slug(slug) {
        Ok(())
    } else {
        Err(Failure::BadInput(format!(
            "`{slug}` is not an app slug: 3 to 64 lowercase letters, digits and hyphens, starting with a letter"
        )))
    }
}

pub fn run(args: &Args) -> ExitCode {
    crate::client::run("apps", async {
        match &args.command {
            AppsCommand::List { json } => {
                let client = Client::configured(&args.target)?;
                let list = AppList {
                    apps: client.all("/api/dev/apps").await?,
                };
                if *json {
                    return print_json(&list);
                }
                if list.apps.is_empty() {
                    println!("No apps yet: `atrium deploy` registers the app of this directory.");
                    return Ok(());
                }
                let rows: Vec<Vec<String>> = list
                    .apps
                    .iter()
                    .map(|a| {
                        vec![
                            a.slug.clone(),
                            a.name.clone(),
                            a.status.clone(),
                            a.current_version.clone().unwrap_or_else(|| "-".into()),
                            a.updated_at.clone(),
                        ]
                    })
                    .collect();
                print_table(&["SLUG", "NAME", "STATUS", "CURRENT", "UPDATED"], &rows);
                Ok(())
            }
            AppsCommand::Show { slug, json } => {
                check_slug(slug)?;
                let client = Client::configured(&args.target)?;
                let detail = app_detail(&client, slug).await?;
                if *json {
                    return print_json(&detail);
                }
                let app = &detail.app;
                println!("{} ({}): {}", app.slug, app.name, app.status);
                println!(
                    "current version: {}",
                    app.current_version.as_deref().unwrap_or("none")
                );
                if !detail.tools.is_empty() {
                    let names: Vec<&str> = detail.tools.iter().map(|t| t.name.as_str()).collect();
                    println!("tools: {}", names.join(", "));
                }
                if let Some(archived) = &app.archived_at {
                    println!("archived: {archived}");
                }
                let rows: Vec<Vec<String>> = detail
                    .versions
                    .iter()
                    .map(|v| {
                        let artifact = match &v.component_digest {
                            Some(digest) => digest.clone(),
                            None => v.image.clone(),
                        };
                        vec![
                            format!("{}{}", v.version, if v.current { " *" } else { "" }),
                            v.status.clone(),
                            v.build_result.clone(),
                            v.created_at.clone(),
                            v.kind.clone(),
                            artifact,
                        ]
                    })
                    .collect();
                println!();
                print_table(
                    &[
                        "VERSION",
                        "STATUS",
                        "BUILD",
                        "REGISTERED",
                        "KIND",
                        "DIGEST OR IMAGE",
                    ],
                    &rows,
                );
                Ok(())
            }
            AppsCommand::Promote {
                slug,
                version,
                json,
            } => {
                check_slug(slug)?;
                let client = Client::configured(&args.target)?;
                promote(&client, slug, version, *json).await
            }
            AppsCommand::Rollback { slug, to, json } => {
                check_slug(slug)?;
                let client = Client::configured(&args.target)?;
                let target = match to {
                    Some(version) => version.clone(),
                    None => previous_version(&app_detail(&client, slug).await?)?,
                };
                promote(&client, slug, &target, *json).await
            }
            AppsCommand::Archive { slug, json } => {
                check_slug(slug)?;
                let client = Client::configured(&args.target)?;
                let changed: AppChanged = client
                    .call(
                        reqwest::Method::POST,
                        &format!("/api/dev/apps/{slug}/archive"),
                        None::<&()>,
                    )
                    .await?;
                if *json {
                    return print_json(&changed);
                }
                println!(
                    "{slug} is archived: no new installs; the installs it has keep their version."
                );
                Ok(())
            }
            AppsCommand::Call {
                slug,
                tool,
                arguments,
            } => {
                check_slug(slug)?;
                let body: serde_json::Value = serde_json::from_str(arguments)
                    .map_err(|e| Failure::BadInput(format!("the arguments are not JSON: {e}")))?;
                if !body.is_object() {
                    return Err(Failure::BadInput(
                        "the arguments must be a JSON object, like '{\"name\": \"Ada\"}'"
                            .to_owned(),
                    ));
                }
                let client = Client::configured(&args.target)?;
                let answer: DevToolResult = client
                    .call(
                        reqwest::Method::POST,
                        &format!("/api/dev/apps/{slug}/tools/{tool}"),
                        Some(&body),
                    )
                    .await?;
                print_json(&answer.result)?;
                if let Some(current) = answer
                    .current_version
                    .as_deref()
                    .filter(|current| *current != answer.version)
                {
                    // The install could not follow the promotion: say why, and what moves it.
                    let how = match dev_settings(&client, slug).await {
                        Ok(view) if !view.missing_settings.is_empty() => format!(
                            "it needs values for {}: `{}` gives them and moves it to {current}",
                            view.missing_settings.join(", "),
                            settings_command(slug, &view.missing_settings)
                        ),
                        _ => format!(
                            "`atrium apps settings set {slug}` moves it to {current}, or says what it lacks"
                        ),
                    };
                    eprintln!(
                        "note: this answer is from {slug} {}, the version your dev tenant runs, not the current version {current}; {how}",
                        answer.version
                    );
                }
                Ok(())
            }
            AppsCommand::Settings { command } => settings(&args.target, command).await,
        }
    })
}

/// The dev tenant's install of `slug`, with its settings.
async fn dev_settings(client: &Client, slug: &str) -> Result<DevSettingsView, Failure> {
    client
        .call(
            reqwest::Method::GET,
            &format!("/api/dev/apps/{slug}/settings"),
            None::<&()>,
        )
        .await
}

/// The command that gives the settings `ids` of `slug` in the dev tenant (an id may come with
/// the rule its value breaks, `id: rule`).
pub(crate) fn settings_command(slug: &str, ids: &[String]) -> String {
    let assignments: Vec<String> = ids
        .iter()
        .map(|id| format!("{}=VALUE", id.split(':').next().unwrap_or_default()))
        .collect();
    format!("atrium apps settings set {slug} {}", assignments.join(" "))
}

/// `apps settings get|set`.
async fn settings(target: &Target, command: &SettingsCommand) -> Result<(), Failure> {
    match command {
        SettingsCommand::Get { slug, json } => {
            check_slug(slug)?;
            let client = Client::configured(target)?;
            let view = dev_settings(&client, slug).await?;
            if *json {
                return print_json(&view);
            }
            print_settings(&view);
            Ok(())
        }
        SettingsCommand::Set {
            slug,
            assignments,
            json,
        } => {
            check_slug(slug)?;
            let pairs = assignments
                .iter()
                .map(String::as_str)
                .map(assignment)
                .collect::<Result<Vec<_>, _>>()?;
            if pairs.iter().filter(|(_, value)| value.is_none()).count() > 1 {
                return Err(Failure::BadInput(
                    "only one value can be read from standard input: give the others as KEY=VALUE"
                        .to_owned(),
                ));
            }
            let client = Client::configured(target)?;
            // The values are read as the types of the settings they are checked against.
            let before = dev_settings(&client, slug).await?;
            let mut values = serde_json::Map::new();
            for (key, value) in pairs {
                let text = match value {
                    Some(text) => text,
                    None => read_value(&key)?,
                };
                let value = setting_value(&before.install_settings, &key, text);
                values.insert(key, value);
            }
            let view: DevSettingsView = client
                .call(
                    reqwest::Method::PATCH,
                    &format!("/api/dev/apps/{slug}/settings"),
                    Some(&serde_json::json!({ "settings": values })),
                )
                .await?;
            if *json {
                return print_json(&view);
            }
            let version = view.version.as_deref().unwrap_or("?");
            let done = match view.outcome.as_deref() {
                Some("installed") => format!("installed {version} with them"),
                Some("upgraded") => format!("upgraded to {version} with them"),
                Some("activated") => format!("activated again on {version}"),
                _ => format!("set on {version}"),
            };
            println!(
                "{slug} in your dev tenant {} ({}): {done}.",
                view.tenant, view.organization
            );
            print_settings(&view);
            Ok(())
        }
    }
}

/// `KEY=VALUE` as (key, value), `KEY` alone as (key, none); exit 1 unless the key can be a
/// setting's id (checked before anything is read: a value given in its place is not waited on,
/// nor printed whole).
fn assignment(text: &str) -> Result<(String, Option<String>), Failure> {
    let (key, value) = match text.split_once('=') {
        Some((key, value)) => (key, Some(value.to_owned())),
        None => (text, None),
    };
    if (1..=64).contains(&key.len()) && atrium_manifest::rules::is_lower_slug(key) {
        return Ok((key.to_owned(), value));
    }
    let shown: String = key.chars().take(4).collect();
    let more = if key.chars().count() > 4 { "..." } else { "" };
    Err(Failure::BadInput(format!(
        "`{shown}{more}` is not a setting id (lowercase letters, digits, `-` and `_`): give settings as KEY=VALUE"
    )))
}

/// The value of setting `key` from standard input (one trailing newline dropped).
fn read_value(key: &str) -> Result<String, Failure> {
    if std::io::IsTerminal::is_terminal(&std::io::stdin()) {
        eprintln!("Value of {key} (then Enter and Ctrl-D):");
    }
    let mut value = String::new();
    std::io::stdin().read_to_string(&mut value).map_err(|e| {
        Failure::BadInput(format!("cannot read the value from standard input: {e}"))
    })?;
    let value = value.strip_suffix('\n').unwrap_or(&value);
    let value = value.strip_suffix('\r').unwrap_or(value);
    Ok(value.to_owned())
}

/// The JSON value of `text` for setting `key`: a number or a boolean for a setting of that type
/// when the text reads as one, else the text. The platform checks it against the setting's
/// rules, as it checks a tenant admin's value.
fn setting_value(declared: &[InstallSetting], key: &str, text: String) -> Value {
    let trimmed = text.trim();
    match declared.iter().find(|s| s.id == key).map(|s| s.kind) {
        Some(SettingType::Number) => {
            if let Ok(number @ Value::Number(_)) = serde_json::from_str::<Value>(trimmed) {
                return number;
            }
        }
        Some(SettingType::Boolean) if trimmed == "true" || trimmed == "false" => {
            return Value::Bool(trimmed == "true");
        }
        _ => {}
    }
    Value::String(text)
}

/// The install, its settings with their values, and what it still needs.
fn print_settings(view: &DevSettingsView) {
    match &view.version {
        Some(version) => println!(
            "{} in your dev tenant {} ({}): {version}, {}{}",
            view.app,
            view.tenant,
            view.organization,
            view.status.as_deref().unwrap_or("-"),
            match view.current_version.as_deref() {
                Some(current) if current != version =>
                    format!(" (the current version is {current})"),
                _ => String::new(),
            }
        ),
        None => println!(
            "{} is not installed in your dev tenant {} ({}).",
            view.app, view.tenant, view.organization
        ),
    }
    if view.install_settings.is_empty() {
        println!("It declares no settings.");
    } else {
        let rows: Vec<Vec<String>> = view
            .install_settings
            .iter()
            .map(|s| {
                let kind = serde_json::to_value(s.kind)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_owned))
                    .unwrap_or_default();
                let value = if view.missing_settings.contains(&s.id) {
                    "(needs a value)".to_owned()
                } else if s.kind == SettingType::Secret {
                    if view.secret_settings.contains(&s.id) {
                        "(set)".to_owned()
                    } else {
                        "-".to_owned()
                    }
                } else {
                    match view.settings.get(&s.id) {
                        Some(Value::String(text)) => text.clone(),
                        Some(other) => other.to_string(),
                        None => "-".to_owned(),
                    }
                };
                vec![
                    s.id.clone(),
                    kind,
                    if s.required { "yes" } else { "no" }.to_owned(),
                    value,
                ]
            })
            .collect();
        print_table(&["SETTING", "TYPE", "REQUIRED", "VALUE"], &rows);
    }
    if !view.missing_settings.is_empty() {
        println!(
            "It needs values for {}: {}",
            view.missing_settings.join(", "),
            settings_command(&view.app, &view.missing_settings)
        );
    }
}

/// The app with every one of its versions (the first page, then the rest).
pub(crate) async fn app_detail(client: &Client, slug: &str) -> Result<AppDetailView, Failure> {
    let mut detail: AppDetailView = client
        .call(
            reqwest::Method::GET,
            &format!("/api/dev/apps/{slug}"),
            None::<&()>,
        )
        .await?;
    if detail.versions_next_cursor.take().is_some() {
        detail.versions = client
            .all(&format!("/api/dev/apps/{slug}/versions"))
            .await?;
    }
    Ok(detail)
}

/// `apps promote`, `rollback`: makes `version` current and reports what followed.
async fn promote(client: &Client, slug: &str, version: &str, json: bool) -> Result<(), Failure> {
    let promoted: PromotedView = client
        .call(
            reqwest::Method::POST,
            &format!("/api/dev/apps/{slug}/versions/{version}/promote"),
            None::<&()>,
        )
        .await?;
    if json {
        return print_json(&promoted);
    }
    println!(
        "{slug}: {} is the current version.",
        promoted.app.current_version.as_deref().unwrap_or(version)
    );
    for line in installs_report(&promoted) {
        println!("{line}");
    }
    if let Some(dev) = &promoted.dev_install {
        println!(
            "Your dev tenant {} ({}): {}{}",
            dev.tenant,
            dev.organization,
            dev.outcome,
            if dev.missing.is_empty() {
                String::new()
            } else {
                format!(" ({})", dev.missing.join(", "))
            }
        );
        if matches!(
            dev.outcome.as_str(),
            "missing_settings" | "invalid_settings"
        ) {
            println!(
                "  give them with `{}`",
                settings_command(slug, &dev.missing)
            );
        }
    }
    Ok(())
}

/// The version a rollback goes back to: the newest promoted version registered before the
/// current one.
fn previous_version(detail: &AppDetailView) -> Result<String, Failure> {
    let current = detail.app.current_version.as_deref().ok_or_else(|| {
        Failure::BadInput(format!(
            "{} has no current version to roll back from",
            detail.app.slug
        ))
    })?;
    let mut past = detail
        .versions
        .iter()
        .skip_while(|v| v.version != current)
        .skip(1)
        .filter(|v| v.promoted_at.is_some());
    past.next().map(|v| v.version.clone()).ok_or_else(|| {
        Failure::BadInput(format!(
            "{} has no version promoted before {current}: nothing to roll back to (`atrium apps show {}` lists the versions)",
            detail.app.slug, detail.app.slug
        ))
    })
}

/// `--tenant`'s value: `<organization>/<tenant>`, or `<organization>/` for all its tenants.
/// Parsed here rather than by clap, so that a malformed value gets the one-line error of
/// every command (exit 1), not clap's usage.
fn parse_tenant(value: &str) -> Result<(String, Option<String>), Failure> {
    match value.split_once('/') {
        Some((org, tenant)) if !org.trim().is_empty() && !tenant.contains('/') => Ok((
            org.trim().to_owned(),
            (!tenant.trim().is_empty()).then(|| tenant.trim().to_owned()),
        )),
        _ => Err(Failure::BadInput(format!(
            "--tenant `{value}` is not <organization>/<tenant>: a tenant id is unique only within its organization, so name the organization too, by its name or `org_...` id (`--tenant acme/shop`; `--tenant acme/` for all its tenants)"
        ))),
    }
}

pub fn upgrade(args: &UpgradeArgs) -> ExitCode {
    crate::client::run("upgrade", async {
        check_slug(&args.slug)?;
        let tenant = args.tenant.as_deref().map(parse_tenant).transpose()?;
        let client = Client::configured(&args.target)?;
        let body = ForcedUpgrade {
            target_version: args.target_version.clone(),
            organization: tenant.as_ref().map(|(org, _)| org.clone()),
            tenant: tenant.as_ref().and_then(|(_, tenant)| tenant.clone()),
            force_grant_new_scopes: args.force_grant_new_scopes,
        };
        let run: UpgradeRun = client
            .call(
                reqwest::Method::POST,
                &format!("/api/dev/apps/{}/upgrade", args.slug),
                Some(&body),
            )
            .await?;
        // A tenant or organization that has no install of the app was mistyped or is another
        // one: say what matched nothing rather than "nothing to do".
        if let (true, Some((org, only))) = (run.installs.is_empty(), &tenant) {
            let place = match only {
                Some(tenant) => format!("tenant `{tenant}` of organization `{org}`"),
                None => format!("organization `{org}`"),
            };
            return Err(Failure::BadInput(format!(
                "{} has no install in {place}: check the organization (its name or `org_...` id) and the tenant id; nothing was upgraded",
                args.slug
            )));
        }
        if args.json {
            return print_json(&run);
        }
        if run.installs.is_empty() {
            println!("No installs of {} to upgrade.", args.slug);
            return Ok(());
        }
        let rows: Vec<Vec<String>> = run
            .installs
            .iter()
            .map(|o| {
                vec![
                    o.tenant.clone(),
                    o.organization.clone(),
                    o.from.clone(),
                    o.to.clone(),
                    o.outcome.clone(),
                    o.new_scopes.join(","),
                    o.missing_settings.join(","),
                ]
            })
            .collect();
        print_table(
            &[
                "TENANT",
                "ORGANIZATION",
                "FROM",
                "TO",
                "OUTCOME",
                "NEW SCOPES",
                "MISSING SETTINGS",
            ],
            &rows,
        );
        let waiting = run
            .installs
            .iter()
            .filter(|o| o.outcome == "pending_consent")
            .count();
        if waiting > 0 {
            println!(
                "{waiting} install(s) wait for their tenant's consent to new scopes (--force-grant-new-scopes grants them in your dev tenant)."
            );
        }
        let unset = run
            .installs
            .iter()
            .filter(|o| !o.missing_settings.is_empty())
            .count();
        if unset > 0 {
            println!(
                "{unset} install(s) wait for values of required settings: their tenant gives them with POST /api/installs/{}/upgrade and `settings`.",
                args.slug
            );
        }
        Ok(())
    })
}

/// Which auto-upgrading installs a promotion moved, and which wait (and for what): the lines
/// `apps promote` and `deploy` print.
pub(crate) fn installs_report(promoted: &atrium_server::views::PromotedView) -> Vec<String> {
    let moved = promoted
        .installs
        .iter()
        .filter(|o| o.outcome == "upgraded")
        .count();
    let waiting: Vec<_> = promoted
        .installs
        .iter()
        .filter(|o| o.outcome.starts_with("pending"))
        .collect();
    let mut lines = Vec::new();
    if moved + waiting.len() > 0 {
        lines.push(format!(
            "      {moved} auto-upgrading install(s) moved, {} wait{}",
            waiting.len(),
            if waiting.is_empty() { "" } else { ":" }
        ));
    }
    for o in waiting {
        let mut needs = Vec::new();
        if !o.new_scopes.is_empty() {
            needs.push(format!("consent to {}", o.new_scopes.join(", ")));
        }
        if !o.missing_settings.is_empty() {
            needs.push(format!("values for {}", o.missing_settings.join(", ")));
        }
        lines.push(format!(
            "        tenant {} of {}: {} -> {}, waits for {}",
            o.tenant,
            o.organization,
            o.from,
            o.to,
            needs.join(" and ")
        ));
    }
    lines
}
