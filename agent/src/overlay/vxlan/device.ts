/**
 * overlay/vxlan/device: the node's VXLAN device (flannel's flannel.1, ours
 * nodenet.1) on its underlay (../underlay.ts), over NetlinkOps.
 *
 * ensureVxlanDevice is idempotent and keeps what is right: a device that
 * already has the VNI, port, underlay device, local address and learning
 * off is kept as it is (its entries with it: an agent restart does not
 * flap the overlay); one that differs in any of those is deleted and made
 * again (the kernel cannot change them in place), as flannel does. The MAC
 * (derived from the node name), the MTU (underlay MTU - 50) and the
 * address (the pod CIDR's network address as /32, and no other) are set in
 * place when they differ. Never `df set`: it black-holes large packets
 * (MEASURED.md).
 */
import { ErrorCode, NodenetError } from '../../../../lib/errors/errors.js';
import { parseIPNet } from '../../../../lib/net/ip.js';
import type { LinkInfo, NetlinkOps } from '../../netlink/ops.js';
import type { Underlay } from '../underlay.js';
import { VXLAN_DEVICE, VXLAN_OVERHEAD, VXLAN_PORT, VXLAN_VNI } from './lease.js';

export interface DeviceSpec {
  readonly underlay: Underlay;
  readonly mac: string;
  /** The node's pod CIDR: its network address goes on the device as /32. */
  readonly podCIDR: string;
}

export interface DeviceResult {
  readonly link: LinkInfo;
  /** What was done: 'kept', 'created', 'recreated' (with what differed), and the in-place changes. */
  readonly actions: readonly string[];
}

function mismatch(l: LinkInfo, s: DeviceSpec): string | null {
  if (l.kind !== 'vxlan' || !l.vxlan) return `kind ${l.kind ?? 'none'}`;
  const v = l.vxlan;
  if (v.vni !== VXLAN_VNI) return `VNI ${v.vni}`;
  if (v.port !== VXLAN_PORT) return `port ${v.port}`;
  if (v.dev !== s.underlay.index) return `underlay ifindex ${v.dev ?? 'none'}`;
  if (v.local !== s.underlay.ip) return `local ${v.local ?? 'none'}`;
  if (v.learning) return 'learning on';
  return null;
}

export async function ensureVxlanDevice(nl: NetlinkOps, s: DeviceSpec): Promise<DeviceResult> {
  const name = VXLAN_DEVICE;
  const mtu = s.underlay.mtu - VXLAN_OVERHEAD;
  const actions: string[] = [];
  let l = await nl.getLink(name);
  const why = l && mismatch(l, s);
  if (l && why) {
    await nl.deleteLink(name);
    actions.push(`recreated (${why})`);
    l = null;
  }
  if (!l) {
    l = await nl.createVxlan({ name, vni: VXLAN_VNI, port: VXLAN_PORT, dev: s.underlay.name, local: s.underlay.ip, learning: false, mtu, mac: s.mac });
    if (actions.length === 0) actions.push('created');
  } else actions.push('kept');
  if (l.mac.toLowerCase() !== s.mac) {
    await nl.setMac(name, s.mac);
    actions.push(`mac ${s.mac}`);
  }
  if (l.mtu !== mtu) {
    await nl.setMtu(name, mtu);
    actions.push(`mtu ${mtu}`);
  }
  const want = `${parseIPNet(s.podCIDR).network.ip}/32`;
  const have = (await nl.listAddresses(name)).map((a) => a.address);
  for (const a of have) {
    if (a === want) continue;
    await nl.delAddress(name, a);
    actions.push(`address ${a} removed`);
  }
  if (!have.includes(want)) {
    await nl.addAddress(name, want);
    actions.push(`address ${want}`);
  }
  if (!l.up) {
    await nl.setUp(name);
    actions.push('up');
  }
  const link = await nl.getLink(name);
  if (!link) throw new NodenetError(ErrorCode.Netlink, `${name} vanished while it was set up`);
  return { link, actions };
}
