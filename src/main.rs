fn main() {
    std::process::exit(noma::cli::main());
}
