//! Compiles the one C helper: INCRBYFLOAT in `long double`, as Redis does it.
fn main() {
    println!("cargo:rerun-if-changed=src/types/long_double.c");
    cc::Build::new()
        .file("src/types/long_double.c")
        .opt_level(2)
        .compile("basalt_long_double");
}
