//! `atrium tenants tokens`: the tokens of a tenant's admins and users, issued by the operator.
//!
//! A host administration command, like `atrium keys`: it works on the host's store directly
//! (chosen as [`crate::hoststore`] says), and does what `POST`/`GET`/`DELETE
//! /api/tenants/{tenant}/tokens` do with an organization key. Exit codes: 0 success, 1 bad input
//! (an unknown organization, tenant or token, an invalid user id or display name, no store
//! found), 2 the store could not be opened or written.

use std::process::ExitCode;

use atrium_store::{NewTenantToken, Store, StoreError, TenantRole, TenantToken};

/// `atrium tenants` arguments.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    command: TenantsCommand,
    #[command(flatten)]
    store: crate::hoststore::StoreArgs,
}

#[derive(Debug, clap::Subcommand)]
enum TenantsCommand {
    /// Issue, list and revoke the tokens of a tenant's admins and users.
    #[command(subcommand)]
    Tokens(TokensCommand),
}

/// The organization and tenant a command works on.
#[derive(Debug, clap::Args)]
struct TenantRef {
    /// The organization, by id (`org_...`) or name.
    #[arg(long)]
    org: String,
    /// The tenant's id.
    #[arg(long)]
    tenant: String,
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
enum Role {
    /// The tenant's administrator.
    Admin,
    /// A user of the tenant.
    User,
}

#[derive(Debug, clap::Subcommand)]
enum TokensCommand {
    /// Issue a token (the tenant is created when new); the last line printed is the token
    /// alone. It is not shown again.
    Create {
        #[command(flatten)]
        tenant: TenantRef,
        /// What the token may do.
        #[arg(long, value_enum)]
        role: Role,
        /// The user the token speaks for, a UUID; without it, a new user with a random one.
        #[arg(long, value_name = "UUID")]
        user_id: Option<String>,
        /// The user's display name (default for a new user: "Admin" or "User").
        #[arg(long, value_name = "NAME")]
        display_name: Option<String>,
    },
    /// List a tenant's tokens (never their secrets).
    List {
        #[command(flatten)]
        tenant: TenantRef,
        /// Print a JSON array.
        #[arg(long)]
        json: bool,
    },
    /// Revoke a token by id: requests with it get 401 from then on.
    Revoke {
        #[command(flatten)]
        tenant: TenantRef,
        /// The token's id (`ttk_...`, from `atrium tenants tokens list`).
        id: String,
    },
}

fn exit_for(error: &StoreError) -> ExitCode {
    eprintln!("error: {error}");
    match error {
        StoreError::Invalid(_) | StoreError::NotFound(_) => ExitCode::from(1),
        _ => ExitCode::from(2),
    }
}

fn time(at: jiff::Timestamp) -> String {
    at.round(jiff::Unit::Second).unwrap_or(at).to_string()
}

/// The id of the organization `reference` names (by id or name).
async fn organization(store: &Store, reference: &str) -> Result<String, ExitCode> {
    match store.organization_id(reference).await {
        Ok(Some(id)) => Ok(id),
        Ok(None) => {
            eprintln!(
                "error: there is no organization `{reference}` (create one with `atrium keys create --org <name>`)"
            );
            Err(ExitCode::from(1))
        }
        Err(e) => Err(exit_for(&e)),
    }
}

fn describe(t: &TenantToken) -> String {
    format!(
        "{} ({}, user {} \"{}\")",
        t.id,
        t.role.as_str(),
        t.user_id,
        t.display_name
    )
}

/// Runs `atrium tenants`.
pub fn run(args: &Args) -> ExitCode {
    crate::block_on(false, async {
        let store = match args.store.open().await {
            Ok((store, _)) => store,
            Err(code) => return code,
        };
        let TenantsCommand::Tokens(command) = &args.command;
        let code = tokens(command, &store).await.unwrap_or_else(|code| code);
        store.close().await;
        code
    })
}

async fn tokens(command: &TokensCommand, store: &Store) -> Result<ExitCode, ExitCode> {
    match command {
        TokensCommand::Create {
            tenant,
            role,
            user_id,
            display_name,
        } => {
            let org_id = organization(store, &tenant.org).await?;
            let role = match role {
                Role::Admin => TenantRole::Admin,
                Role::User => TenantRole::User,
            };
            let created = store
                .create_tenant_token(
                    &atrium_store::TenantKey::new(&org_id, &tenant.tenant),
                    &NewTenantToken {
                        role,
                        user_id: user_id.as_deref(),
                        display_name: display_name.as_deref(),
                    },
                )
                .await
                .map_err(|e| exit_for(&e))?;
            let new = if created.user_created {
                "a new user"
            } else {
                "an existing user"
            };
            println!(
                "Created tenant token {} for {new} of tenant {} in organization {org_id}.",
                describe(&created.token),
                tenant.tenant
            );
            println!("It is shown only now; send it as `Authorization: Bearer <token>`.");
            println!("{}", created.secret);
        }
        TokensCommand::List { tenant, json } => {
            let org_id = organization(store, &tenant.org).await?;
            match store
                .tenant(&atrium_store::TenantKey::new(&org_id, &tenant.tenant))
                .await
            {
                Ok(Some(_)) => {}
                Ok(None) => {
                    eprintln!(
                        "error: organization `{}` has no tenant `{}`",
                        tenant.org, tenant.tenant
                    );
                    return Err(ExitCode::from(1));
                }
                Err(e) => return Err(exit_for(&e)),
            }
            let tokens = store
                .tenant_tokens(&atrium_store::TenantKey::new(&org_id, &tenant.tenant))
                .await
                .map_err(|e| exit_for(&e))?;
            if *json {
                let rows: Vec<serde_json::Value> = tokens
                    .iter()
                    .map(|t| {
                        serde_json::json!({
                            "id": t.id, "role": t.role.as_str(), "user_id": t.user_id,
                            "display_name": t.display_name, "tenant": t.tenant_id,
                            "prefix": t.prefix, "created_at": time(t.created_at),
                            "revoked_at": t.revoked_at.map(time),
                        })
                    })
                    .collect();
                println!("{}", serde_json::Value::Array(rows));
            } else {
                println!(
                    "{:<22} {:<6} {:<37} {:<20} {:<13} {:<22} STATUS",
                    "ID", "ROLE", "USER", "DISPLAY NAME", "PREFIX", "CREATED"
                );
                for t in &tokens {
                    let status = t
                        .revoked_at
                        .map_or_else(|| "active".to_owned(), |at| format!("revoked {}", time(at)));
                    println!(
                        "{:<22} {:<6} {:<37} {:<20} {:<13} {:<22} {status}",
                        t.id,
                        t.role.as_str(),
                        t.user_id,
                        t.display_name,
                        t.prefix,
                        time(t.created_at)
                    );
                }
            }
        }
        TokensCommand::Revoke { tenant, id } => {
            let org_id = organization(store, &tenant.org).await?;
            let token = store
                .revoke_tenant_token(&atrium_store::TenantKey::new(&org_id, &tenant.tenant), id)
                .await
                .map_err(|e| exit_for(&e))?;
            println!(
                "Revoked tenant token {} of tenant {}.",
                describe(&token),
                tenant.tenant
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}
