/**
 * cniserver/replay-deletions: runs the DELs the shim queued while it could
 * not reach the agent (cni/delqueue.c writes them in the contract's
 * DeletionRecord format v1, proto/cni/v1/contract.ts).
 *
 * Records arrive at any time, not only while the agent is down: a shim that
 * failed to connect just before the server listened writes its record after
 * the start-up pass, and a DEL that timed out while the agent was busy is
 * queued with the agent up. So the DeletionReplayer runs one pass when the
 * agent can serve DELs, then watches the directory (inotify through
 * fs.watch) and passes again on every change, plus a rescan on the injected
 * clock (default every 10 s) for anything a watch missed or a DEL that
 * failed and must be retried. Passes never overlap: a change during a pass
 * makes one more pass after it.
 *
 * One pass (replayDeletions): each record goes through handler.del; the file is removed after success
 * and kept (logged) after a failure, so the next replay retries it. A record
 * that cannot be parsed can never succeed: it is renamed to `<name>.invalid`
 * and logged, out of the way of later replays. Temp files of shims that died
 * mid-write are removed once older than an hour. Records run one at a time,
 * in file-name order. Replaying is safe to repeat: DEL is idempotent.
 */
import { mkdirSync, readdirSync, readFileSync, renameSync, statSync, unlinkSync, watch as fsWatch } from 'node:fs';
import { join } from 'node:path';
import { deletionQueueDir } from '../../../proto/cni/v1/contract.js';
import { readJsonText } from '../../../lib/json/read.js';
import { F } from '../../../lib/log/fields.js';
import type { Logger } from '../../../lib/log/log.js';
import type { Clock } from '../../../lib/reconcile/clock.js';
import type { CniCallRequest, CniHandler } from './handler.js';

const STALE_TMP_MS = 60 * 60 * 1000;

export interface ReplaySummary {
  /** DELs that succeeded; their records are gone. */
  readonly replayed: number;
  /** DELs that failed; their records stay for the next replay. */
  readonly failed: number;
  /** Unparseable records, renamed to *.invalid. */
  readonly invalid: number;
}

export interface ReplayOptions {
  /** Clock for aging temp files; default Date.now. */
  readonly now?: () => number;
}

/** The queue directory for a CNI socket path: `<dirname(socket)>/del-queue`, as the shim computes it. */
export const deletionQueueDirFor = deletionQueueDir;

export async function replayDeletions(dir: string, handler: Pick<CniHandler, 'del'>, log: Logger, opts: ReplayOptions = {}): Promise<ReplaySummary> {
  const rlog = log.child({ [F.subsys]: 'cniserver/replay' });
  const now = opts.now ?? Date.now;
  let names: string[];
  try {
    names = readdirSync(dir).sort();
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return { replayed: 0, failed: 0, invalid: 0 };
    throw e;
  }
  let replayed = 0;
  let failed = 0;
  let invalid = 0;
  for (const name of names) {
    const file = join(dir, name);
    if (name.startsWith('.') && name.endsWith('.tmp')) {
      try {
        if (now() - statSync(file).mtimeMs > STALE_TMP_MS) unlinkSync(file);
      } catch {
        // Renamed or removed by its shim meanwhile.
      }
      continue;
    }
    if (name.startsWith('.') || !name.endsWith('.json')) continue;

    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') continue; // replayed by an earlier pass meanwhile
      throw e;
    }
    let req: CniCallRequest;
    try {
      req = parseRecord(text, file);
    } catch (e) {
      invalid++;
      rlog.error({ file, [F.err]: e }, 'queued DEL record is invalid; set aside as .invalid');
      renameSync(file, `${file}.invalid`);
      continue;
    }
    const fields = { file, [F.containerID]: req.containerId, [F.ifName]: req.ifName, [F.netns]: req.netns };
    try {
      await handler.del(req);
      try {
        unlinkSync(file);
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
      }
      replayed++;
      rlog.info(fields, 'replayed queued DEL');
    } catch (e) {
      failed++;
      rlog.warn({ ...fields, [F.err]: e }, 'queued DEL failed; kept for the next replay');
    }
  }
  return { replayed, failed, invalid };
}

