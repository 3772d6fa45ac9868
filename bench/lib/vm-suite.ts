/**
 * bench/lib/vm-suite: runs one test-vm suite for a benchmark, for what this kernel lacks (IPVS): the runner
 * (`test-vm/run.ts --suite NAME --param k=v ... --share-out DIR --timeout S`) in a child process, its
 * progress lines handed over as they come, and the file the suite wrote in its share read back.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { packageRoot } from '../../agent/src/config/paths.js';

export interface VmSuiteRun {
  readonly suite: string;
  /** The suite's --param values. */
  readonly params: Readonly<Record<string, string | number>>;
  readonly timeoutS: number;
  /** The file the suite writes in the run's share (read back as JSON). */
  readonly file: string;
  /** Each line the runner prints (test-vm's progress and the suite's own). */
  readonly onLine: (line: string) => void;
  /** The runner's process, while it runs (an interrupt kills it). */
  readonly onSpawn?: (p: ChildProcess | null) => void;
}

/** The suite's file as JSON, or why there is none (a sentence). */
export async function runVmSuite(o: VmSuiteRun): Promise<{ doc: unknown } | { why: string }> {
  const repo = packageRoot();
  const script = join(repo, 'test-vm', 'run.ts');
  if (!existsSync(script)) return { why: `${script} (the VM runner) is not here: run from a checkout of the repository` };
  const out = mkdtempSync('/tmp/nn-bench-vm-');
  try {
    const argv = ['--import', 'tsx', script, '--suite', o.suite, '--share-out', out, '--timeout', String(o.timeoutS),
      ...Object.entries(o.params).flatMap(([k, v]) => ['--param', `${k}=${v}`])];
    const code = await new Promise<number>((resolve) => {
      const p = spawn(process.execPath, argv, { cwd: repo, stdio: ['ignore', 'pipe', 'pipe'] });
      o.onSpawn?.(p);
      let buf = '';
      const onData = (d: Buffer) => {
        buf += d.toString();
        let i: number;
        while ((i = buf.indexOf('\n')) >= 0) {
          o.onLine(buf.slice(0, i));
          buf = buf.slice(i + 1);
        }
      };
      p.stdout!.on('data', onData);
      p.stderr!.on('data', onData);
      p.on('close', (c) => {
        o.onSpawn?.(null);
        resolve(c ?? 1);
      });
      p.on('error', () => resolve(127));
    });
    const file = join(out, o.suite, o.file);
    if (!existsSync(file)) return { why: `the VM run exited ${code} without results (test-vm/run.ts --suite ${o.suite}; its logs are kept under /tmp/nodenet-test-vm when it fails)` };
    return { doc: JSON.parse(readFileSync(file, 'utf8')) as unknown };
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
}
