/**
 * netns/sysctl.fake: a Sysctl over a map, validating as the kernel does: a
 * key it does not know is an error (ENOENT), and a boolean sysctl takes only
 * 0 or 1.
 */
import { sysctlPath, type Sysctl } from './sysctl.js';

const BOOLEAN = /(?:ip_forward|route_localnet|send_redirects|bridge-nf-call-iptables|bridge-nf-call-ip6tables|rp_filter|proxy_arp|conntrack|expire_nodest_conn|expire_quiescent_template)$/;

export class FakeSysctl implements Sysctl {
  readonly values = new Map<string, string>();
  readonly writes: { key: string; value: string }[] = [];

  /** `known`: the keys that exist, with their current values (dots or slashes). */
  constructor(known: Record<string, string> = DEFAULT_KNOWN) {
    for (const [k, v] of Object.entries(known)) this.values.set(norm(k), v);
  }

  async get(key: string): Promise<string> {
    const k = norm(key);
    const v = this.values.get(k);
    if (v === undefined) throw Object.assign(new Error(`ENOENT: no such file or directory, open '${sysctlPath(key)}'`), { code: 'ENOENT' });
    return v;
  }

  async set(key: string, value: string): Promise<void> {
    const cur = await this.get(key);
    if (BOOLEAN.test(norm(key)) && value !== '0' && value !== '1') throw Object.assign(new Error(`EINVAL: ${key}=${value}`), { code: 'EINVAL' });
    if (cur === value) return;
    this.values.set(norm(key), value);
    this.writes.push({ key: norm(key), value });
  }
}

function norm(key: string): string {
  sysctlPath(key);
  return key.replace(/\//g, '.');
}

/** What a fresh network namespace has for the sysctls nodenet touches. */
export const DEFAULT_KNOWN: Readonly<Record<string, string>> = {
  'net.ipv4.ip_forward': '0',
  'net.bridge.bridge-nf-call-iptables': '1',
  'net.ipv4.conf.all.route_localnet': '0',
  'net.ipv4.conf.all.send_redirects': '1',
  'net.ipv4.conf.default.send_redirects': '1',
};
