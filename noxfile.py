"""Developer sessions. Every session installs the pinned CPU torch first: a bare
``torch`` requirement would pull a multi-GB CUDA build (override the pin with
SESSIONSTATE_TORCH, e.g. ``SESSIONSTATE_TORCH=torch==2.5.1``)."""

from __future__ import annotations

import os
import shutil
import zipfile
from pathlib import Path

import nox

nox.options.sessions = ["tests", "typecheck", "lint", "package", "docs"]
nox.options.default_venv_backend = "venv"

TORCH = os.environ.get("SESSIONSTATE_TORCH", "torch==2.13.0")


def install(session: nox.Session, extras: str = "test") -> None:
    session.install(TORCH)
    # setuptools builds the wheel through ./build: a module moved or deleted since the last
    # build would still be in it, and tested or type-checked as if it were shipped.
    shutil.rmtree("build", ignore_errors=True)
    session.install(f".[{extras}]")


@nox.session
def tests(session: nox.Session) -> None:
    """The project's own tests (reference unit tests, suite self-tests), in parallel; with
    the ``[fuzz]`` extra, for the Redis client tests/cli/test_database.py uses."""
    # [docs]: tests/docs builds the API reference (Sphinx) with warnings as errors.
    install(session, "test,fuzz,docs")
    # Exit 5 ("no tests collected") fails the session, as CI requires: a run that
    # collects nothing has checked nothing. A narrowed run that may select nothing
    # says so itself (`nox -s tests -- -k ...`).
    # vLLM-omni's released wheel, for tests/upstream: the one client that is not ours is
    # checked in this run, beside everything else (offline: an error under CI).
    wheel = _vllm_omni_wheel(session)
    env = {"SESSIONSTATE_VLLM_OMNI_PATH": str(wheel)} if wheel else {}
    # worksteal: an idle worker takes queued tests from a busy one; with the slowest
    # tests collected first (tests/conftest.py), the run does not end on one long tail.
    # Two workers per core: many tests wait (on a per-test bound, a hang's deadline, a
    # stopped Redis) with their cores idle, and another worker uses them meanwhile.
    workers = str(max(2, (os.cpu_count() or 2) * 2))
    session.run("pytest", "-n", workers, "--dist", "worksteal", *session.posargs, env=env)


def _floors() -> dict[str, str]:
    """pyproject's runtime dependencies: distribution -> its floor (the release after ``>=``)."""
    import tomllib

    project = tomllib.loads(Path("pyproject.toml").read_text())["project"]
    return {
        name.strip(): version.strip()
        for name, _, version in (r.partition(">=") for r in project["dependencies"])
    }


def _run_the_suite(session: nox.Session) -> None:
    """The installed suite, as a user runs it: conformant on the reference (exit 0), and a
    zoo subject's bug found and named (exit 1), each at the quick profile."""
    session.run("pip", "check")
    # -n 2: pytest-xdist's floor is set by --dist worksteal, which only a run on workers uses.
    session.run("sessionstate", "check", "--profile", "quick", "-n", "2")
    found = session.run(
        "sessionstate", "check", "sessionstate.fixtures.zoo.lru_mru_eviction:subject",
        "--clause", "LRU", "--profile", "quick", success_codes=[1], silent=True,
    )  # fmt: skip
    if "LRU-4" not in str(found):
        session.error(f"the zoo subject's LRU-4 bug was not named:\n{found}")


@nox.session
def lowest(session: nox.Session) -> None:
    """The oldest releases pyproject.toml allows: each runtime dependency at its floor
    (pins generated from pyproject, pip resolving what they need in turn), then the suite.
    torch is the pinned CPU build, which is its floor (no older build is on hand)."""
    session.install(TORCH)
    pins = Path(session.create_tmp()) / "floors.txt"
    floors = {name: version for name, version in _floors().items() if name != "torch"}
    pins.write_text("".join(f"{name}=={version}\n" for name, version in floors.items()))
    shutil.rmtree("build", ignore_errors=True)
    session.install("-c", str(pins), *(f"{name}=={version}" for name, version in floors.items()))
    session.install("-c", str(pins), ".")
    _run_the_suite(session)


