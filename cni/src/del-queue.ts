/**
 * del-queue: where the shim leaves a DEL it could not hand to the agent.
 *
 * The runtime retries a failed DEL for a long time, and the pod cannot finish
 * terminating meanwhile; a DEL the agent never saw is harmless to replay later
 * because DEL is idempotent (Cilium's DeletionFallbackClient does the same).
 * So with the agent down the shim writes the request to
 *   <dirname(agentSocket)>/del-queue/<containerID>-<ifName>.json
 * and reports success; the agent replays the directory when it starts
 * (agent/src/cniserver/replay-deletions.ts reads this format; the format is
 * proto/cni/v1/contract.ts's DeletionRecord).
 *
 * Writes are atomic (a dot-prefixed temp file, fsync, rename, fsync of the
 * directory), so the agent never sees half a record. A second DEL for the same
 * attachment replaces the first.
 */
import { closeSync, fsyncSync, mkdirSync, openSync, renameSync, unlinkSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { deletionQueueDir, deletionRecordName, type DeletionRecord } from '../../proto/cni/v1/contract.js';

export { deletionQueueDir, deletionRecordName, type DeletionRecord };

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
