//! `atrium apps list`, `atrium apps show <slug>` and `atrium upgrade <slug>`: the developer's
//! apps on the platform, and forced upgrades of their installs.

use std::process::ExitCode;

use atrium_platform::registry::ForcedUpgrade;
use atrium_server::views::{AppDetailView, AppList, UpgradeRun};

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
        }
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
        Ok(())
    })
}
