"""Run cosmic-ray over reference/ and write MUTATION.md.

Survivors are listed with their classification from bench/mutation-notes.toml
(``equivalent`` with the reason, or ``gap`` with the clause/test that now
closes it); an unclassified survivor is listed as such.
``python bench/mutation.py [--reuse] [--workers N] [--limit N]`` (``--reuse`` keeps an
existing session database; ``--limit N`` runs only N mutants, evenly spaced over all of them in
a fixed order, in a session of its own, and prints their outcomes instead of rewriting
MUTATION.md: a quick check of the session itself, e.g. before and after changing it).
cosmic-ray mutates files in place, so each of the N workers (default: one per core) is a
cosmic-ray HTTP worker in its own copy of the tree; ``mutation_test`` makes the suite import
``sessionstate`` from that copy. The workers listen on 127.0.0.1 only (the rule in
bench/loopback.py): each runs whatever job it is sent, unauthenticated.
``--listen-on-all-interfaces`` binds them to every interface instead, for whoever means to
expose them.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import json
import os
import shutil
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import loopback
import tomllib

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
SESSION = HERE / "mutation.sqlite"
TIMING = HERE / "results-mutation.json"


def cosmic(*args: str) -> None:
    subprocess.run(["cosmic-ray", *args], cwd=ROOT, check=True)


def _annotation_spans(path: Path) -> list[tuple[tuple[int, int], tuple[int, int]]]:
    spans = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        found: list[ast.expr] = []
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            a = node.args
            params = [*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg]
            found += [p.annotation for p in params if p is not None and p.annotation is not None]
            found += [node.returns] if node.returns is not None else []
        elif isinstance(node, ast.AnnAssign):
            found.append(node.annotation)
        spans += [
            ((n.lineno, n.col_offset), (n.end_lineno or 0, n.end_col_offset or 0)) for n in found
        ]
    return spans


def skip_annotation_mutants(session: Path = SESSION) -> int:
    """Mark mutants inside type annotations as skipped: every reference module has
    ``from __future__ import annotations``, so annotations are never evaluated and
    mutating them (``int | None`` -> ``int & None``) cannot change behaviour."""
    from cosmic_ray.work_db import use_db
    from cosmic_ray.work_item import WorkerOutcome, WorkResult

    skipped = 0
    spans: dict[Path, list[tuple[tuple[int, int], tuple[int, int]]]] = {}
    with use_db(str(session)) as db:
        for item in list(db.work_items):
            for mutation in item.mutations:
                path = ROOT / mutation.module_path
                ranges = spans.setdefault(path, _annotation_spans(path))
                start, end = tuple(mutation.start_pos), tuple(mutation.end_pos)
                if any(lo <= start and end <= hi for lo, hi in ranges):
                    db.set_result(item.job_id, WorkResult(worker_outcome=WorkerOutcome.SKIPPED))
                    skipped += 1
                    break
    return skipped


def limit_mutants(session: Path, limit: int) -> int:
    """Mark all pending mutants but ``limit`` of them skipped. Those kept are evenly spaced over
    the pending ones sorted by (module, operator, occurrence), so the same tree keeps the same
    mutants run after run. Returns how many were skipped."""
    from cosmic_ray.work_db import use_db
    from cosmic_ray.work_item import WorkerOutcome, WorkResult

    with use_db(str(session)) as db:
        pending = sorted(
            db.pending_work_items,
            key=lambda item: [
                (str(m.module_path), m.operator_name, m.occurrence) for m in item.mutations
            ],
        )
        keep = {pending[i * len(pending) // limit].job_id for i in range(min(limit, len(pending)))}
        dropped = [item.job_id for item in pending if item.job_id not in keep]
        if dropped:
            db.set_multiple_results(dropped, WorkResult(worker_outcome=WorkerOutcome.SKIPPED))
    return len(dropped)


def _code(text: str) -> str:
    """A source line without its inline comment (``  # LRU-3: ...``), stripped: clause tags
    and comments added to the reference must not unmatch a note."""
    return text.split("  # ", 1)[0].strip()


def _hunk(diff: str) -> list[str]:
    """The lines of a mutant's one hunk, after its ``@@`` header."""
    return diff.split("\n@@", 1)[1].splitlines()[1:]


def mutated_line(diff: str) -> str:
    """The original source a mutant changed, as notes name it: its removed line(s), stripped;
    for a removed decorator, followed by the ``def`` line it decorated."""
    lines = _hunk(diff)
    removed = [i for i, text in enumerate(lines) if text.startswith("-") and _code(text[1:])]
    found = " ".join(_code(lines[i][1:]) for i in removed)
    if found.startswith("@"):
        after = (_code(text[1:]) for text in lines[removed[-1] + 1 :])
        found += " " + next((t for t in after if t.startswith(("def ", "async def "))), "")
    return found.strip()


def mutant_line(diff: str) -> str:
    """What the mutant put in place of ``mutated_line`` (its added lines, stripped)."""
    return " ".join(_code(t[1:]) for t in _hunk(diff) if t.startswith("+") and _code(t[1:]))


def mutants(session: Path = SESSION) -> list[dict[str, str]]:
    """Every mutant that ran: module file name, operator, occurrence, original line, outcome,
    diff."""
    con = sqlite3.connect(session)
    rows = con.execute(
        "SELECT m.module_path, m.operator_name, m.occurrence, r.test_outcome, r.diff "
        "FROM mutation_specs m JOIN work_results r ON m.job_id = r.job_id "
        "WHERE r.worker_outcome != 'SKIPPED'"
    ).fetchall()
    return [
        {"module": Path(module).name, "operator": operator.split("/")[-1],
         "occurrence": str(occurrence), "line": mutated_line(diff), "into": mutant_line(diff),
         "outcome": str(outcome), "diff": diff}
        for module, operator, occurrence, outcome, diff in rows
    ]  # fmt: skip


def matches(note: dict[str, Any], mutant: dict[str, str]) -> bool:
    lines = note.get("lines", [note.get("line")])
    return (
        note["module"] == mutant["module"]
        and mutant["line"] in lines
        and mutant["operator"] in note["operators"]
        and mutant["into"] in note.get("into", [mutant["into"]])
    )


def write_report(runs: list[dict[str, str]], minutes: float | None) -> None:
    notes = tomllib.loads((HERE / "mutation-notes.toml").read_text(encoding="utf-8"))
    explained = notes.get("survivor", [])
    counts: dict[str, int] = {}
    for mutant in runs:
        counts[mutant["outcome"]] = counts.get(mutant["outcome"], 0) + 1
    survivors = [m for m in runs if m["outcome"] == "SURVIVED"]
    note_of = {id(m): next((n for n in explained if matches(n, m)), None) for m in survivors}
    equivalent = sum(1 for n in note_of.values() if n and n["kind"] == "equivalent")
    total, killed = len(runs), counts.get("KILLED", 0)
    if minutes is None and TIMING.exists():
        minutes = json.loads(TIMING.read_text(encoding="utf-8"))["exec_minutes"]
    timing = f" The last `exec` took {minutes:.1f} min." if minutes is not None else ""
    lines = [
        "# Mutation score", "",
        "cosmic-ray over `reference/`, killed by the conformance suite alone (profile `mutation`,",
        "only the clause groups that specify the mutated module; mutants inside type annotations",
        f"are skipped). Regenerate: `nox -s mutation` (2 workers on a 2-core machine).{timing}", "",
        f"- **{killed}/{total} killed ({100 * killed / max(total, 1):.1f} %)**; outcomes: "
        f"{json.dumps(counts)}",
        f"- {equivalent} survivors are equivalent mutants (reasons below); excluding them, "
        f"**{killed}/{total - equivalent} killed "
        f"({100 * killed / max(total - equivalent, 1):.1f} %)**.", "",
        "## Survivors", "",
    ]  # fmt: skip
    by_note: dict[object, list[dict[str, str]]] = {}
    for mutant in survivors:
        note = note_of[id(mutant)]
        by_note.setdefault(id(note) if note else (mutant["module"], mutant["line"]), []).append(
            mutant
        )
    for group in sorted(by_note.values(), key=lambda g: (g[0]["module"], g[0]["line"])):
        note = note_of[id(group[0])]
        closed = any(matches(n, group[0]) for n in notes.get("closed", []))
        kind = note["kind"] if note else "CLOSED GAP SURVIVES" if closed else "UNCLASSIFIED"
        operators = ", ".join(sorted({m["operator"] for m in group}))
        lines += [f"### {group[0]['module']}: `{group[0]['line']}` ({len(group)}): {kind}", "",
                  f"Operators: {operators}.", "",
                  note["reason"] if note else "No note in bench/mutation-notes.toml yet.", ""]  # fmt: skip
    lines += ["## Gaps closed", "",
              "Mutants that survived an earlier run, and the clause and test that kill them now.", "",
              "| module | original line | operators | now | closed by |", "|---|---|---|---|---|"]  # fmt: skip
    for note in notes.get("closed", []):
        now = sorted({m["outcome"] for m in runs if matches(note, m)}) or ["not generated"]
        lines.append(f"| {note['module']} | `{note.get('line') or ' / '.join(note['lines'])}` "
                     f"| {', '.join(note['operators'])} | {', '.join(now)} | {note['closed_by']} |")  # fmt: skip
    (ROOT / "MUTATION.md").write_text("\n".join(lines) + "\n", encoding="utf-8")


def copy_tree(dest: Path) -> None:
    """Copy the working tree (tracked and untracked, not ignored files) as a fresh git
    repository, so that ``mutation_test`` can ``git diff`` its way to the mutated module."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT, capture_output=True, check=True,
    ).stdout.decode().split("\0")  # fmt: skip
    for name in filter(None, listed):
        source = ROOT / name
        if source.is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, dest / name)
    git = ["git", "-c", "user.name=mutation", "-c", "user.email=mutation@localhost"]
    for step in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "pristine"]):
        subprocess.run([*git, *step], cwd=dest, check=True)


def _free_port() -> int:
    with loopback.listen() as probe:
        return int(probe.getsockname()[1])


def serve_worker(port: int, *, all_interfaces: bool = False) -> None:
    """Serve as one cosmic-ray HTTP worker for the tree in the current directory, on
    ``loopback.bind_host(all_interfaces)`` and ``port``.

    ``cosmic-ray http-worker --port`` binds every interface and has no host option, and its
    ``--path`` (a Unix socket) is out of reach: the HTTP distributor POSTs to its worker URLs
    with aiohttp's default TCP connector. So this runs cosmic-ray's own worker app (its
    mutate-and-test handler) with the host the project's rule gives."""
    from aiohttp import web
    from cosmic_ray.distribution.http import handle_mutate_and_test

    app = web.Application()
    app.add_routes([web.post("/", handle_mutate_and_test)])
    web.run_app(app, host=loopback.bind_host(all_interfaces), port=port)


@contextlib.contextmanager
def http_workers(count: int, *, all_interfaces: bool = False) -> Iterator[list[str]]:
    """Start ``count`` cosmic-ray HTTP workers (``serve_worker``), each in its own copy of the
    tree, listening on 127.0.0.1 unless ``all_interfaces``; yields their URLs."""
    with tempfile.TemporaryDirectory(prefix="sessionstate-mutation-") as scratch:
        workers, urls = [], []
        wide = [loopback.FLAG] if all_interfaces else []
        try:
            for index in range(count):
                tree = Path(scratch) / f"worker{index}"
                copy_tree(tree)
                port = _free_port()
                command = [sys.executable, str(HERE / "mutation.py"), "--worker-port", str(port)]
                workers.append(subprocess.Popen([*command, *wide], cwd=tree))
                urls.append(f"http://{loopback.LOOPBACK}:{port}")
            for worker, url in zip(workers, urls, strict=True):
                _wait_for(url, worker)
            yield urls
        finally:
            for worker in workers:
                worker.terminate()
                worker.wait()


def _wait_for(url: str, worker: subprocess.Popen[bytes], seconds: float = 60.0) -> None:
    host, port = url.removeprefix("http://").split(":")
    deadline = time.monotonic() + seconds
    while True:
        try:
            socket.create_connection((host, int(port)), timeout=1).close()
            return
        except OSError:
            if worker.poll() is not None:
                message = f"the worker for {url} exited with {worker.returncode}"
                raise RuntimeError(message) from None
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def http_config(urls: list[str], dest: Path) -> Path:
    """The committed config with the HTTP distributor pointed at ``urls``."""
    base = (HERE / "cosmic-ray.toml").read_text(encoding="utf-8")
    head, _, _ = base.partition("[cosmic-ray.distributor]")
    listed = ", ".join(json.dumps(url) for url in urls)
    text = f'{head}[cosmic-ray.distributor]\nname = "http"\n\n'
    text += f"[cosmic-ray.distributor.http]\nworker-urls = [{listed}]\n"
    dest.write_text(text, encoding="utf-8")
    return dest


def run_session(
    session: Path,
    workers: int,
    *,
    fresh: bool,
    limit: int | None = None,
    all_interfaces: bool = False,
) -> float:
    """Initialise ``session`` when ``fresh``, then ``exec`` it; returns the minutes ``exec``
    took."""
    config = str(HERE / "cosmic-ray.toml")
    if fresh:
        session.unlink(missing_ok=True)
        cosmic("init", config, str(session))
        print(f"skipped {skip_annotation_mutants(session)} mutants inside annotations")
        if limit is not None:
            print(f"skipped {limit_mutants(session, limit)} mutants beyond --limit {limit}")
        cosmic("baseline", config)
    started = time.monotonic()
    if workers <= 1:
        cosmic("exec", config, str(session))
    else:
        with (
            http_workers(workers, all_interfaces=all_interfaces) as urls,
            tempfile.TemporaryDirectory() as scratch,
        ):
            cosmic("exec", str(http_config(urls, Path(scratch) / "http.toml")), str(session))
    minutes = (time.monotonic() - started) / 60
    print(f"exec took {minutes:.1f} min with {workers} worker(s)")
    return minutes


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--reuse", action="store_true")
    parser.add_argument("--report-only", action="store_true", help="rewrite MUTATION.md only")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument(
        "--limit", type=int, metavar="N",
        help="run only N mutants (evenly spaced, fixed order) in a session of their own and "
        "print their outcomes; MUTATION.md and the timing file are left alone",
    )  # fmt: skip
    loopback.add_flag(parser)
    parser.add_argument(
        "--worker-port", type=int, metavar="PORT",
        help="serve as one HTTP worker for the tree in the current directory (how the session "
        "starts its workers)",
    )  # fmt: skip
    args = parser.parse_args()
    if args.worker_port is not None:
        serve_worker(args.worker_port, all_interfaces=args.listen_on_all_interfaces)
        return 0
    if args.limit is not None and (args.limit < 1 or args.reuse or args.report_only):
        parser.error("--limit takes N >= 1 and goes with neither --reuse nor --report-only")
    if args.report_only:
        write_report(mutants(), None)
        return 0
    if args.limit is not None:
        with tempfile.TemporaryDirectory(prefix="sessionstate-mutation-limit-") as scratch:
            session = Path(scratch) / "mutation.sqlite"
            run_session(
                session, args.workers, fresh=True, limit=args.limit,
                all_interfaces=args.listen_on_all_interfaces,
            )  # fmt: skip
            for mutant in mutants(session):
                print(mutant["module"], mutant["operator"], mutant["occurrence"],
                      mutant["outcome"], sep="\t")  # fmt: skip
        return 0
    fresh = not (args.reuse and SESSION.exists())
    minutes = run_session(
        SESSION, args.workers, fresh=fresh, all_interfaces=args.listen_on_all_interfaces
    )
    timing = {"exec_minutes": round(minutes, 2), "workers": args.workers, "cpus": os.cpu_count()}
    TIMING.write_text(json.dumps(timing) + "\n", encoding="utf-8")
    write_report(mutants(), minutes)
    return 0


if __name__ == "__main__":
    sys.exit(main())
