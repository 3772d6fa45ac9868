/**
 * exec: the only way nodenet runs another program.
 *
 * argv arrays only, never a shell; input goes on stdin (iptables-restore,
 * nft -f -, ip -batch -). A command inside another network namespace runs
 * under `nsenter --net=PATH --` because `ip -n` takes names only.
 * Spawning costs 20-50 ms here: callers batch, and keep spawns off hot paths.
 */
import { spawn } from 'node:child_process';
import { constants as osConstants } from 'node:os';
import { ErrorCode, NodenetError } from '../../../lib/errors/errors.js';

export interface RunOptions {
  /** Text written to the command's stdin. */
  input?: string;
  /** Run inside this network namespace (a path such as /var/run/netns/X). */
  netns?: string;
  /** Do not throw on a non-zero exit; the caller inspects exitCode. */
  allowFailure?: boolean;
  timeoutMs?: number;
  env?: Record<string, string>;
}

export interface RunResult {
  stdout: string;
  stderr: string;
  /** 127 when the command was not found; 128 + n when killed by signal n (as a shell reports). */
  exitCode: number;
  /** The signal that killed it, if one did. */
  signal?: string;
}

export interface Runner {
  /** Runs argv[0] with argv[1..]. Throws NodenetError(NN_ERR_EXEC) on failure unless allowFailure. */
  run(argv: readonly string[], opts?: RunOptions): Promise<RunResult>;
}

export function wrapNetns(argv: readonly string[], netns?: string): string[] {
  return netns ? ['nsenter', `--net=${netns}`, '--', ...argv] : [...argv];
}

/** Why a command failed, in words: not found, killed by a signal, timed out, or its exit code and stderr. Pure. */
export function failureMessage(argv: readonly string[], r: { exitCode: number; stderr: string; signal?: string | undefined; timedOut?: boolean; notFound?: boolean }, timeoutMs?: number): string {
  const cmd = argv.join(' ');
  const prog = argv[0] === 'nsenter' ? (argv[argv.indexOf('--') + 1] ?? 'nsenter') : (argv[0] ?? '');
  if (r.notFound || (r.exitCode === 127 && /failed to execute|No such file or directory|not found/.test(r.stderr))) {
    return `${prog}: command not found (${cmd}); install it (nodenet's preflight installs iproute2, iptables, nftables, ipset, conntrack)`;
  }
  if (r.timedOut) return `${cmd} timed out after ${timeoutMs ?? '?'} ms and was killed`;
  if (r.signal) return `${cmd} was killed by ${r.signal}${r.stderr.trim() ? `: ${r.stderr.trim().slice(0, 2000)}` : ''}`;
  return `${cmd} exited ${r.exitCode}: ${r.stderr.trim().slice(0, 2000)}`;
}

/**
 * The runner on node's own child_process: execa spent about 7.5 ms of the agent's CPU per spawn here
 * (its stream and abort plumbing) against 2-3 ms for a bare spawn, and 15 times that in an emulated VM,
 * where it was a quarter of the agent's start.
 */
export class SpawnRunner implements Runner {
  run(argv: readonly string[], opts: RunOptions = {}): Promise<RunResult> {
    const full = wrapNetns(argv, opts.netns);
    const [cmd, ...args] = full;
    if (!cmd) return Promise.reject(new NodenetError(ErrorCode.Exec, 'empty command'));
    const timeoutMs = opts.timeoutMs ?? 120_000;
    const input = opts.input ?? '';
    return new Promise((resolve, reject) => {
      let stdout = '';
      let stderr = '';
      let timedOut = false;
      let notFound = false;
      let settled = false;
      const child = spawn(cmd, args, {
        stdio: [input ? 'pipe' : 'ignore', 'pipe', 'pipe'],
        env: opts.env ? { ...process.env, ...opts.env } : process.env,
      });
      const timer = setTimeout(() => {
        timedOut = true;
        child.kill('SIGKILL');
      }, timeoutMs);
      child.stdout!.setEncoding('utf8');
      child.stderr!.setEncoding('utf8');
      child.stdout!.on('data', (d: string) => (stdout += d));
      child.stderr!.on('data', (d: string) => (stderr += d));
      if (input) {
        // A command that exits without reading all of its input (EPIPE) is judged by its exit status.
        child.stdin!.on('error', () => undefined);
        child.stdin!.end(input);
      }
      const finish = (code: number | null, sig: NodeJS.Signals | null): void => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        const signal = sig ?? undefined;
        const exitCode = typeof code === 'number' ? code : notFound ? 127 : signal ? 128 + (osConstants.signals[signal] ?? 9) : 128 + 9;
        const res: RunResult = { stdout, stderr, exitCode, ...(signal ? { signal } : {}) };
        if (exitCode === 0 && !signal) return resolve(res);
        const msg = failureMessage(full, { exitCode, stderr, signal, timedOut, notFound }, timeoutMs);
        if (!opts.allowFailure) return reject(new NodenetError(ErrorCode.Exec, msg, { details: stderr.slice(0, 4000) }));
        // A caller that inspects failures still learns why from stderr.
        resolve(notFound || signal ? { ...res, stderr: stderr || `${msg}\n` } : res);
      };
      child.on('error', (e: NodeJS.ErrnoException) => {
        if (e.code === 'ENOENT') notFound = true;
        else stderr += `${e.message}\n`;
        // spawn failed: no 'close' follows when the process never started.
        if (child.pid === undefined) finish(null, null);
      });
      child.on('close', finish);
    });
  }
}