/** Parses a v1 deletion record; throws (naming the field) on anything else. */
export function parseRecord(text: string, name = 'deletion record'): CniCallRequest {
  return readJsonText(name, text, (r) => {
    if (r.raw('version') !== 1) throw new Error(`unknown record version ${JSON.stringify(r.raw('version'))}`);
    if (r.raw('command') !== 'DEL') throw new Error(`unexpected command ${JSON.stringify(r.raw('command'))}`);
    const id = r.string('containerId');
    const ifName = r.string('ifName');
    if (id === '' || ifName === '') throw new Error('containerId and ifName must not be empty');
    return {
      containerId: id,
      netns: r.string('netns'),
      ifName,
      args: r.string('args'),
      path: r.string('path'),
      config: Buffer.from(r.string('config'), 'utf8'),
    };
  });
}

export interface ReplayerOptions {
  readonly dir: string;
  readonly handler: Pick<CniHandler, 'del'>;
  readonly log: Logger;
  readonly clock: Clock;
  /** A pass at least this often even without a change seen (default 10 000 ms). */
  readonly rescanMs?: number;
  /** Watches `dir`, calling onChange on any change; default fs.watch. */
  readonly watch?: (dir: string, onChange: () => void) => { close(): void };
}

function defaultWatch(dir: string, onChange: () => void): { close(): void } {
  const w = fsWatch(dir, { persistent: false }, () => onChange());
  // A watch error (the directory removed under us) must not crash the agent; the rescan still runs.
  w.on('error', () => undefined);
  return w;
}

/**
 * Replays the queue now and whenever it changes. start() resolves after the
 * first pass with its summary; totals() counts every pass so far.
 */
export class DeletionReplayer {
  private watcher: { close(): void } | null = null;
  private timer: unknown = null;
  private running: Promise<void> | null = null;
  private again = false;
  private stopped = false;
  private readonly total = { replayed: 0, failed: 0, invalid: 0, passes: 0 };

  constructor(private readonly o: ReplayerOptions) {}

  async start(): Promise<ReplaySummary> {
    mkdirSync(this.o.dir, { recursive: true, mode: 0o700 });
    try {
      this.watcher = (this.o.watch ?? defaultWatch)(this.o.dir, () => this.request());
    } catch (e) {
      this.o.log.warn({ [F.err]: e, dir: this.o.dir }, 'cannot watch the DEL queue; relying on the periodic rescan');
    }
    const before = { ...this.total };
    this.request();
    await this.whenIdle();
    this.arm();
    return { replayed: this.total.replayed - before.replayed, failed: this.total.failed - before.failed, invalid: this.total.invalid - before.invalid };
  }

  /** Asks for a pass; coalesces with one running or already asked for. */
  request(): void {
    if (this.stopped) return;
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = (async () => {
      do {
        this.again = false;
        const r = await replayDeletions(this.o.dir, this.o.handler, this.o.log);
        this.total.replayed += r.replayed;
        this.total.failed += r.failed;
        this.total.invalid += r.invalid;
        this.total.passes++;
      } while (this.again && !this.stopped);
    })()
      .catch((e: unknown) => this.o.log.error({ [F.err]: e }, 'DEL queue pass failed'))
      .finally(() => {
        this.running = null;
      });
  }

  private arm(): void {
    if (this.stopped) return;
    this.timer = this.o.clock.setTimeout(() => {
      this.request();
      this.arm();
    }, this.o.rescanMs ?? 10_000);
  }

  /** Resolves when no pass runs (and none is pending). */
  async whenIdle(): Promise<void> {
    while (this.running) await this.running;
  }

  totals(): Readonly<{ replayed: number; failed: number; invalid: number; passes: number }> {
    return { ...this.total };
  }

  /** Stops watching and rescanning; waits for a pass in flight. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.watcher?.close();
    this.watcher = null;
    if (this.timer !== null) this.o.clock.clearTimeout(this.timer);
    this.timer = null;
    await this.whenIdle();
  }
}
