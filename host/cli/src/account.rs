//! `atrium login`, `atrium whoami`, `atrium logout`: the developer token of the tool.
//!
//! `login --token` checks the token against the platform's `/api/dev/me` before it stores it
//! (with the platform's address) in the config file; a token the platform refuses is not
//! stored. `login` without `--token` signs in through the OpenID Connect provider the
//! platform names (`GET /api/dev/login`): the authorization code flow with PKCE of a native
//! app (RFC 8252, RFC 7636) on a loopback redirect, the ID token it yields checked (its nonce
//! here, everything else by the platform) and stored like a pasted token. `whoami` asks the platform who the token is. `logout` removes the stored token only:
//! the token stays valid on the platform until it expires.

use std::io::Read;

use atrium_server::views::Me;

use crate::client::{Client, Failure, Target, print_json, resolve_url};
use crate::platform::{self, TokenSource};

/// `atrium login` arguments.
#[derive(Debug, clap::Args)]
pub struct LoginArgs {
    #[command(flatten)]
    target: Target,
    /// A developer token to store (`-` reads it from standard input, which keeps it out of the
    /// shell's history). Without it, sign in with a browser.
    #[arg(long, value_name = "DEVELOPER_TOKEN")]
    token: Option<String>,
    /// Do not try to open a browser; only print the sign-in address.
    #[arg(long)]
    no_browser: bool,
}

/// `atrium whoami` arguments.
#[derive(Debug, clap::Args)]
pub struct WhoamiArgs {
    #[command(flatten)]
    target: Target,
    /// Print the account as JSON.
    #[arg(long)]
    json: bool,
}

/// `atrium logout` arguments.
#[derive(Debug, clap::Args)]
pub struct LogoutArgs {}

pub fn login(args: &LoginArgs) -> std::process::ExitCode {
    crate::client::run("login", async {
        let mut config = platform::read_config().map_err(Failure::BadInput)?;
        let url = resolve_url(&args.target, &config)?;
        let token = match args.token.as_deref() {
            Some("-") => {
                let mut text = String::new();
                std::io::stdin().read_to_string(&mut text).map_err(|e| {
                    Failure::BadInput(format!("cannot read the token from standard input: {e}"))
                })?;
                text.trim().to_owned()
            }
            Some(token) => token.trim().to_owned(),
            None => crate::oauth::sign_in(&url, !args.no_browser).await?,
        };
        if token.is_empty() {
            return Err(Failure::BadInput("the token is empty".to_owned()));
        }
        let client = Client::new(url.clone(), token.clone(), TokenSource::Given)?;
        let me: Me = client
            .call(reqwest::Method::GET, "/api/dev/me", None::<&()>)
            .await?;
        config.platform_url = Some(url.clone());
        config.token = Some(token);
        let path = platform::write_config(&config).map_err(Failure::Platform)?;
        println!(
            "Logged in to {url} as {} <{}>; the token is in {}",
            me.login,
            me.email,
            path.display()
        );
        if !me.publish_allowed {
            println!(
                "Note: this account may register versions but not promote them (publish_allowed is false)."
            );
        }
        Ok(())
    })
}

pub fn whoami(args: &WhoamiArgs) -> std::process::ExitCode {
    let code = crate::client::run("whoami", async {
        let client = Client::configured(&args.target)?;
        let me: Me = client
            .call(reqwest::Method::GET, "/api/dev/me", None::<&()>)
            .await?;
        if args.json {
            return print_json(&me);
        }
        println!("platform:        {}", client.url());
        println!("email:           {}", me.email);
        println!("login:           {}", me.login);
        println!("publish_allowed: {}", me.publish_allowed);
        match &me.tenant {
            Some(t) => println!(
                "tenant:          {} (organization {})",
                t.tenant, t.organization
            ),
            None => println!("tenant:          none"),
        }
        Ok(())
    });
    // The spec: whoami exits 1 when not authenticated (rather than the usual 3).
    if code == std::process::ExitCode::from(3) {
        std::process::ExitCode::from(1)
    } else {
        code
    }
}

pub fn logout(_args: &LogoutArgs) -> std::process::ExitCode {
    crate::client::run("logout", async {
        let mut config = platform::read_config().map_err(Failure::BadInput)?;
        let had = config.token.take().is_some();
        if had {
            let path = platform::write_config(&config).map_err(Failure::Platform)?;
            println!(
                "Logged out: the token was removed from {} (it stays valid on the platform until it expires).",
                path.display()
            );
        } else {
            println!("Not logged in: no token is stored.");
        }
        if std::env::var("SERVICE_TOKEN").is_ok_and(|t| !t.trim().is_empty()) {
            println!("SERVICE_TOKEN is set in this environment and is still used.");
        }
        Ok(())
    })
}
