/**
 * cniserver/replay-deletions: runs the DELs the shim queued while the agent
 * was unreachable (cni/src/del-queue.ts writes them; this reads format v1).
 *
 * Call it once the agent can serve DELs (after startCniServer), and again
 * whenever convenient: a DEL that timed out is also queued while the agent is
 * up. Each record goes through handler.del; the file is removed after success
 * and kept (logged) after a failure, so the next replay retries it. A record
 * that cannot be parsed can never succeed: it is renamed to `<name>.invalid`
 * and logged, out of the way of later replays. Temp files of shims that died
 * mid-write are removed once older than an hour. Records run one at a time,
 * in file-name order. Replaying is safe to repeat: DEL is idempotent.
 */
import { readdirSync, readFileSync, renameSync, statSync, unlinkSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { F } from '../log/fields.js';
import type { Logger } from '../log/log.js';
import type { CniCallRequest, CniHandler } from './handler.js';

export const DEL_QUEUE_DIRNAME = 'del-queue';
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
export function deletionQueueDirFor(socketPath: string): string {
  return join(dirname(socketPath), DEL_QUEUE_DIRNAME);
}

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

    let req: CniCallRequest;
    try {
      req = parseRecord(readFileSync(file, 'utf8'));
    } catch (e) {
      invalid++;
      rlog.error({ file, [F.err]: e }, 'queued DEL record is invalid; set aside as .invalid');
      renameSync(file, `${file}.invalid`);
      continue;
    }
    const fields = { file, [F.containerID]: req.containerId, [F.ifName]: req.ifName, [F.netns]: req.netns };
    try {
      await handler.del(req);
      unlinkSync(file);
      replayed++;
      rlog.info(fields, 'replayed queued DEL');
    } catch (e) {
      failed++;
      rlog.warn({ ...fields, [F.err]: e }, 'queued DEL failed; kept for the next replay');
    }
  }
  return { replayed, failed, invalid };
}

/** Parses a v1 deletion record; throws on anything else. */
export function parseRecord(text: string): CniCallRequest {
  const r: unknown = JSON.parse(text);
  if (typeof r !== 'object' || r === null || Array.isArray(r)) throw new Error('not a JSON object');
  const o = r as Record<string, unknown>;
  if (o['version'] !== 1) throw new Error(`unknown record version ${JSON.stringify(o['version'])}`);
  if (o['command'] !== 'DEL') throw new Error(`unexpected command ${JSON.stringify(o['command'])}`);
  const str = (k: string, required: boolean): string => {
    const v = o[k];
    if (typeof v !== 'string' || (required && v === '')) throw new Error(`${k}: missing or not a string`);
    return v;
  };
  return {
    containerId: str('containerId', true),
    netns: str('netns', false),
    ifName: str('ifName', true),
    args: str('args', false),
    path: str('path', false),
    config: Buffer.from(str('config', true), 'utf8'),
  };
}
