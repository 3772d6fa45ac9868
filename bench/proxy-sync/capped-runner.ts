/**
 * bench/proxy-sync/capped-runner: a Runner that gives every command the time
 * left until the case's deadline as its timeout (replacing the executors'
 * own 120 s default, which a 30,000-Service iptables-nft restore exceeds), so
 * a case stops at --cap-s instead of running for hours. Past the deadline it
 * refuses to start anything.
 */
import { ErrorCode, NodenetError } from '../../lib/errors/errors.js';
import type { RunOptions, RunResult, Runner } from '../../agent/src/exec/runner.js';

export class CappedRunner implements Runner {
  constructor(
    private readonly inner: Runner,
    /** Date.now() value after which nothing runs. */
    readonly deadline: number,
    private readonly now: () => number = Date.now,
  ) {}

  get expired(): boolean {
    return this.now() >= this.deadline;
  }

  run(argv: readonly string[], opts: RunOptions = {}): Promise<RunResult> {
    const left = this.deadline - this.now();
    if (left <= 0) return Promise.reject(new NodenetError(ErrorCode.Exec, `bench cap reached: not running ${argv.join(' ')}`));
    return this.inner.run(argv, { ...opts, timeoutMs: Math.max(1, Math.ceil(left)) });
  }
}
