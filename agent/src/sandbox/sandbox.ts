/**
 * sandbox: CNI ADD / DEL / CHECK / GC for one attachment, with the reference
 * `bridge` plugin's semantics, done inside the agent.
 *
 * What it owns: the node's bridge (cbr0 by default), one veth pair per
 * attachment (host end `veth` + 11 hex of sha256(containerID/ifName) on the
 * bridge, pod end CNI_IFNAME inside CNI_NETNS), the pod's address and routes,
 * the gateway address on the bridge, per-attachment masquerade, and a
 * durable attachment record.
 *
 * The bridge's MAC is pinned (deps.bridgeMac, derived from the node): a
 * bridge whose address was never set takes its lowest port's MAC and changes
 * it when that port goes, and every pod's ARP entry for the gateway goes
 * stale with it (measured: 29-35 s without connectivity), as the reference
 * bridge plugin also knows.
 *
 * ADD is all or nothing: every step that changes the kernel or the IPAM
 * store pushes its inverse on an undo stack, which runs in reverse unless the
 * whole ADD succeeded (the bridge plugin's `success` flag and defers).
 * DEL is idempotent and best-effort (CNI SPEC: "return success if the
 * interface in question, or any modifications added, are missing"): a missing
 * netns or link is success, and the IP is released even when CNI_NETNS is
 * empty, as containerd's second DEL sends it, and when neither a record nor
 * a readable config says which network the attachment was in (its IPs are
 * then found by container ID and interface across the node's IPAM stores).
 * CHECK compares the kernel with prevResult. Attachments of one container ID
 * are serialised by the caller.
 */
import { createHash, randomBytes } from 'node:crypto';
import { ErrorCode, LinkNotFoundError, NetnsNotFoundError, NodenetError } from '../../../lib/errors/errors.js';
import { F } from '../../../lib/log/fields.js';
import { cidrContains, parseIPNet } from '../../../lib/net/ip.js';
import type { VethSpec } from '../netlink/ops.js';
import type { AttachmentRecord, NetOps, SandboxDeps } from './deps.js';
import { masqueradeEntry } from './masquerade.js';

export interface AttachRequest {
  readonly containerId: string;
  readonly ifName: string;
  readonly netns: string;
  /** The network config's `name`. */
  readonly network: string;
  readonly bridge: string;
  readonly isGateway: boolean;
  readonly isDefaultGateway: boolean;
  readonly forceAddress: boolean;
  readonly ipMasq: boolean;
  readonly mtu?: number | undefined;
  readonly hairpinMode: boolean;
  readonly promiscMode: boolean;
  /** The raw ipam section. */
  readonly ipam: unknown;
  /** The pod interface's MAC the runtime asked for (runtimeConfig.mac, args.cni.mac, CNI_ARGS MAC=); random otherwise. */
  readonly mac?: string | undefined;
  /** IPs asked for through CNI_ARGS IP= or runtimeConfig.ips. */
  readonly requestedIPs: readonly string[];
  readonly dns?: Readonly<Record<string, unknown>> | undefined;
}

/** A CNI result in the 1.1 shape (the CNI layer encodes it for older versions). */
export interface AttachResult {
  readonly interfaces: readonly { name: string; mac: string; mtu?: number; sandbox?: string }[];
  readonly ips: readonly { address: string; gateway?: string; interface: number }[];
  readonly routes: readonly { dst: string; gw?: string }[];
  readonly dns: Readonly<Record<string, unknown>>;
}

export interface DelRequest {
  readonly containerId: string;
  readonly ifName: string;
  /** May be empty (containerd's second DEL). */
  readonly netns: string;
  /** '' when the config did not say (it did not parse): the IPs are then looked up by attachment. */
  readonly network: string;
  readonly ipam: unknown;
  /** undefined when the config did not say: masquerade entries are then removed if there are any. */
  readonly ipMasq: boolean | undefined;
}

/** The host-side veth name: deterministic, so DEL and CHECK find it from (containerID, ifName) alone. */
export function hostVethName(containerId: string, ifName: string): string {
  return `veth${createHash('sha256').update(`${containerId}/${ifName}`).digest('hex').slice(0, 11)}`;
}

type Undo = { what: string; run: () => Promise<void> };

