//! The one integration-test binary: it runs the built `edgeplan` as users do.

mod cli;
mod util;
