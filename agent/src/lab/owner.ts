/**
 * lab/owner: who made a lab. `owner.json` in the lab's run directory holds
 * the pid and the start time (/proc/PID/stat field 22) of the process that
 * made it, so a pid recycled by an unrelated process is not taken for the
 * owner. lab/leftovers.ts removes a lab only when its owner is gone.
 */
import { readJsonFile } from '../state/read.js';
import { isAlive, procStat } from '../netns/proc.js';
import { writeFileDurable } from '../state/durable.js';

export interface LabOwner {
  readonly pid: number;
  readonly startTime: string;
  readonly tag: string;
  /** Every namespace of the lab starts with this (nn-<tag>-). */
  readonly namespacePrefix: string;
  readonly createdAt: string;
}

export const OWNER_FILE = 'owner.json';

/** Writes `<dir>/owner.json` for the calling process. */
export function writeOwner(dir: string, o: { tag: string; namespacePrefix: string }, pid = process.pid): LabOwner {
  const st = procStat(pid);
  if (!st) throw new Error(`cannot read /proc/${pid}/stat`);
  const owner: LabOwner = { pid, startTime: st.startTime, tag: o.tag, namespacePrefix: o.namespacePrefix, createdAt: new Date().toISOString() };
  writeFileDurable(`${dir}/${OWNER_FILE}`, `${JSON.stringify(owner, null, 2)}\n`);
  return owner;
}

/** The owner record of a lab directory, or null when it is missing or unreadable. */
export function readOwner(dir: string): LabOwner | null {
  try {
    return readJsonFile(`${dir}/${OWNER_FILE}`, (r) => ({
      pid: r.int('pid', { min: 1 }),
      startTime: r.string('startTime'),
      tag: r.string('tag'),
      namespacePrefix: r.string('namespacePrefix'),
      createdAt: r.string('createdAt'),
    }));
  } catch {
    return null;
  }
}

/** Whether the process that wrote the record still runs. */
export function ownerAlive(o: LabOwner): boolean {
  return isAlive(o.pid, o.startTime);
}
