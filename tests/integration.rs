//! The one integration-test binary: it runs the built `edgeplan` as users do.

mod util;
mod cli;
mod plan;