export class Sandbox {
  /** Bridges this sandbox ensured, by name: their options and MAC. A bridge deleted behind its back is re-made on the next ADD. */
  private readonly bridges = new Map<string, { key: string; mac: string }>();
  /** Gateway addresses (bridge/cidr) this sandbox checked against the bridge's others; the rest of their ADDs only re-add them (idempotent). */
  private readonly gateways = new Set<string>();

  constructor(private readonly deps: SandboxDeps) {}

  /** ensureBridge once per bridge and options (a getLink per ADD is a quarter of a millisecond). */
  private async bridge(name: string, opts: { mtu?: number; promisc?: boolean; mac?: string }, fresh = false): Promise<{ mac: string }> {
    const key = JSON.stringify(opts);
    const known = this.bridges.get(name);
    if (!fresh && known?.key === key) return known;
    const link = await this.deps.node.ensureBridge(name, opts);
    const b = { key, mac: link.mac };
    this.bridges.set(name, b);
    if (fresh) for (const g of [...this.gateways]) if (g.startsWith(`${name}/`)) this.gateways.delete(g);
    return b;
  }

  /**
   * The gateway address on the bridge, as the bridge plugin does it: another address of the bridge in an
   * overlapping subnet is an error naming both, unless forceAddress, which replaces it. Checked once per
   * (bridge, address) and sandbox; later ADDs only re-add the address, which puts it back if it was removed.
   */
  private async gatewayAddress(bridge: string, cidr: string, force: boolean): Promise<void> {
    const key = `${bridge}/${cidr}`;
    if (!this.gateways.has(key)) {
      const want = parseIPNet(cidr);
      for (const { address } of await this.deps.node.listAddresses(bridge)) {
        if (address === cidr) continue;
        const have = parseIPNet(address);
        if (!cidrContains(have.network.cidr, want.ip) && !cidrContains(want.network.cidr, have.ip)) continue;
        if (!force) {
          throw new NodenetError(ErrorCode.InvalidConfig, `bridge ${bridge} already has address ${address}, not the gateway ${cidr} this network needs (set forceAddress to replace it)`, { details: 'forceAddress' });
        }
        this.deps.log.info({ bridge, old: address, new: cidr }, 'forceAddress: replacing the bridge address');
        await this.deps.node.delAddress(bridge, address);
      }
    }
    await this.deps.node.addAddress(bridge, cidr);
    this.gateways.add(key);
  }

