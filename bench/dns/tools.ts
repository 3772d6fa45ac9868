/**
 * bench/dns/tools: the external programs bench:dns runs, and whether they are here (run.ts's preflight and
 * the smoke test's skip). Effectful: runs each once for its version.
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';

export const DNSPERF = 'dnsperf';
/** Debian's dnsmasq-base puts the binary here (and no service). */
export const DNSMASQ = '/usr/sbin/dnsmasq';

/** dnsperf's version (`dnsperf -h` prints it), or null when it is not installed. */
export function dnsperfVersion(): string | null {
  const r = spawnSync(DNSPERF, ['-h'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  if (r.error) return null;
  return /Version\s+(\S+)/.exec(`${r.stdout}${r.stderr}`)?.[1] ?? null;
}

/** `Dnsmasq version 2.90`, or null when it is not installed. */
export function dnsmasqVersion(): string | null {
  if (!existsSync(DNSMASQ)) return null;
  const r = spawnSync(DNSMASQ, ['--version'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  if (r.error || r.status !== 0) return null;
  return /^Dnsmasq version \S+/.exec(r.stdout)?.[0] ?? null;
}
