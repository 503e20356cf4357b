//! `atrium apps list|show|promote|rollback|archive|call` and `atrium upgrade <slug>`: the
//! developer's apps on the platform, their current versions, a call to try one in the dev
//! tenant, and forced upgrades of their installs.

use std::process::ExitCode;

use atrium_platform::registry::ForcedUpgrade;
use atrium_server::views::{AppChanged, AppDetailView, AppList, PromotedView, UpgradeRun};

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
    /// only within its organization), or of every tenant of one organization as
    /// `<organization>/` (default: every install of the app).
    #[arg(long, value_name = "ORGANIZATION/TENANT", value_parser = parse_tenant)]
    tenant: Option<(String, Option<String>)>,
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
                let answer: serde_json::Value = client
                    .call(
                        reqwest::Method::POST,
                        &format!("/api/dev/apps/{slug}/tools/{tool}"),
                        Some(&body),
                    )
                    .await?;
                print_json(&answer["result"])
            }
        }
    })
}

/// The app with every one of its versions (the first page, then the rest).
async fn app_detail(client: &Client, slug: &str) -> Result<AppDetailView, Failure> {
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
    crate::deploy::report_installs(&promoted);
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
fn parse_tenant(value: &str) -> Result<(String, Option<String>), String> {
    match value.split_once('/') {
        Some((org, tenant)) if !org.is_empty() && !tenant.contains('/') => Ok((
            org.to_owned(),
            (!tenant.is_empty()).then(|| tenant.to_owned()),
        )),
        _ => Err(format!(
            "`{value}` is not <organization>/<tenant>: a tenant id is unique only within its organization (the organization is the `org_...` id `atrium upgrade` prints)"
        )),
    }
}

pub fn upgrade(args: &UpgradeArgs) -> ExitCode {
    crate::client::run("upgrade", async {
        check_slug(&args.slug)?;
        let client = Client::configured(&args.target)?;
        let body = ForcedUpgrade {
            target_version: args.target_version.clone(),
            organization: args.tenant.as_ref().map(|(org, _)| org.clone()),
            tenant: args.tenant.as_ref().and_then(|(_, tenant)| tenant.clone()),
            force_grant_new_scopes: args.force_grant_new_scopes,
        };
        let run: UpgradeRun = client
            .call(
                reqwest::Method::POST,
                &format!("/api/dev/apps/{}/upgrade", args.slug),
                Some(&body),
            )
            .await?;
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
