//! Routes that list themselves: every module builds its router with `Routes` and the method
//! functions here (`get`, `post`, ...) instead of axum's, so that the host's router and the
//! table of what it serves ([`crate::route_table`]: each [`Route`], a method and a path) are
//! made by the same calls. A test that must reach every route (another tenant's try of each,
//! the API's documents) takes them from that table, and a route added cannot be left out of
//! it.

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::handler::Handler;
use axum::routing::{self, MethodRouter};

use crate::HostState;

/// One method of one path the host serves.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Route {
    /// `GET`, `POST`, `PUT`, `PATCH`, `DELETE`, or `ANY` (a route that answers every method,
    /// as an app's own HTTP routes do).
    pub method: &'static str,
    /// The path, its parameters in braces as the router writes them (`/api/wires/{id}`).
    pub path: String,
}

/// The methods of one path and their handlers.
pub(crate) struct Methods {
    router: MethodRouter<HostState>,
    methods: Vec<&'static str>,
}

macro_rules! methods {
    ($($name:ident => $method:literal),* $(,)?) => {
        $(
            #[doc = concat!("A path answering `", $method, "` with `handler`.")]
            pub(crate) fn $name<H, T>(handler: H) -> Methods
            where
                H: Handler<T, HostState>,
                T: 'static,
            {
                Methods {
                    router: routing::$name(handler),
                    methods: vec![$method],
                }
            }
        )*

        impl Methods {
            $(
                #[doc = concat!("These methods and `", $method, "` with `handler`.")]
                pub(crate) fn $name<H, T>(mut self, handler: H) -> Methods
                where
                    H: Handler<T, HostState>,
                    T: 'static,
                {
                    self.router = self.router.$name(handler);
                    self.methods.push($method);
                    self
                }
            )*
        }
    };
}

methods! {
    get => "GET",
    post => "POST",
    put => "PUT",
    patch => "PATCH",
    delete => "DELETE",
}

/// A path answering every method with `handler`.
pub(crate) fn any<H, T>(handler: H) -> Methods
where
    H: Handler<T, HostState>,
    T: 'static,
{
    Methods {
        router: routing::any(handler),
        methods: vec!["ANY"],
    }
}

impl Methods {
    /// The methods so far, their request bodies limited to `bytes` rather than the host's
    /// default.
    pub(crate) fn limit_body(mut self, bytes: usize) -> Methods {
        self.router = self.router.layer(DefaultBodyLimit::max(bytes));
        self
    }
}

/// A router and the table of its routes, built by the same calls.
#[derive(Default)]
pub(crate) struct Routes {
    router: Router<HostState>,
    table: Vec<Route>,
}

impl Routes {
    /// No routes.
    pub(crate) fn new() -> Routes {
        Routes::default()
    }

    /// `path` served by `methods`.
    pub(crate) fn route(mut self, path: &str, methods: Methods) -> Routes {
        self.router = self.router.route(path, methods.router);
        self.table
            .extend(methods.methods.into_iter().map(|method| Route {
                method,
                path: path.to_owned(),
            }));
        self
    }

    /// These routes and `other`'s.
    pub(crate) fn merge(mut self, other: Routes) -> Routes {
        self.router = self.router.merge(other.router);
        self.table.extend(other.table);
        self
    }

    /// These routes and `other`'s under `prefix`.
    pub(crate) fn nest(mut self, prefix: &str, other: Routes) -> Routes {
        self.router = self.router.nest(prefix, other.router);
        self.table
            .extend(other.table.into_iter().map(|route| Route {
                method: route.method,
                path: format!("{prefix}{}", route.path),
            }));
        self
    }

    /// What answers a path none of the routes serves.
    pub(crate) fn fallback<H, T>(mut self, handler: H) -> Routes
    where
        H: Handler<T, HostState>,
        T: 'static,
    {
        self.router = self.router.fallback(handler);
        self
    }

    /// The router.
    pub(crate) fn into_router(self) -> Router<HostState> {
        self.router
    }

    /// The table, sorted by path and method.
    pub(crate) fn into_table(mut self) -> Vec<Route> {
        self.table
            .sort_by(|a, b| (&a.path, a.method).cmp(&(&b.path, b.method)));
        self.table
    }
}