  async add(req: AttachRequest): Promise<AttachResult> {
    const { deps } = this;
    const log = deps.log.child({ [F.containerID]: req.containerId, [F.ifName]: req.ifName, [F.netns]: req.netns });
    const netns = deps.resolveNetns(req.netns);
    const hostIf = hostVethName(req.containerId, req.ifName);
    const undo: Undo[] = [];
    let success = false;
    let pod: NetOps | null = null;
    // The IP reservation and the attachment record (two fsynced files, neither needing the other) run
    // alongside the link work, which they do not depend on: the veth's creation (~3 ms of kernel work)
    // hides them. Their undos are registered first, so a failure anywhere removes both once they settled.
    const record: AttachmentRecord = {
      containerId: req.containerId, ifName: req.ifName, network: req.network, netns: req.netns, hostIf, ipMasq: req.ipMasq, ipam: req.ipam,
    };
    const ipamP = deps.ipam.add(req.ipam, req.network, req.containerId, req.ifName, req.requestedIPs);
    const recordP = deps.records.put(record);
    const settled = Promise.allSettled([ipamP, recordP]);
    undo.push({ what: 'release IPs', run: async () => { if ((await settled)[0].status === 'fulfilled') await deps.ipam.del(req.ipam, req.network, req.containerId, req.ifName); } });
    undo.push({ what: 'delete the record', run: () => deps.records.delete(req.containerId, req.ifName) });
    try {
      const bridgeOpts: { mtu?: number; promisc?: boolean; mac?: string } = { promisc: req.promiscMode, mac: deps.bridgeMac(req.bridge) };
      if (req.mtu !== undefined) bridgeOpts.mtu = req.mtu;
      let bridge = await this.bridge(req.bridge, bridgeOpts);

      // One request: the pair, the host end on the bridge and up, both MACs chosen here (so the result needs
      // no lookup).
      const veth: VethSpec = { name: hostIf, peerName: req.ifName, peerNetns: netns, master: req.bridge, up: true, mac: randomMac(), peerMac: req.mac ?? randomMac() };
      if (req.mtu !== undefined) veth.mtu = req.mtu;
      const makeVeth = async () => {
        try {
          await deps.node.createVeth(veth);
        } catch (e) {
          if (e instanceof LinkNotFoundError && e.link === req.bridge) {
            // The bridge went away since this sandbox ensured it: make it again.
            bridge = await this.bridge(req.bridge, bridgeOpts, true);
            await deps.node.createVeth(veth);
          } else {
            if (!(e instanceof NodenetError) || e.code !== ErrorCode.LinkExists) throw e;
            // A leftover host veth of this very attachment (an ADD that crashed midway) is removed, so a retried ADD
            // converges instead of failing on "exists"; a taken name in the pod is the caller's error.
            if (!(await deps.node.getLink(hostIf))) throw new NodenetError(ErrorCode.LinkExists, `interface ${req.ifName} already exists in ${req.netns}`, { cause: e });
            log.info({ hostIf }, 'removing leftover host veth of an earlier, unfinished ADD');
            await deps.node.deleteLink(hostIf).catch(ignoreMissing);
            await deps.node.createVeth(veth);
          }
        }
      };
      // While a link worker creates the pair, this thread opens the pod's socket and brings its lo up.
      const vethP = makeVeth();
      let podOpen: { ok: true; ns: NetOps } | { ok: false; err: unknown };
      try {
        podOpen = { ok: true, ns: deps.openPod(netns) };
      } catch (err) {
        podOpen = { ok: false, err };
      }
      if (podOpen.ok) pod = podOpen.ns;
      const loP = podOpen.ok ? podOpen.ns.setUp('lo') : Promise.resolve();
      const [vethR, loR] = await Promise.allSettled([vethP, loP]);
      if (vethR.status === 'rejected') throw vethR.reason;
      undo.push({ what: `delete ${hostIf}`, run: () => deps.node.deleteLink(hostIf).catch(ignoreMissing) });
      if (!podOpen.ok) throw podOpen.err;
      if (loR.status === 'rejected') throw loR.reason;
      const podNs = podOpen.ns;
      await podNs.setUp(req.ifName);
      const ipam = await ipamP;
      if (ipam.ips.length === 0) throw new NodenetError(ErrorCode.IpamInvalid, 'IPAM returned no address');

      const routes: { dst: string; gw?: string }[] = [];
      for (const r of ipam.routes) routes.push(r.gw ? { dst: r.dst, gw: r.gw } : { dst: r.dst });
      const gw = ipam.ips.find((i) => i.gateway)?.gateway;
      if (req.isDefaultGateway && gw && !routes.some((r) => r.dst === '0.0.0.0/0')) routes.push({ dst: '0.0.0.0/0', gw });

      // The pod side (its socket), the node side (the node's socket) and the masquerade set at once,
      // while the record may still be being written. Each part's own steps stay in order.
      const podSide = async () => {
        // Routes need the address first: the gateway must be reachable.
        for (const ip of ipam.ips) await podNs.addAddress(req.ifName, ip.address);
        for (const r of routes) {
          const route: { dst: string; gw?: string; dev?: string } = { dst: r.dst === '0.0.0.0/0' ? 'default' : r.dst, dev: req.ifName };
          const via = r.gw ?? gw;
          if (via) route.gw = via;
          await podNs.addRoute(route);
        }
      };
      const nodeSide = async () => {
        if (req.hairpinMode) await deps.node.setHairpin(hostIf, true); // a new bridge port starts with hairpin off
        if (req.isGateway) {
          for (const ip of ipam.ips) {
            if (!ip.gateway) continue;
            await this.gatewayAddress(req.bridge, `${ip.gateway}/${parseIPNet(ip.address).prefix}`, req.forceAddress);
          }
          await deps.sysctl.set('net/ipv4/ip_forward', '1');
        }
      };
      // The masquerade set is nfnetlink's, not rtnetlink's: its elements go in alongside the link changes.
      const masqSide = async () => {
        if (req.ipMasq) {
          for (const ip of ipam.ips) {
            const entry = masqueradeEntry(ip.address);
            undo.push({ what: 'remove masquerade', run: () => deps.masq.del(entry) });
            await deps.masq.add(entry);
          }
        }
      };
      const parts = await Promise.allSettled([podSide(), nodeSide(), masqSide(), recordP]);
      const failed = parts.find((r): r is PromiseRejectedResult => r.status === 'rejected');
      if (failed) throw failed.reason;
      success = true;
      log.info({ [F.ip]: ipam.ips.map((i) => i.address), hostIf }, 'attachment added');
      const podIface: { name: string; mac: string; mtu?: number; sandbox?: string } = { name: req.ifName, mac: veth.peerMac!, sandbox: req.netns };
      if (req.mtu !== undefined) podIface.mtu = req.mtu;
      return {
        interfaces: [{ name: req.bridge, mac: bridge.mac }, { name: hostIf, mac: veth.mac! }, podIface],
        ips: ipam.ips.map((i) => (i.gateway ? { address: i.address, gateway: i.gateway, interface: 2 } : { address: i.address, interface: 2 })),
        routes,
        // The config's dns wins over what IPAM found (ipam.resolvConf), as in the bridge plugin.
        dns: req.dns && Object.keys(req.dns).length ? req.dns : (ipam.dns ?? {}),
      };
    } finally {
      pod?.close();
      if (!success) {
        await settled;
        for (const u of undo.reverse()) {
          try {
            await u.run();
          } catch (err) {
            log.warn({ err, step: u.what }, 'undo step failed while unwinding a failed ADD');
          }
        }
      }
    }
  }

