//! The `contree-bench` binary: installs the counting allocator, parses the command line and
//! runs it. Argument errors are clap's (message and exit code 2); a failure while running
//! (an unwritable output file, say) is printed as `error: ...` with exit code 1.

use clap::Parser;

#[global_allocator]
static ALLOCATOR: contree_bench::alloc::CountingAlloc = contree_bench::alloc::CountingAlloc;

fn main() {
    let cli = contree_bench::cli::Cli::parse();
    if let Err(e) = contree_bench::commands::execute(cli) {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}
