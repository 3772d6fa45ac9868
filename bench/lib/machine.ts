/**
 * bench/lib/machine: the machine a bench runs on, as every bench's results
 * record it, and the root check of the benches that build namespaces.
 */
import { cpus, loadavg, release, totalmem } from 'node:os';

/** Whether this process is root; says why the bench needs it when not. */
export function isRoot(bench: string, why: string): boolean {
  if (process.getuid?.() === 0) return true;
  console.error(`${bench} needs root (${why})`);
  return false;
}

/** The machine a bench ran on, the fields every bench's results share. */
export interface MachineMeta {
  readonly date: string;
  readonly kernel: string;
  readonly cpus: number;
  readonly cpuModel: string;
  readonly memTotalMiB: number;
  readonly node: string;
  readonly loadavgBefore: readonly number[];
  readonly loadavgAfter: readonly number[];
}

/** This machine, now (the load average after the run; before, as the bench took it). */
export function machineMeta(loadavgBefore: readonly number[]): MachineMeta {
  const cpu = cpus();
  return {
    date: new Date().toISOString(), kernel: release(), cpus: cpu.length, cpuModel: cpu[0]?.model.trim() ?? '?', memTotalMiB: totalmem() / 1048576, node: process.version,
    loadavgBefore, loadavgAfter: loadavg(),
  };
}
