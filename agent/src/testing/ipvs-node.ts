/**
 * testing/ipvs-node: a node in IPVS mode without IPVS, for `nodenet trace`'s
 * tests. The real IpvsBackend syncs a snapshot into the validating fakes
 * (FakeIpvs, FakeIpset, FakeIptables, the netlink fake's kube-ipvs0); a
 * FakeRunner then answers the read-only commands trace runs in the node's
 * namespace with what the tools would print for that state: `iptables -V`,
 * `iptables-nft-save`, `ipset save`, `ipvsadm -L -n` and
 * `ip -j addr show dev kube-ipvs0`. Anything else (and any command outside
 * the namespace) has no handler, so the test fails.
 */
import { FakeRunner } from '../exec/runner.fake.js';
import type { RunResult } from '../exec/runner.js';
import { silentLogger } from '../../../lib/log/log.js';
import { renderIpsetRestore, type IpsetOp } from '../netfilter/iptables/ipset-parse.js';
import { FakeIpset } from '../netfilter/iptables/ipset.fake.js';
import { FakeIptables } from '../netfilter/iptables/iptables.fake.js';
import type { VirtualServerState } from '../netfilter/ipvs/ipvs-types.js';
import { FakeIpvs } from '../netfilter/ipvs/ipvs.fake.js';
import { FakeNetlinkKernel } from '../netlink/netlink.fake.js';
import { FakeSysctl } from '../netns/sysctl.fake.js';
import { DUMMY_DEVICE } from '../proxy/ipvs/names.js';
import type { IpvsOptions } from '../proxy/ipvs/plan.js';
import { IpvsBackend } from '../proxy/ipvs/proxier.js';
import type { ProxyNodeConfig, ProxySnapshot } from '../proxy/types.js';

const SYSCTLS = {
  'net.ipv4.vs.conntrack': '0', 'net.ipv4.vs.conn_reuse_mode': '1', 'net.ipv4.vs.expire_nodest_conn': '0', 'net.ipv4.vs.expire_quiescent_template': '0',
  'net.ipv4.conf.all.arp_ignore': '0', 'net.ipv4.conf.all.arp_announce': '0',
};

/** `ipvsadm -Ln` as ipvsadm 1.31 prints it. */
export function formatIpvsadmList(services: readonly VirtualServerState[]): string {
  const fwd = { masq: 'Masq', local: 'Local', tunnel: 'Tunnel', route: 'Route' } as const;
  const lines = ['IP Virtual Server version 1.2.1 (size=4096)', 'Prot LocalAddress:Port Scheduler Flags', '  -> RemoteAddress:Port           Forward Weight ActiveConn InActConn'];
  for (const s of services) {
    lines.push(`${s.protocol.padEnd(4)} ${`${s.address}:${s.port}`} ${s.scheduler}${s.persistentTimeout ? ` persistent ${s.persistentTimeout}` : ''}`);
    for (const d of s.dests) lines.push(`  -> ${`${d.address}:${d.port}`.padEnd(26)} ${fwd[d.forward].padEnd(7)} ${String(d.weight).padEnd(6)} ${String(d.activeConns).padEnd(10)} ${d.inactiveConns}`);
  }
  return `${lines.join('\n')}\n`;
}

export interface IpvsNodeState {
  readonly iptablesSave: string;
  readonly ipsetSave: string;
  readonly ipvsadmList: string;
  /** `ip -j addr show dev kube-ipvs0`. */
  readonly ipAddrJson: string;
  /** kube-ipvs0's addresses, without prefix length. */
  readonly vips: string[];
}

/** Syncs the snapshot with the real IPVS backend into fakes; returns what the tools would print. */
export async function ipvsNodeState(snap: ProxySnapshot, cfg: ProxyNodeConfig, options: IpvsOptions = {}): Promise<IpvsNodeState> {
  const ipvs = new FakeIpvs();
  const ipset = new FakeIpset();
  const iptables = new FakeIptables();
  const netlink = new FakeNetlinkKernel().open();
  const backend = new IpvsBackend({ ipvs, ipset, iptables, netlink, sysctl: new FakeSysctl(SYSCTLS), kernelRelease: '6.1.0-27-amd64', nodeConfig: cfg, log: silentLogger(), options });
  await backend.sync(snap, { full: true });
  const ops: IpsetOp[] = [];
  for (const s of (await ipset.list(() => true)).values()) {
    ops.push({ op: 'create', name: s.name, type: s.type });
    for (const e of s.entries) ops.push({ op: 'add', name: s.name, entry: e });
  }
  const addrs = (await netlink.listAddresses(DUMMY_DEVICE)).map((a) => a.address);
  const vips = addrs.map((a) => a.split('/')[0]!);
  const ipAddrJson = JSON.stringify([{ ifindex: 5, ifname: DUMMY_DEVICE, flags: ['BROADCAST', 'NOARP'], mtu: 1500, operstate: 'DOWN', link_type: 'ether',
    addr_info: addrs.map((a) => ({ family: 'inet', local: a.split('/')[0], prefixlen: Number(a.split('/')[1]), scope: 'global', label: DUMMY_DEVICE, valid_life_time: 4294967295, preferred_life_time: 4294967295 })) }]);
  return {
    iptablesSave: (await iptables.save('filter')) + (await iptables.save('nat')),
    ipsetSave: renderIpsetRestore(ops),
    ipvsadmList: formatIpvsadmList(await ipvs.list()),
    ipAddrJson,
    vips,
  };
}

const ok = (stdout: string): RunResult => ({ stdout, stderr: '', exitCode: 0 });

/** A FakeRunner answering trace's read-only commands in `netns` only, from the state (override any answer by its command line). */
export function ipvsNodeRunner(state: IpvsNodeState, netns: string, over: Readonly<Record<string, RunResult>> = {}): FakeRunner {
  const answers: Record<string, RunResult> = {
    'iptables -V': ok('iptables v1.8.9 (nf_tables)\n'),
    'iptables-nft-save': ok(state.iptablesSave),
    'iptables-legacy-save': ok(''),
    'ipset save': ok(state.ipsetSave),
    'ipvsadm -L -n': ok(state.ipvsadmList),
    [`ip -j addr show dev ${DUMMY_DEVICE}`]: ok(state.ipAddrJson),
    ...over,
  };
  return new FakeRunner().on((argv, opts) => {
    if (opts.netns !== netns) return undefined;
    const cmd = argv.join(' ');
    if (/^nft list table ip \S+$/.test(cmd)) return { stdout: '', stderr: 'Error: No such file or directory\n', exitCode: 1 };
    return answers[cmd];
  });
}