@nox.session
def newest(session: nox.Session) -> None:
    """The newest releases pyproject.toml allows (``pip install -U``, every dependency
    upgraded), torch held at the pinned build, then the suite: the next release that
    breaks something the suite relies on is seen here first. CI's run of the newest
    releases is the README's command in a fresh venv (``tests/cli/test_first_contact.py``,
    where pip takes the newest releases there are), so ``.ci/run`` does not repeat it."""
    session.install(TORCH)
    held = Path(session.create_tmp()) / "torch.txt"
    held.write_text(TORCH + "\n")
    shutil.rmtree("build", ignore_errors=True)
    session.install("-c", str(held), "-U", "--upgrade-strategy", "eager", ".")
    _run_the_suite(session)


#: The vLLM-omni release ``nox -s upstream`` checks; a newer one is checked by changing this.
VLLM_OMNI = os.environ.get("SESSIONSTATE_VLLM_OMNI_VERSION", "0.30.0")


@nox.session
def upstream(session: nox.Session) -> None:
    """vLLM-omni's released session state, from the package registry, checked by the suite:
    its manager with its own hooks, its StateObjects and its DreamZero adapter against its
    own DreamZeroState (``python -m sessionstate.fixtures.check_vllm_omni``), each against
    the expectations files in fixtures/, then tests/upstream (a removed expectation, a
    stale one and a broken clause each turn the check red). The wheel is downloaded with
    ``--no-deps`` into the session and never installed: vLLM is not needed. It rewrites the
    compatibility table in docs/vllm-omni.md (run it after changing the version or an
    expectation). CI runs the same checks inside ``nox -s tests``, which downloads the
    wheel too (tests/upstream), there failing on a table that is not the run's; offline,
    both fail under CI, and elsewhere skip, saying why."""
    install(session)
    wheel = _vllm_omni_wheel(session)
    if wheel is None:
        session.skip("vLLM-omni's wheel could not be downloaded (offline?)")
    reports = Path(session.create_tmp()) / "reports"
    shutil.rmtree(reports, ignore_errors=True)
    env = {"SESSIONSTATE_VLLM_OMNI_PATH": str(wheel)}
    session.run(
        "python", "-m", "sessionstate.fixtures.check_vllm_omni", "--reports", str(reports), env=env
    )
    session.run("pytest", "-p", "no:randomly", "-q", "tests/upstream", env=env)
    _write_compatibility(session, (reports / "matrix.md").read_text())


def _vllm_omni_wheel(session: nox.Session) -> Path | None:
    """The released vllm-omni wheel (``VLLM_OMNI``), downloaded into the session with
    ``--no-deps`` and never installed; ``None`` when it cannot be (offline), which is an
    error under CI: the check of the one client that is not ours never silently skips."""
    wheels = Path(session.create_tmp()) / "vllm-omni"
    shutil.rmtree(wheels, ignore_errors=True)
    # Exit 1 is pip's "could not download"; what it means is decided below, by what came.
    session.run(
        "pip", "download", "--quiet", "--no-deps", "--only-binary", ":all:",
        "--dest", str(wheels), f"vllm-omni=={VLLM_OMNI}", silent=True, success_codes=[0, 1],
    )  # fmt: skip
    found = sorted(wheels.glob("vllm_omni-*.whl"))
    if found:
        return found[0]
    why = f"vllm-omni=={VLLM_OMNI} could not be downloaded from the package registry"
    if os.environ.get("CI"):
        session.error(why)
    session.warn(f"{why} (offline?): the tests that need it skip, saying so")
    return None


def _write_compatibility(session: nox.Session, matrix: str) -> None:
    """Put ``matrix`` between docs/vllm-omni.md's markers; under CI, a change is an error."""
    page = Path("docs/vllm-omni.md")
    text = page.read_text()
    begin, end = "<!-- compatibility: begin -->\n", "<!-- compatibility: end -->"
    head, _, rest = text.partition(begin)
    _, _, tail = rest.partition(end)
    updated = f"{head}{begin}{matrix.strip()}\n{end}{tail}"
    if updated == text:
        return
    if os.environ.get("CI"):
        session.error(f"{page}'s compatibility table is stale; run nox -s upstream and commit it")
    page.write_text(updated)
    session.log(f"{page}: compatibility table rewritten")


