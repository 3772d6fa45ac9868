/**
 * netns/sysctl: network sysctls, per network namespace, through /proc/sys
 * (no `sysctl` process). /proc/sys/net shows the namespace of whoever opens
 * the file, so a write into another namespace opens the file between a
 * setns there and a setns back (withNetnsSync), then writes: the open file
 * stays bound to the target namespace.
 *
 * Keys use dots or slashes (net.ipv4.ip_forward, net/ipv4/ip_forward).
 */
import { closeSync, openSync, readFileSync, writeSync } from 'node:fs';
import { withNetnsSync, type NetnsPath } from './netns.js';

export interface Sysctl {
  /** Idempotent: writes only when the value differs. @throws on a key the kernel does not have. */
  set(key: string, value: string): Promise<void>;
  get(key: string): Promise<string>;
}

const KEY_RE = /^net[./][a-z0-9_./-]+$/;

/** The /proc/sys path of a network sysctl key. Throws on anything that is not a net.* key. */
export function sysctlPath(key: string): string {
  if (!KEY_RE.test(key) || key.includes('..')) throw new Error(`not a network sysctl key: ${JSON.stringify(key)}`);
  return `/proc/sys/${key.replace(/\./g, '/')}`;
}

export class ProcSysctl implements Sysctl {
  /** `netns`: the namespace whose sysctls these are; the caller's own when absent. */
  constructor(private readonly netns?: NetnsPath) {}

  private inNs<T>(fn: () => T): T {
    return this.netns ? withNetnsSync(this.netns, fn) : fn();
  }

  async get(key: string): Promise<string> {
    const path = sysctlPath(key);
    return this.inNs(() => readFileSync(path, 'utf8')).trim();
  }

  async set(key: string, value: string): Promise<void> {
    const path = sysctlPath(key);
    const fd = this.inNs(() => openSync(path, 'r+'));
    try {
      const cur = readFileSync(fd, 'utf8').trim();
      if (cur !== value) writeSync(fd, value, 0);
    } finally {
      closeSync(fd);
    }
  }
}
