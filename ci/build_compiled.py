"""Build the optional compiled form of kcm's model, reference, property and explorer modules with Cython.

Compiles each source file as it is (no second copy of any rule) into build/compiled/ and writes a manifest of
the sources' SHA-256, which `kcm.compiled` checks at import: an edited module falls back to its source. A `.pxd`
next to a module (compile-time type declarations only; Python never reads it) is part of its source. Left
out: `model/transitions.py` (CrossHair and icontract read its Python functions) and the packages' __init__.

By default the build is profile-guided (gcc): the modules are first built instrumented, training searches run on
them (parts of `default`, `async`, `tla-kip320` and `unclean`), and they are built again with that profile;
later builds reuse the profile for the modules that changed. `--no-pgo` builds without it (about 2.5 times faster
to build, about 4% slower to run).

A build when no source changed since the last one (same hashes, same directives, every module in place) does
nothing. Otherwise only the modules whose bytes changed are put in place, each by a new file renamed over the
old one (`kcm.compiled.install_file`), then the manifest the same way: an exploration running from the build
meanwhile keeps the modules it mapped (a copy over them killed it with SIGBUS).

    python ci/build_compiled.py [--jobs N] [--force] [--no-pgo]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
EXCLUDED = {"model/transitions.py"}
WORK = ROOT / "build" / "compiled-work"  # generated C, objects, the profile and the declarations' shadow folder
BOUND = {"kcm.properties"}  # packages whose functions must stay Cython function objects (see main)
# -fno-plt: the modules call the interpreter's C API (a shared libpython here) through the GOT instead of PLT
# stubs, one jump less per call; about 2% of the compiled engine's time on `controller` (docs/performance.md).
CFLAGS = ["-fno-plt"]
# The Cython directives and C flags of this build, recorded in the manifest: a build under others is redone whole.
DIRECTIVES = {"language_level": 3, "binding_off_outside": sorted(BOUND), "cflags": CFLAGS}
# The training searches of a profile-guided build: the explorer's hot path as `kcm explore` runs it, on configs other
# than those `ci/bench_explore.py` measures the build on (`controller`, `bugs/KIP-101`), so the profile is not fitted
# to the benchmark.
TRAINING = (["--config", "default", "--max-states", "20000"], ["--config", "async", "--max-states", "15000"],
            ["--config", "tla-kip320", "--max-states", "15000"], ["--config", "unclean", "--max-states", "10000"])


def main(argv: list[str] | None = None) -> int:
    """Compile (profile-guided unless --no-pgo), then write the manifest; exit 1 if Cython or a compiler is missing."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--jobs", type=int, default=2, help="parallel compiler jobs (default 2)")
    p.add_argument("--force", action="store_true", help="regenerate every C file (done anyway when the "
                   "directives changed) and, profile-guided, train again")
    p.add_argument("--no-pgo", action="store_true", help="build without a profile (no training search)")
    p.add_argument("--instrument", action="store_true", help=argparse.SUPPRESS)  # the first step of a guided build
    args = p.parse_args(argv)
    try:
        import Cython.Build  # noqa: F401
        import setuptools  # noqa: F401
    except ImportError:
        print("build_compiled: Cython is not installed (pip install cython)", file=sys.stderr)
        return 1
    from kcm.compiled import MANIFEST

    profile = WORK / "profile"
    directives = {**DIRECTIVES, "pgo": not args.no_pgo}
    try:
        force = args.force or json.loads(MANIFEST.read_text()).get("directives") != directives
    except (OSError, ValueError, AttributeError):
        force = True  # no build yet, or a damaged manifest
    if not force and not args.instrument and _up_to_date(directives):
        print(f"build_compiled: every module is up to date in {MANIFEST.parent.relative_to(ROOT)} (nothing rebuilt)")
        return 0
    if args.no_pgo:
        return _build(args.jobs, force, [], [], directives)
    if args.instrument:
        # Every module instrumented: each training process writes its counters into `profile` at exit.
        generate = [f"-fprofile-generate={profile}", "-fprofile-update=single"]
        return _build(args.jobs, True, generate, [f"-fprofile-generate={profile}"], {**directives, "pgo": "training"})
    if force or not profile.is_dir():
        shutil.rmtree(profile, ignore_errors=True)
        # In a process of its own: a second build in the same process kept the first one's instrumented modules.
        instrument = [sys.executable, __file__, "--instrument", "--jobs", str(args.jobs)]
        code = subprocess.run(instrument, check=False).returncode
        if code:
            return code
        force = True
    try:
        if force:
            env = {k: v for k, v in os.environ.items() if k != "KCM_PURE"}
            for training in TRAINING:
                done = subprocess.run([sys.executable, "-m", "kcm", "explore", "--quiet", "--continue", *training],
                                      cwd=ROOT, env=env, stdout=subprocess.DEVNULL, check=False)
                if done.returncode not in (0, 1, 3):  # 1: a property violated; 3: stopped at --max-states
                    raise RuntimeError(f"the training search {' '.join(training)} failed (exit {done.returncode})")
        # With the profile: functions it does not cover (a module changed since the training, code the training
        # never ran) are still optimized for speed (-fprofile-partial-training), and a stale profile only warns.
        # A changed module's counters can still match its new control flow's checksum yet not add up ("corrupted
        # profile info", an error): -fprofile-correction smooths them instead of failing the build.
        use = [f"-fprofile-use={profile}", "-fprofile-partial-training", "-fprofile-correction",
               "-Wno-missing-profile", "-Wno-coverage-mismatch"]
        return _build(args.jobs, force, use, [], directives)
    except BaseException as err:
        # Never leave the instrumented modules installed: without a manifest every process uses the source.
        MANIFEST.unlink(missing_ok=True)
        if isinstance(err, RuntimeError):
            print(f"build_compiled: {err}", file=sys.stderr)
            return 1
        raise