  /**
   * Idempotent, best-effort. Only failures worth a retry are thrown.
   * The host end's name is known from (containerID, ifName) alone, so its deletion (the kernel's veth
   * teardown, most of a DEL) starts at once, while the IPs are found and released: the bridge plugin
   * also releases IPAM before it deletes the link.
   */
  async del(req: DelRequest): Promise<readonly string[]> {
    const { deps } = this;
    const log = deps.log.child({ [F.containerID]: req.containerId, [F.ifName]: req.ifName, [F.netns]: req.netns });
    const hostIf = hostVethName(req.containerId, req.ifName);
    const linkGone = deps.node.deleteLink(hostIf).then(
      () => true,
      (e: unknown) => {
        if (e instanceof LinkNotFoundError) return false;
        throw e;
      },
    );
    const release = async (record: AttachmentRecord | null): Promise<readonly string[]> => {
      // Which network(s) hold the IPs: the record's, else the config's, else any store holding this attachment.
      let held: { network: string; ipam: unknown; ips: readonly string[] }[];
      const network = record?.network ?? req.network;
      const raw = record ? record.ipam : req.ipam;
      if (network) held = [{ network, ipam: raw, ips: deps.ipam.addresses(raw, network, await deps.ipam.get(raw, network, req.containerId, req.ifName)) }];
      else held = (await deps.ipam.find(req.containerId, req.ifName)).map((f) => ({ ...f, ipam: undefined }));
      const ips = held.flatMap((h) => h.ips);
      // Masquerade first: it needs the IPs, which the IPAM release forgets. An address the config places has
      // its prefix (so the subnet); one it cannot place is bare, and only its pod entry can go.
      if (record ? record.ipMasq : req.ipMasq !== false) {
        for (const ip of ips) await deps.masq.del(ip.includes('/') ? masqueradeEntry(ip) : { ip });
      }
      for (const h of held) await deps.ipam.del(h.ipam, h.network, req.containerId, req.ifName);
      return ips;
    };
    // The record goes at the same time; should anything fail, it is put back for the retried DEL.
    const record = await deps.records.get(req.containerId, req.ifName);
    try {
      const [gone, ips] = await Promise.all([linkGone, release(record), deps.records.delete(req.containerId, req.ifName)]);
      if (!gone && req.netns) await this.deletePodEnd(req.netns, req.ifName);
      log.info({ [F.ip]: ips }, 'attachment deleted');
      return ips;
    } catch (e) {
      if (record) await deps.records.put(record).catch((pe: unknown) => log.warn({ [F.err]: pe }, 'cannot restore the attachment record after a failed DEL'));
      throw e;
    }
  }

