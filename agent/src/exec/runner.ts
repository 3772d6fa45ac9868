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
  exitCode: number;
}

export interface Runner {
  /** Runs argv[0] with argv[1..]. Throws NodenetError(NN_ERR_EXEC) on failure unless allowFailure. */
  run(argv: readonly string[], opts?: RunOptions): Promise<RunResult>;
}

export function wrapNetns(argv: readonly string[], netns?: string): string[] {
  return netns ? ['nsenter', `--net=${netns}`, '--', ...argv] : [...argv];
}

export class ExecaRunner implements Runner {
  async run(argv: readonly string[], opts: RunOptions = {}): Promise<RunResult> {
    const full = wrapNetns(argv, opts.netns);
    const [cmd, ...args] = full;
    if (!cmd) throw new NodenetError(ErrorCode.Exec, 'empty command');
    const r = await execa(cmd, args, {
      input: opts.input ?? '',
      reject: false,
      timeout: opts.timeoutMs ?? 120_000,
      env: opts.env ?? {},
      stripFinalNewline: false,
    });
    const res: RunResult = {
      stdout: String(r.stdout ?? ''),
      stderr: String(r.stderr ?? ''),
      exitCode: typeof r.exitCode === 'number' ? r.exitCode : -1,
    };
    if (res.exitCode !== 0 && !opts.allowFailure) {
      throw new NodenetError(
        ErrorCode.Exec,
        `${full.join(' ')} exited ${res.exitCode}: ${res.stderr.trim().slice(0, 2000)}`,
        { details: res.stderr.slice(0, 4000) },
      );
    }
    return res;
  }
}
