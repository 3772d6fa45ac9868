/**
 * Test helpers for the native nodenet-cni shim (cni/*.c): build it as
 * scripts/build.mjs does, into the test's own temp dir (so a concurrent
 * `npm run build` or another test using dist/ never sees a half-written
 * file), and run it the way a container runtime does: CNI_* in the
 * environment, the config on stdin, exit code and stdout read back.
 *
 * NODENET_CNI_VALGRIND=1 runs every invocation under valgrind (memcheck,
 * definite leaks counted as errors); an error makes the shim exit 97, which
 * no test expects.
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { buildShim } from '../scripts/cni-build.mjs';

export interface ShimRun {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly stdout: string;
  readonly stderr: string;
  readonly stdoutBytes: Buffer;
}

/** Builds the shim into `dir`; returns its path and what the compiler printed (nothing, when the code is -Wall -Wextra clean). */
export function buildTestShim(dir: string): { bin: string; warnings: string } {
  const bin = join(dir, 'nodenet-cni');
  const warnings = buildShim(bin);
  return { bin, warnings };
}

const VALGRIND = ['/usr/bin/valgrind', '-q', '--error-exitcode=97', '--leak-check=full', '--errors-for-leak-kinds=definite', '--show-leak-kinds=definite'];

/**
 * Runs the shim `bin` with exactly `env` (no PATH unless given: the shim needs no node and no other program),
 * writing `stdin` and closing it. `wrapper`: a command that sets something up and then execs its arguments
 * (the shim, under valgrind when asked).
 */
export function runShim(bin: string, env: Record<string, string>, stdin: string | Buffer = '', wrapper: readonly string[] = []): Promise<ShimRun> {
  const [cmd, ...args] = [...wrapper, ...(process.env['NODENET_CNI_VALGRIND'] === '1' ? VALGRIND : []), bin];
  return new Promise((resolve, reject) => {
    const child = spawn(cmd!, args, { env, stdio: ['pipe', 'pipe', 'pipe'] });
    const out: Buffer[] = [];
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => out.push(d));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('close', (code, signal) => {
      const stdoutBytes = Buffer.concat(out);
      resolve({ code, signal, stdout: stdoutBytes.toString(), stderr, stdoutBytes });
    });
    child.stdin.on('error', () => {}); // VERSION and early errors exit without reading stdin
    child.stdin.end(stdin);
  });
}