def _build(jobs: int, force: bool, cflags: list[str], ldflags: list[str], directives: dict) -> int:
    """Cythonize and compile every module with CFLAGS plus `cflags`, install them in BUILD and write the manifest."""
    from Cython.Build import cythonize
    from setuptools import Distribution, Extension

    from kcm.compiled import BUILD, MANIFEST, digest, install_file

    sources = _sources()
    hashes = {name: digest(path) for name, path in sources.items()}  # of the sources as they are compiled
    include = _declarations(sources, WORK / "pxd")
    exts = [Extension(name, [str(path.relative_to(ROOT))], extra_compile_args=CFLAGS + cflags,
                      extra_link_args=ldflags) for name, path in sources.items()]
    # Plain C functions (binding=False) are cheaper to call than Cython's function objects, but take no
    # attributes: the property predicates carry their `@reads` declaration as one, so they keep binding=True.
    modules = []
    for binding in (True, False):
        group = [ext for ext in exts if (ext.name.rpartition(".")[0] in BOUND) == binding]
        if group:
            modules += cythonize(group, build_dir=str(WORK), quiet=True, nthreads=jobs, force=force,
                                 include_path=[str(include)],
                                 compiler_directives={"language_level": 3, "binding": binding})
    dist = Distribution({"name": "kcm-compiled", "ext_modules": modules})
    cmd = dist.get_command_obj("build_ext")
    cmd.build_lib = str(WORK / "lib")
    cmd.build_temp = str(WORK / "temp")
    cmd.parallel = jobs
    cmd.force = force  # a C flag changed: every module is compiled again, not only those whose C file is new
    cmd.ensure_finalized()
    cmd.run()
    # The modules first, the manifest last: until it is replaced, the old manifest's hashes send every process to
    # the source of a module whose source changed, and a module whose source did not change is the same code.
    BUILD.mkdir(parents=True, exist_ok=True)
    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    manifest = {}
    replaced = 0
    for name in sources:
        built = WORK / "lib" / (name.replace(".", "/") + suffix)
        binary = name + suffix
        replaced += install_file(built, BUILD / binary)
        manifest[name] = {"source": hashes[name], "binary": binary}
    text = json.dumps({"modules": manifest, "directives": directives}, indent=1, sort_keys=True) + "\n"
    staged = WORK / "manifest.json"
    staged.write_text(text)
    install_file(staged, MANIFEST)
    print(f"build_compiled: {len(manifest)} modules compiled into {BUILD.relative_to(ROOT)}, {replaced} of them "
          f"changed and put in place"
          + {True: " (profile-guided)", "training": " (instrumented for training)"}.get(directives.get("pgo"), ""))
    return 0


def _sources() -> dict[str, Path]:
    """Import name -> source file of every module the build compiles."""
    from kcm.compiled import PACKAGES, source_of

    sources = {}
    for package, folder in PACKAGES.items():
        for path in sorted((ROOT / folder).glob("*.py")):
            rel = f"{folder}/{path.name}"
            name = f"{package}.{path.stem}"
            if path.name != "__init__.py" and rel not in EXCLUDED and source_of(name) is not None:
                sources[name] = path
    return sources


def _up_to_date(directives: dict) -> bool:
    """Whether the installed build is the one these sources and directives make: same modules, same hashes, every
    module's file in place."""
    from kcm.compiled import BUILD, MANIFEST, digest

    try:
        recorded = json.loads(MANIFEST.read_text())
        modules = recorded["modules"]
        if recorded.get("directives") != directives:
            return False
        sources = _sources()
        return set(modules) == set(sources) and all(
            modules[name]["source"] == digest(path) and (BUILD / modules[name]["binary"]).is_file()
            for name, path in sources.items())
    except (OSError, ValueError, KeyError, TypeError):
        return False


def _declarations(sources: dict[str, Path], shadow: Path) -> Path:
    """A folder laid out by import name holding each compiled module's augmenting .pxd (the `.pxd` next to its
    `.py`), where Cython looks for a module's own declarations (it finds them by the module's full name, and
    the checkout's folders are not named as the packages are)."""
    if shadow.exists():
        shutil.rmtree(shadow)
    for name, path in sources.items():
        pxd = path.with_suffix(".pxd")
        if not pxd.is_file():
            continue
        parts = name.split(".")
        for depth in range(1, len(parts)):
            package = shadow.joinpath(*parts[:depth])
            package.mkdir(parents=True, exist_ok=True)
            (package / "__init__.py").touch()
        shutil.copy2(pxd, shadow.joinpath(*parts[:-1], parts[-1] + ".pxd"))
    shadow.mkdir(parents=True, exist_ok=True)
    return shadow


if __name__ == "__main__":
    sys.exit(main())