@nox.session
def typecheck(session: nox.Session) -> None:
    """mypy --strict over all shipped code: the ``sessionstate`` package, which is src/,
    reference/, conformance/ and fixtures/ (pyproject's package-dir mapping).

    mypy cannot follow that mapping in the source tree or through an editable install,
    so the package is installed as a wheel and checked as installed: errors name the
    copy in the session's site-packages (``.../sessionstate/conformance/plugin.py`` is
    ``conformance/plugin.py`` here). The settings are pyproject's ``[tool.mypy]``.
    """
    # [fuzz]: the fuzzing glue (conformance/_harness/fuzz.py, database.py) imports HypoFuzz
    # and redis, both typed.
    install(session, "dev,fuzz")
    session.run("mypy", "--strict", "-p", "sessionstate")


@nox.session
def lint(session: nox.Session) -> None:
    """ruff lint and format check."""
    session.install("ruff")
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")


@nox.session
def package(session: nox.Session) -> None:
    """Build the sdist and the wheel as a release would (``python -m build``) and check
    them (``twine check --strict``): a release is then one upload away. The wheel must
    carry the SPEC, the type markers and the console script."""
    session.install("build", "twine")
    for folder in ("build", "dist"):
        shutil.rmtree(folder, ignore_errors=True)
    session.run("python", "-m", "build", "--outdir", "dist")
    built = sorted(str(path) for path in Path("dist").iterdir())
    session.run("twine", "check", "--strict", *built)
    (wheel,) = (path for path in built if path.endswith(".whl"))
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        entry_points = next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
        scripts = archive.read(entry_points).decode()
    wanted = {"sessionstate/conformance/SPEC.md", "sessionstate/py.typed"}
    if not wanted <= names or "sessionstate = sessionstate.cli:main" not in scripts:
        session.error(f"{wheel} lacks {sorted(wanted - names)} or the sessionstate script")


@nox.session
def docs(session: nox.Session) -> None:
    """The API reference (Sphinx, from the docstrings), warnings as errors, into
    build/docs/html."""
    install(session, "docs")
    session.run(
        "sphinx-build", "-W", "--keep-going", "-b", "html", "-q", "docs/api", "build/docs/html"
    )


@nox.session
def coverage(session: nox.Session) -> None:
    """Branch coverage of reference/ by the unit tests; fails under 100 %."""
    install(session)
    session.run("coverage", "erase")
    session.run("coverage", "run", "-m", "pytest", "-q", "-p", "no:randomly", "tests/reference")
    session.run("coverage", "report")


@nox.session
def bench(session: nox.Session) -> None:
    """Hot-path ratios and suite throughput; rewrites BENCHMARKS.md and bench/scaling.png."""
    install(session, "test,bench")
    session.run("python", "bench/hotpaths.py", *session.posargs)
    session.run("python", "bench/suite_speed.py")
    session.run("python", "bench/reachability.py")
    session.run("python", "bench/threshold_reach.py")
    session.run("python", "bench/render.py")


@nox.session
def detection(session: nox.Session) -> None:
    """Every zoo bug over 10 random seeds at the default profile; table in BENCHMARKS.md."""
    install(session)
    session.run("python", "bench/detection.py", *session.posargs)
    session.run("python", "bench/render.py")


@nox.session
def mutation(session: nox.Session) -> None:
    """Mutation score of the conformance suite alone over reference/ (cosmic-ray, in place)."""
    session.install(TORCH)
    # Editable: cosmic-ray mutates reference/*.py in place, and the package-dir
    # mapping must send `import sessionstate.reference` to those very files. cosmic-ray comes
    # with the [test] extra. Its workers listen on 127.0.0.1 only; pass
    # `-- --listen-on-all-interfaces` to expose them (see bench/loopback.py).
    session.install("-e", ".[test]")
    session.run("python", "bench/mutation.py", *session.posargs)


@nox.session
def gpu(session: nox.Session) -> None:
    """Only the tests that need a real CUDA device (run where one is visible)."""
    session.install(os.environ.get("SESSIONSTATE_TORCH", "torch"))
    session.install(".[test]")
    session.run("pytest", "-m", "cuda", "-rs", *session.posargs)
