/**
 * The process runtime (root: pause holders with their own namespaces,
 * containers through nsenter under the shell supervisor) against the
 * PodRuntime contract that the kubelet's fake keeps too (runtime.contract.ts).
 */
import t from 'tap';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { listSandboxes } from '../netns/pause-holder.js';
import { childPids } from '../netns/proc.js';
import { waitFor } from '../testing/wait.js';
import { runtimeContract } from './runtime.contract.js';
import { ProcessPodRuntime } from './runtime.js';

const tag = `nn-rt-${process.pid}`;
const runDir = mkdtempSync(`/tmp/${tag}-run-`);
const binDir = mkdtempSync(`/tmp/${tag}-bin-`);
const pauseBin = join(binDir, 'nodenet-pause');
execFileSync('cc', ['-O2', '-Wall', '-Werror', '-o', pauseBin, new URL('../netns/pause.c', import.meta.url).pathname]);

const comm = (pid: number): string => {
  try { return readFileSync(`/proc/${pid}/comm`, 'utf8').trim(); } catch { return ''; }
};

t.teardown(async () => {
  // Whatever a failed case left: its sandboxes (and with them their runs).
  for (const s of listSandboxes(runDir)) await s.stop({ graceMs: 200 });
  rmSync(runDir, { recursive: true, force: true });
  rmSync(binDir, { recursive: true, force: true });
});

let n = 0;
runtimeContract(t, () => {
  const runtime = new ProcessPodRuntime({ runDir, pauseBin });
  return {
    runtime,
    uid: (name) => `${tag}-${name}-${n++}`,
    gone: (r) => waitFor(() => !runtime.running(r), 'the run ended', { timeoutMs: 10_000, intervalMs: 20 }),
    commandRuns: (r) => waitFor(() => childPids(r.pid).some((c) => comm(c) === 'sleep'), 'the command runs', { timeoutMs: 10_000, intervalMs: 5 }),
  };
});
