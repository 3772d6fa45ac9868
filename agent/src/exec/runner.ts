/**
 * exec: the only way nodenet runs another program.
 *
 * argv arrays only, never a shell; input goes on stdin (iptables-restore,
 * nft -f -, ip -batch -). A command inside another network namespace runs
 * under `nsenter --net=PATH --` because `ip -n` takes names only.
 * Spawning costs 20-50 ms here: callers batch, and keep spawns off hot paths.
 */
import { execa } from 'execa';
import { ErrorCode, NodenetError } from '../errors/errors.js';

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

export class ExecaRunner implements Runner {
  async run(argv: readonly string[], opts: RunOptions = {}): Promise<RunResult> {
    const full = wrapNetns(argv, opts.netns);
    const [cmd, ...args] = full;
    if (!cmd) throw new NodenetError(ErrorCode.Exec, 'empty command');
    const timeoutMs = opts.timeoutMs ?? 120_000;
    const r = await execa(cmd, args, {
      input: opts.input ?? '',
      reject: false,
      timeout: timeoutMs,
      env: opts.env ?? {},
      stripFinalNewline: false,
    });
    const notFound = r.code === 'ENOENT';
    const signal = typeof r.signal === 'string' ? r.signal : undefined;
    const exitCode = typeof r.exitCode === 'number' ? r.exitCode : notFound ? 127 : 128 + 9;
    const res: RunResult = { stdout: String(r.stdout ?? ''), stderr: String(r.stderr ?? ''), exitCode, ...(signal ? { signal } : {}) };
    if (exitCode !== 0 || signal) {
      const msg = failureMessage(full, { exitCode, stderr: res.stderr, signal, timedOut: r.timedOut, notFound }, timeoutMs);
      if (!opts.allowFailure) throw new NodenetError(ErrorCode.Exec, msg, { details: res.stderr.slice(0, 4000) });
      // A caller that inspects failures still learns why from stderr.
      if (notFound || signal) return { ...res, stderr: res.stderr || `${msg}\n` };
    }
    return res;
  }
}
