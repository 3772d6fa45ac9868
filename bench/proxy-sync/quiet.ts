/**
 * bench/proxy-sync/quiet: waits for the machine to go quiet before a case.
 *
 * A case's namespace is deleted when it ends, and the kernel tears down its netfilter state afterwards, in a
 * kworker (cleanup_net): at 30,000 Services a second or more of a CPU. The next case's full sync would share
 * the machine with it; the sharded nftables layout, whose full sync uses the second CPU for the kernel's
 * commits, measured 4.2 s instead of 2.6 s that way. So each case waits until the CPUs are idle.
 */
import { readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';

/** Busy and total jiffies of all CPUs, from /proc/stat's first line. */
export function cpuTimes(stat: string): { busy: number; total: number } {
  const line = stat.split('\n', 1)[0] ?? '';
  const f = line.trim().split(/\s+/).slice(1).map(Number);
  if (line.split(/\s+/)[0] !== 'cpu' || f.length < 4 || f.some((n) => !Number.isFinite(n))) throw new Error(`not a /proc/stat cpu line: ${line}`);
  const idle = f[3]! + (f[4] ?? 0); // idle + iowait
  const total = f.slice(0, 8).reduce((a, b) => a + b, 0); // user..steal (guest time is inside user)
  return { busy: total - idle, total };
}

/** The busy share of the CPUs between two samples (0..1). */
export function busyShare(a: { busy: number; total: number }, b: { busy: number; total: number }): number {
  const dt = b.total - a.total;
  return dt > 0 ? (b.busy - a.busy) / dt : 0;
}

/** Waits until the CPUs were under `threshold` busy over one `windowMs`, for at most `maxMs`; returns the ms waited. */
export async function waitQuiet(threshold = 0.1, windowMs = 500, maxMs = 60_000): Promise<number> {
  const t0 = Date.now();
  for (;;) {
    const a = cpuTimes(readFileSync('/proc/stat', 'utf8'));
    await sleep(windowMs);
    const b = cpuTimes(readFileSync('/proc/stat', 'utf8'));
    if (busyShare(a, b) < threshold || Date.now() - t0 >= maxMs) return Date.now() - t0 - windowMs;
  }
}
