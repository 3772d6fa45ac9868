/**
 * bench/proxy-sync/timing-runner: a Runner that records how long each command
 * took (wall, spawn to exit), so a sync's time can be split into the
 * commands it ran and everything else (render, snapshot, bookkeeping).
 */
import type { RunOptions, RunResult, Runner } from '../../agent/src/exec/runner.js';

export interface CommandTiming {
  /** The command and its leading arguments, e.g. "nft -j list tables ip". */
  readonly cmd: string;
  /** When it was spawned (performance.now() of this process): commands a sync runs in parallel overlap. */
  readonly startMs: number;
  readonly ms: number;
  readonly exitCode: number | null;
}

/** At most this many arguments are kept in `cmd` (rule text never is: it goes on stdin). */
const ARGS_KEPT = 6;

export class TimingRunner implements Runner {
  private log: CommandTiming[] = [];

  constructor(
    private readonly inner: Runner,
    private readonly now: () => number = () => performance.now(),
  ) {}

  /** Returns the commands recorded since the last take() and forgets them. */
  take(): CommandTiming[] {
    const out = this.log;
    this.log = [];
    return out;
  }

  async run(argv: readonly string[], opts: RunOptions = {}): Promise<RunResult> {
    const t0 = this.now();
    const cmd = argv.slice(0, ARGS_KEPT).join(' ');
    try {
      const r = await this.inner.run(argv, opts);
      this.log.push({ cmd, startMs: t0, ms: this.now() - t0, exitCode: r.exitCode });
      return r;
    } catch (e) {
      this.log.push({ cmd, startMs: t0, ms: this.now() - t0, exitCode: null });
      throw e;
    }
  }
}