  /** The pod end, when the host end was not there to take it along (a pair renamed or half-made by someone else). */
  private async deletePodEnd(netnsPath: string, ifName: string): Promise<void> {
    try {
      const pod = this.deps.openPod(this.deps.resolveNetns(netnsPath));
      try {
        await pod.deleteLink(ifName);
      } finally {
        pod.close();
      }
    } catch (err) {
      if (!(err instanceof NetnsNotFoundError) && !(err instanceof LinkNotFoundError)) throw err;
    }
  }

  /** Verifies the attachment against prevResult; throws CheckFailed naming the first mismatch. */
  async check(req: AttachRequest, prev: AttachResult): Promise<void> {
    const { deps } = this;
    const fail = (msg: string) => new NodenetError(ErrorCode.CheckFailed, `CHECK ${req.containerId}/${req.ifName}: ${msg}`);
    const netns = deps.resolveNetns(req.netns);
    const held = await deps.ipam.get(req.ipam, req.network, req.containerId, req.ifName);
    const pod = deps.openPod(netns);
    try {
      const link = await pod.getLink(req.ifName);
      if (!link) throw fail(`interface ${req.ifName} is missing from ${req.netns}`);
      if (!link.up) throw fail(`interface ${req.ifName} is down`);
      const want = prev.interfaces.find((i) => i.name === req.ifName && i.sandbox);
      if (want && want.mac && want.mac.toLowerCase() !== link.mac.toLowerCase()) throw fail(`interface ${req.ifName} has MAC ${link.mac}, prevResult says ${want.mac}`);
      const addrs = (await pod.listAddresses(req.ifName)).map((a) => a.address);
      for (const ip of prev.ips) {
        if (!addrs.includes(ip.address)) throw fail(`address ${ip.address} is not on ${req.ifName} (has ${addrs.join(', ') || 'none'})`);
        if (!held.includes(ip.address) && !held.includes(ip.address.split('/')[0]!)) throw fail(`address ${ip.address} is not reserved for this container in IPAM`);
      }
      const routes = await pod.listRoutes();
      for (const r of prev.routes) {
        const dst = r.dst === '0.0.0.0/0' ? ['0.0.0.0/0', 'default'] : [r.dst];
        if (!routes.some((k) => dst.includes(k.dst) && (!r.gw || k.gw === r.gw))) throw fail(`route ${r.dst}${r.gw ? ` via ${r.gw}` : ''} is missing`);
      }
    } finally {
      pod.close();
    }
    const hostIf = hostVethName(req.containerId, req.ifName);
    const host = await deps.node.getLink(hostIf);
    if (!host) throw fail(`host interface ${hostIf} is missing`);
    const bridge = await deps.node.getLink(req.bridge);
    if (!bridge) throw fail(`bridge ${req.bridge} is missing`);
    if (host.master !== undefined && host.master !== bridge.index) throw fail(`host interface ${hostIf} is not on bridge ${req.bridge}`);
  }

  /**
   * Removes every attachment of `network` not listed in `valid` (CNI GC with
   * cni.dev/valid-attachments): its veth, masquerade, record and IPs.
   */
  async gc(network: string, ipamRaw: unknown, valid: readonly { containerId: string; ifName: string }[]): Promise<string[]> {
    const keep = new Set(valid.map((v) => `${v.containerId}/${v.ifName}`));
    const released: string[] = [];
    for (const r of await this.deps.records.list()) {
      if (r.network !== network || keep.has(`${r.containerId}/${r.ifName}`)) continue;
      released.push(...(await this.del({ containerId: r.containerId, ifName: r.ifName, netns: '', network, ipam: r.ipam, ipMasq: r.ipMasq })));
    }
    released.push(...(await this.deps.ipam.gc(ipamRaw, network, valid.map((v) => ({ id: v.containerId, ifName: v.ifName })))));
    return released;
  }
}

/** A random locally administered unicast MAC, as the kernel's eth_random_addr makes. */
export function randomMac(): string {
  const b = randomBytes(6);
  b[0] = (b[0]! & 0xfe) | 0x02;
  return [...b].map((x) => x.toString(16).padStart(2, '0')).join(':');
}

function ignoreMissing(err: unknown): void {
  if (err instanceof LinkNotFoundError) return;
  throw err;
}
