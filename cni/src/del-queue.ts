/**
 * del-queue: where the shim leaves a DEL it could not hand to the agent.
 *
 * The runtime retries a failed DEL for a long time, and the pod cannot finish
 * terminating meanwhile; a DEL the agent never saw is harmless to replay later
 * because DEL is idempotent (Cilium's DeletionFallbackClient does the same).
 * So with the agent down the shim writes the request to
 *   <dirname(agentSocket)>/del-queue/<containerID>-<ifName>.json
 * and reports success; the agent replays the directory when it starts
 * (agent/src/cniserver/replay-deletions.ts reads this format).
 *
 * Writes are atomic (a dot-prefixed temp file, fsync, rename, fsync of the
 * directory), so the agent never sees half a record. A second DEL for the same
 * attachment replaces the first.
 */
import { closeSync, fsyncSync, mkdirSync, openSync, renameSync, unlinkSync, writeSync } from 'node:fs';
import { dirname, join } from 'node:path';

/** Version 1 of the on-disk record. `config` is the stdin JSON text, verbatim. */
export interface DeletionRecord {
  readonly version: 1;
  readonly command: 'DEL';
  readonly containerId: string;
  readonly netns: string;
  readonly ifName: string;
  readonly args: string;
  readonly path: string;
  readonly config: string;
  /** ISO 8601 time the shim queued it. */
  readonly queuedAt: string;
}

export function deletionQueueDir(agentSocket: string): string {
  return join(dirname(agentSocket), 'del-queue');
}

/** File name for an attachment. The skel has validated both parts (no '/', no leading '.'). */
export function deletionRecordName(containerId: string, ifName: string): string {
  return `${containerId}-${ifName}.json`;
}

/** Writes the record atomically into `dir` (created 0700 if missing). Returns the final path. Throws on failure. */
export function writeDeletionRecord(dir: string, record: DeletionRecord): string {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const name = deletionRecordName(record.containerId, record.ifName);
  const final = join(dir, name);
  const tmp = join(dir, `.${name}.${process.pid}.tmp`);
  const fd = openSync(tmp, 'wx', 0o600);
  try {
    writeSync(fd, `${JSON.stringify(record)}\n`);
    fsyncSync(fd);
  } catch (e) {
    closeSync(fd);
    unlinkSync(tmp);
    throw e;
  }
  closeSync(fd);
  renameSync(tmp, final);
  const dfd = openSync(dir, 'r');
  try {
    fsyncSync(dfd);
  } finally {
    closeSync(dfd);
  }
  return final;
}
