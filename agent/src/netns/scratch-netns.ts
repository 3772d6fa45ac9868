/**
 * netns/scratch-netns: throwaway named network namespaces for root tests
 * (`*.priv.test.ts`) only. Names are `nn-nl-<pid>-<tag>`; each is removed in
 * the test's teardown, after killing whatever still runs inside it (a process
 * started with `ip netns exec` survives `ip netns del`).
 *
 * Spawns `ip` freely: test code, not the agent's hot path.
 */
import { execFileSync } from 'node:child_process';
import { toNetnsPath, type NetnsPath } from './netns.js';

export interface ScratchNetns {
  name: string;
  path: NetnsPath;
  /** Runs argv inside the namespace; returns stdout. Throws on a non-zero exit. */
  exec(argv: readonly string[]): string;
  /** Like exec but returns the exit code instead of throwing. */
  tryExec(argv: readonly string[]): { code: number; stdout: string; stderr: string };
}

interface Teardown {
  teardown(fn: () => void | Promise<void>): void;
}

export function scratchName(tag: string): string {
  return `nn-nl-${process.pid}-${tag}`;
}

export function makeScratchNetns(t: Teardown, tag: string): ScratchNetns {
  const name = scratchName(tag);
  execFileSync('ip', ['netns', 'add', name]);
  t.teardown(() => removeNetns(name));
  execFileSync('ip', ['-n', name, 'link', 'set', 'lo', 'up']);
  const exec = (argv: readonly string[]): string =>
    execFileSync('ip', ['netns', 'exec', name, ...argv], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  const tryExec = (argv: readonly string[]): { code: number; stdout: string; stderr: string } => {
    try {
      return { code: 0, stdout: exec(argv), stderr: '' };
    } catch (e) {
      const err = e as { status?: number | null; stdout?: string; stderr?: string };
      return { code: err.status ?? -1, stdout: String(err.stdout ?? ''), stderr: String(err.stderr ?? '') };
    }
  };
  return { name, path: toNetnsPath(`/run/netns/${name}`), exec, tryExec };
}

export function removeNetns(name: string): void {
  try {
    const pids = execFileSync('ip', ['netns', 'pids', name], { encoding: 'utf8' }).split(/\s+/).filter(Boolean);
    for (const p of pids) {
      try { process.kill(Number(p), 'SIGKILL'); } catch { /* already gone */ }
    }
  } catch { /* namespace already gone */ }
  try {
    execFileSync('ip', ['netns', 'del', name], { stdio: 'ignore' });
  } catch { /* already gone */ }
}

/** A fingerprint of the root namespace's links and routes, to prove a test left them alone. */
export function rootNetFingerprint(): string {
  const links = execFileSync('ip', ['-br', 'link'], { encoding: 'utf8' });
  const routes = execFileSync('ip', ['route', 'show', 'table', 'all'], { encoding: 'utf8' });
  return `${links}\n${routes}`;
}
