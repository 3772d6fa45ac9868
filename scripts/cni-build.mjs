// The nodenet-cni shim, a native executable built from cni/*.c: scripts/build.mjs writes dist/nodenet-cni with
// it, and the tests and benches that need their own copy build it the same way.
//
// One cc invocation over every .c file of cni/ (no library but libc, no build system: a dozen files), -O2
// with -Wall -Wextra. The binary is written under a temporary name and renamed into place, so a process
// that runs the shim while it is rebuilt (a test, a lab node) sees the old file or the new one, never half
// of one.
import { spawnSync } from 'node:child_process';
import { readdirSync, renameSync, rmSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';

const root = new URL('..', import.meta.url).pathname;
export const CNI_DIR = join(root, 'cni');

/** The shim's C sources and headers, absolute paths, sorted. */
export function shimSources() {
  return readdirSync(CNI_DIR).filter((f) => /\.[ch]$/.test(f)).sort().map((f) => join(CNI_DIR, f));
}

/** The compiler's command line for `outfile`. */
export function shimCompileArgs(outfile) {
  return ['-O2', '-Wall', '-Wextra', '-o', outfile, ...shimSources().filter((f) => f.endsWith('.c'))];
}

/** Builds the shim into `outfile` (mode 0755, atomically). Returns what the compiler printed (warnings); throws if it fails. */
export function buildShim(outfile) {
  const tmp = join(dirname(outfile), `.nodenet-cni.${process.pid}.tmp`);
  const r = spawnSync('cc', shimCompileArgs(tmp), { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  if (r.error || r.status !== 0) {
    rmSync(tmp, { force: true });
    throw new Error(`cc ${shimCompileArgs(outfile).join(' ')}: ${r.error?.message ?? `exit ${r.status}`}\n${r.stdout}${r.stderr}`);
  }
  renameSync(tmp, outfile);
  return `${r.stdout}${r.stderr}`;
}

/** True when `outfile` is missing or older than one of the sources. */
export function shimStale(outfile) {
  let built;
  try {
    built = statSync(outfile).mtimeMs;
  } catch {
    return true;
  }
  return shimSources().some((f) => statSync(f).mtimeMs > built);
}
