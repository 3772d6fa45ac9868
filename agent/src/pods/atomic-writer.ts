/**
 * pods/atomic-writer: the kubelet's AtomicWriter (pkg/volume/util), which
 * projects a payload of files into a volume directory so that a reader
 * never sees half of an update.
 *
 * Layout of the target directory:
 *   ..2030_01_02_03_04_05.1234567890/   the data, one timestamped directory per version
 *   ..data -> ..2030_01_02_03_04_05.1234567890
 *   <key>  -> ..data/<key>               one symlink per top-level name of the payload
 * A write (only when a file's content differs or a path went away) makes a
 * new timestamped directory with the payload, adds the user-visible symlinks
 * of new names, points `..data_tmp` at the new directory and renames it over
 * `..data` (one atomic rename(2): the switch), then removes the symlinks of
 * names no longer in the payload and the old directory. Names starting with
 * `..` are reserved. A bind mount of the directory (a container's volume)
 * sees the new version at once; a bind mount of one file (subPath) keeps the
 * version it was made from, as upstream.
 */
import { chmodSync, lstatSync, mkdirSync, readFileSync, readdirSync, readlinkSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { volumePathProblem } from './pod-spec.js';
import type { Payload } from './volumes.js';

const DATA = '..data';
const DATA_TMP = '..data_tmp';

const pad = (n: number, w = 2) => String(n).padStart(w, '0');

/** `..2006_01_02_15_04_05.` of time `ms` (UTC), Go's time format the kubelet uses. */
export function timestampPrefix(ms: number): string {
  const d = new Date(ms);
  return `..${d.getUTCFullYear()}_${pad(d.getUTCMonth() + 1)}_${pad(d.getUTCDate())}_${pad(d.getUTCHours())}_${pad(d.getUTCMinutes())}_${pad(d.getUTCSeconds())}.`;
}

function exists(p: string): boolean {
  try {
    lstatSync(p);
    return true;
  } catch {
    return false;
  }
}

/** Every path under dir, relative, files and directories alike. */
function walk(dir: string, rel = ''): string[] {
  const out: string[] = [];
  for (const e of readdirSync(join(dir, rel), { withFileTypes: true })) {
    const r = rel ? `${rel}/${e.name}` : e.name;
    out.push(r);
    if (e.isDirectory()) out.push(...walk(dir, r));
  }
  return out;
}

export class AtomicWriter {
  constructor(private readonly dir: string, private readonly o: { readonly now: () => number; readonly random?: () => number }) {}

  /** Projects `payload`; returns whether anything was written. @throws Error on a bad path or a failed write */
  write(payload: Payload): boolean {
    const clean = new Map<string, { data: Buffer; mode: number }>();
    for (const [p, f] of payload) {
      const bad = volumePathProblem(p);
      if (bad) throw new Error(`invalid path ${JSON.stringify(p)}: ${bad}`);
      clean.set(p.split('/').filter((x) => x && x !== '.').join('/'), f);
    }
    mkdirSync(this.dir, { recursive: true, mode: 0o755 });
    const dataPath = join(this.dir, DATA);
    let oldTs = '';
    try { oldTs = readlinkSync(dataPath); } catch { /* no version yet */ }
    let toRemove: string[] = [];
    if (oldTs) {
      const oldPath = join(this.dir, oldTs);
      const wanted = new Set<string>();
      for (const p of clean.keys()) {
        const parts = p.split('/');
        for (let i = 1; i <= parts.length; i++) wanted.add(parts.slice(0, i).join('/'));
      }
      let current: string[] = [];
      try { current = walk(oldPath); } catch { /* the old version is gone: rewrite */ }
      toRemove = current.filter((p) => !wanted.has(p));
      const differs = [...clean].some(([p, f]) => {
        try { return !readFileSync(join(oldPath, p)).equals(f.data); } catch { return true; }
      });
      if (!differs && !toRemove.length) return false;
    }
    const tsName = this.newTimestampDir();
    const tsDir = join(this.dir, tsName);
    try {
      for (const [p, f] of clean) {
        const full = join(tsDir, p);
        mkdirSync(dirname(full), { recursive: true, mode: 0o755 });
        writeFileSync(full, f.data, { mode: f.mode });
        chmodSync(full, f.mode);
      }
      for (const p of clean.keys()) {
        const top = p.split('/')[0]!;
        if (!exists(join(this.dir, top))) symlinkSync(join(DATA, top), join(this.dir, top));
      }
      const tmp = join(this.dir, DATA_TMP);
      rmSync(tmp, { force: true });
      symlinkSync(tsName, tmp);
      renameSync(tmp, dataPath);
    } catch (e) {
      rmSync(join(this.dir, DATA_TMP), { force: true });
      rmSync(tsDir, { recursive: true, force: true });
      throw e;
    }
    for (const p of toRemove) if (!p.includes('/')) rmSync(join(this.dir, p), { force: true, recursive: false });
    if (oldTs && oldTs !== tsName) rmSync(join(this.dir, oldTs), { recursive: true, force: true });
    return true;
  }

  private newTimestampDir(): string {
    const prefix = timestampPrefix(this.o.now());
    for (let i = 0; ; i++) {
      const name = `${prefix}${Math.floor((this.o.random ?? Math.random)() * 4_294_967_296)}`;
      try {
        mkdirSync(join(this.dir, name), { mode: 0o755 });
        chmodSync(join(this.dir, name), 0o755);
        return name;
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== 'EEXIST' || i > 100) throw e;
      }
    }
  }
}
