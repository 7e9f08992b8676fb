"""cubecl's autotune choices on Mesa's lavapipe, carried from one clone to the next.

    export DB OUT.xz     the autotune entries of a cubecl environment database, as a seed
    install SEED.xz DB   a fresh environment database from the seed (nothing when DB exists)
    report DB            how many kernels were tuned on this machine rather than taken from the seed

A seed's entries are marked as imported (cubecl's origin 1, as from one of its bundles), so a choice
tuned afresh on the machine may replace one, and `report` tells the two apart. cubecl checks every
entry against the kernel's current candidates, so a stale seed costs tuning time, never a wrong
kernel. Written with Python's standard library: the databases are SQLite files (cubecl's store,
turso, writes SQLite's format), and CI has Python anyway.
"""

import lzma
import os
import sqlite3
import sys
import tempfile

AUTOTUNE = "namespace like 'autotune/%'"
IMPORTED = 1


def export(database, out):
    src = sqlite3.connect(database)
    tables = [sql for (sql,) in src.execute("select sql from sqlite_master where type = 'table'")]
    meta = src.execute("select k, v from meta").fetchall()
    rows = src.execute(
        f"select namespace, key, value, {IMPORTED} from entries where {AUTOTUNE}"
    ).fetchall()
    if not rows:
        sys.exit(f"{database}: no autotune entries (did the wgpu tests run on lavapipe?)")
    with tempfile.TemporaryDirectory() as tmp:
        seed = os.path.join(tmp, "seed.db")
        dst = sqlite3.connect(seed)
        for sql in tables:
            dst.execute(sql)
        dst.executemany("insert into meta values (?, ?)", meta)
        dst.executemany("insert into entries values (?, ?, ?, ?)", rows)
        dst.commit()
        dst.execute("vacuum")
        # cubecl keeps its databases in write-ahead-log mode.
        dst.execute("pragma journal_mode = wal")
        dst.close()
        with open(seed, "rb") as f, lzma.open(out + ".tmp", "wb", preset=9) as z:
            z.write(f.read())
    os.replace(out + ".tmp", out)
    print(f"{len(rows)} autotune choices -> {out} ({os.path.getsize(out)} bytes)")


def install(seed, database):
    if os.path.exists(database):
        print(f"{database} exists: the autotune seed is not installed")
        return
    os.makedirs(os.path.dirname(database) or ".", exist_ok=True)
    with lzma.open(seed) as z:
        data = z.read()
    with open(database + ".tmp", "wb") as f:
        f.write(data)
    os.replace(database + ".tmp", database)


def report(database):
    n = sqlite3.connect(database).execute(
        f"select count(*) from entries where {AUTOTUNE} and origin != {IMPORTED}"
    ).fetchone()[0]
    hint = " (scripts/lavapipe-autotune-seed.sh refreshes the seed)" if n else ""
    print(f"{n} kernels tuned afresh on lavapipe{hint}")


COMMANDS = {"export": (export, 2), "install": (install, 2), "report": (report, 1)}

if __name__ == "__main__":
    command = COMMANDS.get(sys.argv[1] if len(sys.argv) > 1 else "")
    if command is None or len(sys.argv) != 2 + command[1]:
        sys.exit(__doc__)
    command[0](*sys.argv[2:])
