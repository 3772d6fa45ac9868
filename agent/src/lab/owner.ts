/**
 * lab/owner: who made a lab. `owner.json` in the lab's run directory holds
 * the pid and the start time (/proc/PID/stat field 22) of the process that
 * made it, so a pid recycled by an unrelated process is not taken for the
 * owner. lab/leftovers.ts removes a lab only when its owner is gone.
 *
 * `processes.json` lists what a lab started that must go with it, each with
 * its pid and start time: `nodenet lab up`'s detached control plane, agents
 * and relays (the loopback relay runs in the root namespace, where killing
 * the lab's namespaces' processes would never reach it). Removing a lab
 * kills the recorded processes that still run, never a recycled pid.
 */
import { readJsonFile } from '../../../lib/state/read.js';
import { isAlive, procStat } from '../netns/proc.js';
import { writeFileDurable } from '../../../lib/state/durable.js';

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

export interface LabProcess {
  /** What it is: 'control-plane', 'agent n1', 'relay'... */
  readonly role: string;
  readonly pid: number;
  readonly startTime: string;
}

export const PROCESSES_FILE = 'processes.json';

/** The processes recorded in a lab directory (none when the file is missing or unreadable). */
export function readProcesses(dir: string): LabProcess[] {
  try {
    return readJsonFile(`${dir}/${PROCESSES_FILE}`, (r) =>
      r.objects('processes').map((e) => ({ role: e.string('role'), pid: e.int('pid', { min: 1 }), startTime: e.string('startTime') })),
    );
  } catch {
    return [];
  }
}

/** Adds a running process to the lab's record (durably, before anything waits on it). @throws when it is not running. */
export function recordProcess(dir: string, role: string, pid: number): LabProcess {
  const st = procStat(pid);
  if (!st) throw new Error(`${role}: process ${pid} is not running`);
  const p: LabProcess = { role, pid, startTime: st.startTime };
  writeFileDurable(`${dir}/${PROCESSES_FILE}`, `${JSON.stringify({ processes: [...readProcesses(dir), p] }, null, 2)}\n`);
  return p;
}

/** Records a process under a role, replacing what was recorded under it (a part of the lab started again). */
export function replaceProcess(dir: string, role: string, pid: number): LabProcess {
  const st = procStat(pid);
  if (!st) throw new Error(`${role}: process ${pid} is not running`);
  const p: LabProcess = { role, pid, startTime: st.startTime };
  writeFileDurable(`${dir}/${PROCESSES_FILE}`, `${JSON.stringify({ processes: [...readProcesses(dir).filter((x) => x.role !== role), p] }, null, 2)}\n`);
  return p;
}

/** SIGKILLs the recorded processes that still run (same pid and start time); returns them. */
export function killRecorded(dir: string): LabProcess[] {
  const killed: LabProcess[] = [];
  for (const p of readProcesses(dir)) {
    if (!isAlive(p.pid, p.startTime)) continue;
    try {
      process.kill(p.pid, 'SIGKILL');
      killed.push(p);
    } catch {
      /* gone meanwhile */
    }
  }
  return killed;
}
