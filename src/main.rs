//! The `noma` binary: everything lives in the library; see `noma::cli`.

// The parser builds many small nodes; mimalloc makes that markedly cheaper
// than the system allocator (measured in benches/parse.rs).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    std::process::exit(noma::cli::main());
}
