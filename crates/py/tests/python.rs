//! Runs the Python test suite (pytest, in this directory) against the module cargo just built,
//! so that `cargo test --workspace` is the whole test suite.
//!
//! The compiled library is staged with the package's Python files under `target/py-stage`, and
//! the tests run in a virtual environment at `target/py-venv` holding `requirements-test.txt`
//! (created on the first run from Python 3.10 or newer with `venv` and pip). `.ci/run` sets
//! `MEEPLE_FULL_TESTS=1`, under which a Python that cannot make the environment is a failure;
//! without that variable the suite says so and passes, so that `cargo test --workspace` works on
//! a machine with only the toolchain.

use std::path::{Path, PathBuf};
use std::process::Command;

fn run(cmd: &mut Command, what: &str) {
    let status = cmd.status().unwrap_or_else(|e| panic!("cannot run {what} ({cmd:?}): {e}"));
    assert!(status.success(), "{what} failed ({status}): {cmd:?}");
}

fn venv(target: &Path, requirements: &Path) -> PathBuf {
    let venv = target.join("py-venv");
    let python = venv.join("bin").join("python");
    if !python.exists() {
        let system = std::env::var("PYTHON").unwrap_or_else(|_| "python3".into());
        run(Command::new(system).args(["-m", "venv"]).arg(&venv), "creating the Python virtual environment");
    }
    // Installing only when the requirements changed keeps repeated runs quick (and offline).
    let stamp = venv.join("meeple-requirements.txt");
    let wanted = std::fs::read_to_string(requirements).expect("requirements-test.txt");
    if std::fs::read_to_string(&stamp).ok().as_deref() != Some(wanted.as_str()) {
        run(
            Command::new(&python)
                .args(["-m", "pip", "install", "--quiet", "--disable-pip-version-check", "-r"])
                .arg(requirements),
            "installing the Python test requirements",
        );
        std::fs::write(&stamp, wanted).expect("write the requirements stamp");
    }
    python
}

/// Whether a Python that can make the virtual environment is here (or the environment is made).
fn python_present(target: &Path) -> bool {
    let system = std::env::var("PYTHON").unwrap_or_else(|_| "python3".into());
    let can = Command::new(&system)
        .args(["-c", "import sys, venv, ensurepip; assert sys.version_info >= (3, 10)"])
        .output()
        .is_ok_and(|o| o.status.success());
    if can || target.join("py-venv/bin/python").exists() || std::env::var_os("MEEPLE_FULL_TESTS").is_some() {
        return true;
    }
    eprintln!(
        "skipping the Python suite: {system} 3.10+ with venv and ensurepip is missing (Debian: apt-get install python3-venv; `.ci/run` installs it and requires it)"
    );
    false
}

#[test]
fn python_test_suite() {
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    // This test runs from target/<profile>/deps, beside the library cargo built for it.
    let deps = std::env::current_exe().expect("test path").parent().expect("deps directory").to_path_buf();
    let profile_dir = deps.parent().expect("profile directory").to_path_buf();
    let target = profile_dir.parent().expect("target directory").to_path_buf();
    if !python_present(&target) {
        return;
    }
    // The newest: a build of another profile or an older one may have left a copy beside it.
    let library = ["lib_meeple.so", "lib_meeple.dylib", "_meeple.dll"]
        .iter()
        .flat_map(|name| [deps.join(name), profile_dir.join(name)])
        .filter_map(|p| Some((std::fs::metadata(&p).and_then(|m| m.modified()).ok()?, p)))
        .max()
        .map(|(_, p)| p)
        .unwrap_or_else(|| panic!("the compiled module (lib_meeple.so) is not in {}", deps.display()));

    let stage = target.join("py-stage");
    let package = stage.join("meeple");
    std::fs::create_dir_all(&package).expect("create the staging directory");
    for entry in std::fs::read_dir(here.join("python").join("meeple")).expect("python sources") {
        let path = entry.expect("python source").path();
        // The sources, the type stubs and their marker, as a wheel installs them.
        if path.extension().is_some_and(|e| e == "py" || e == "pyi") || path.ends_with("py.typed") {
            std::fs::copy(&path, package.join(path.file_name().expect("file name"))).expect("stage a Python file");
        }
    }
    let module = package.join(if cfg!(windows) { "_meeple.pyd" } else { "_meeple.abi3.so" });
    // Replaced, not overwritten in place: a running interpreter may still map the old one.
    let _ = std::fs::remove_file(&module);
    std::fs::copy(&library, &module).expect("stage the compiled module");

    let python = venv(&target, &here.join("requirements-test.txt"));
    let mut pytest = Command::new(python);
    pytest
        .args(["-m", "pytest", "-q", "-p", "no:cacheprovider"])
        .arg(here.join("tests"))
        .env("PYTHONPATH", &stage)
        .env("PYTHONDONTWRITEBYTECODE", "1");
    let cli = profile_dir.join("meeple");
    if cli.exists() {
        pytest.env("MEEPLE_BIN", cli);
    }
    run(&mut pytest, "the Python test suite (pytest crates/py/tests)");
}
