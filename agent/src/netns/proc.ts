/**
 * netns/proc: the few /proc facts the pause holder needs: a process's parent,
 * state and start time (to tell a live holder from a recycled pid), and the
 * children of a process (this kernel has no /proc/PID/task/TID/children).
 */
import { readdirSync, readFileSync } from 'node:fs';

export interface ProcStat {
  pid: number;
  /** One letter: R, S, D, Z (zombie), T, ... */
  state: string;
  ppid: number;
  /** Field 22, clock ticks since boot: with the pid, identifies one process for good. */
  startTime: string;
}

/** Parses /proc/PID/stat; null if the process does not exist. */
export function procStat(pid: number): ProcStat | null {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return null;
  }
  return parseProcStat(text);
}

/** Parses the text of /proc/PID/stat (comm may contain spaces and parentheses: split after the last ')'). */
export function parseProcStat(text: string): ProcStat | null {
  const open = text.indexOf('(');
  const close = text.lastIndexOf(')');
  if (open < 0 || close < open) return null;
  const pid = Number(text.slice(0, open).trim());
  const rest = text.slice(close + 2).split(' ');
  // rest[0] is field 3 (state); field N is rest[N - 3].
  const state = rest[0];
  const ppid = Number(rest[1]);
  const startTime = rest[19];
  if (!Number.isInteger(pid) || state === undefined || !Number.isInteger(ppid) || startTime === undefined) return null;
  return { pid, state, ppid, startTime };
}

/** True if `pid` runs (not a zombie) and, when given, started at `startTime`. */
export function isAlive(pid: number, startTime?: string): boolean {
  const s = procStat(pid);
  if (!s || s.state === 'Z' || s.state === 'X') return false;
  return startTime === undefined || s.startTime === startTime;
}

/** Pids whose parent is `ppid` (a scan of /proc). */
export function childPids(ppid: number): number[] {
  const out: number[] = [];
  for (const e of readdirSync('/proc')) {
    if (!/^\d+$/.test(e)) continue;
    const s = procStat(Number(e));
    if (s && s.ppid === ppid) out.push(s.pid);
  }
  return out;
}
