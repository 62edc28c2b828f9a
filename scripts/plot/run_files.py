"""Shared by the plot scripts: the conventions' exit codes, one way to fail with them, and the records of a
run directory's metrics.jsonl."""
import json
import pathlib
import sys

EX_DATAERR, EX_NOINPUT, EX_IOERR = 65, 66, 74


def fail(code, message):
    """Prints 'SCRIPT: message' on stderr and exits with `code`."""
    print(f"{pathlib.Path(sys.argv[0]).name}: {message}", file=sys.stderr)
    sys.exit(code)


def metrics_records(run: pathlib.Path):
    """Yields (path, line number, record) for each non-blank line of RUN/metrics.jsonl: exit 66 when the file is
    absent, 65 for a line that is not a JSON object."""
    path = run / "metrics.jsonl"
    if not path.is_file():
        fail(EX_NOINPUT, f"{path} not found" + ("" if run.is_dir() else f" ({run} is not a directory)"))
    with path.open() as f:
        for lineno, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except json.JSONDecodeError as e:
                fail(EX_DATAERR, f"{path}:{lineno}: not a JSON object ({e})")
            if not isinstance(rec, dict):
                fail(EX_DATAERR, f"{path}:{lineno}: not a JSON object")
            yield path, lineno, rec
