use std::{env, fs, path::*, process::Command};

use cc::Build;

fn main() {
    let project = PathBuf::from(env::var("CARGO_MANIFEST_DIR").unwrap())
        .canonicalize()
        .unwrap();

    let liburing = match env::var("GLOMMIO_LIBURING_DIR") {
        Ok(path) => PathBuf::from(path).canonicalize().unwrap(),
        Err(_) => {
            Command::new("git")
                .arg("submodule")
                .arg("update")
                .arg("--init")
                .status()
                .unwrap();

            project.join("liburing")
        }
    };

    // Run the configure script in OUT_DIR to get `compat.h`
    let configured_include = configure(&liburing);

    let src = liburing.join("src");

    // liburing. Basalt: the system's, when there is one. RocksDB's
    // io_uring reads (built against the system's headers) link the same
    // `uring` symbols; with this crate's older copy in the binary, RocksDB's
    // inline helpers read `ring_mask`/`ring_entries` fields the old
    // `io_uring_queue_init` never set, and its MultiRead found no room in
    // the ring. The struct sizes are the same and the newer library still
    // sets the old fields, so this crate's own code works with either.
    let system = pkg_config::Config::new()
        .statik(true)
        .cargo_metadata(true)
        .probe("liburing")
        .is_ok();
    // pkg-config's own rerun lines make cargo rerun this script only when
    // its variables change: a build made before liburing-dev was installed
    // would keep the old copy (and RocksDB's MultiRead then spins forever).
    // A header that does not exist yet keeps this script rerunning until
    // it does.
    println!("cargo:rerun-if-changed=/usr/include/liburing.h");
    println!("cargo:rerun-if-changed=build.rs");
    if system {
        // A copy built by an earlier run would still be found first: the
        // linker searches this OUT_DIR before the system's directory.
        let out = PathBuf::from(env::var("OUT_DIR").unwrap());
        let _ = fs::remove_file(out.join("liburing.a"));
    } else {
        Build::new()
            .file(src.join("setup.c"))
            .file(src.join("queue.c"))
            .file(src.join("syscall.c"))
            .file(src.join("register.c"))
            .include(src.join("include"))
            .include(&configured_include)
            .extra_warnings(false)
            .compile("uring");
    }

    // (our additional, linkable C bindings)
    Build::new()
        .file(project.join("rusturing.c"))
        .include(src.join("include"))
        .include(&configured_include)
        .compile("rusturing");
}

fn configure(liburing: &Path) -> PathBuf {
    let out_dir = PathBuf::from(env::var("OUT_DIR").unwrap())
        .canonicalize()
        .unwrap();
    fs::copy(liburing.join("configure"), out_dir.join("configure")).unwrap();
    fs::create_dir_all(out_dir.join("src/include/liburing")).unwrap();
    Command::new("./configure")
        .current_dir(&out_dir)
        .output()
        .expect("configure script failed");
    out_dir.join("src/include")
}
