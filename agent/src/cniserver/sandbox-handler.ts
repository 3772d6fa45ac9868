/**
 * cniserver/sandbox-handler: the agent's CniHandler. Parses the plugin's own config
 * (the shim has checked env, JSON and version), turns it into sandbox calls,
 * and encodes the result for the config's cniVersion.
 *
 * Calls for one container are serialised (a runtime never overlaps them, but
 * a replayed DEL from the queue may race a new call); different containers
 * run concurrently.
 */
import { ErrorCode, NodenetError } from '../../../lib/errors/errors.js';
import type { CniCallRequest, CniHandler } from './handler.js';
import { parseBridgeNetConf, type BridgeNetConf } from '../cnitypes/netconf.js';
import { parseCniArgs } from '../cnitypes/cni-args.js';
import { encodeResult, type CniResult } from '../cnitypes/result.js';
import type { Logger } from '../../../lib/log/log.js';
import { F } from '../../../lib/log/fields.js';
import { CNI_NAME_RE, isObject } from '../cnitypes/fields.js';
import type { AttachRequest, AttachResult, Sandbox } from '../sandbox/sandbox.js';

export interface CniHandlerDeps {
  readonly sandbox: Sandbox;
  /** MTU when neither the config nor anything else sets one (the overlay's, later). */
  readonly defaultMtu: number | null;
  /** Set while the agent is starting or stopping: ADD and STATUS answer "try again later". */
  readonly ready: () => boolean;
  readonly log: Logger;
}

export class SandboxCniHandler implements CniHandler {
  private readonly locks = new Map<string, Promise<unknown>>();

  constructor(private readonly deps: CniHandlerDeps) {}

  private serial<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const prev = this.locks.get(key) ?? Promise.resolve();
    const next = prev.then(fn, fn);
    const tail = next.catch(() => undefined);
    this.locks.set(key, tail);
    void tail.then(() => { if (this.locks.get(key) === tail) this.locks.delete(key); });
    return next;
  }

  private attachRequest(req: CniCallRequest, conf: BridgeNetConf): AttachRequest {
    const requested = [...conf.requestedIPs];
    const ipArg = parseCniArgs(req.args).get('IP');
    if (ipArg) for (const ip of ipArg.split(',')) if (!requested.includes(ip.trim())) requested.push(ip.trim());
    const mtu = conf.mtu ?? this.deps.defaultMtu ?? undefined;
    // The bridge plugin's order: runtimeConfig.mac, then args.cni.mac, then CNI_ARGS MAC=.
    const mac = conf.mac ?? cniArgsMac(req.args);
    return {
      containerId: req.containerId,
      ifName: req.ifName,
      netns: req.netns,
      network: conf.name,
      bridge: conf.bridge,
      isGateway: conf.isGateway,
      isDefaultGateway: conf.isDefaultGateway,
      forceAddress: conf.forceAddress,
      ipMasq: conf.ipMasq,
      mtu,
      hairpinMode: conf.hairpinMode,
      promiscMode: conf.promiscMode,
      ipam: conf.ipam,
      requestedIPs: requested.map((s) => s.split('/')[0]!),
      ...(mac ? { mac } : {}),
      dns: conf.dns as Readonly<Record<string, unknown>> | undefined,
    };
  }

  async add(req: CniCallRequest): Promise<Uint8Array> {
    if (!this.deps.ready()) throw new NodenetError(ErrorCode.TryAgainLater, 'the nodenet agent is not ready yet');
    const conf = parseBridgeNetConf(req.config);
    const result = await this.serial(req.containerId, () => this.deps.sandbox.add(this.attachRequest(req, conf)));
    const out: CniResult = mergePrev(conf.prevResult, result);
    return new TextEncoder().encode(encodeResult(out, conf.cniVersion));
  }

  async del(req: CniCallRequest): Promise<void> {
    let conf: BridgeNetConf | null = null;
    try {
      conf = parseBridgeNetConf(req.config);
    } catch (e) {
      // DEL is best-effort (SPEC): release what the attachment record, or failing that the
      // config's network name, or failing that a search of the IPAM stores, can find.
      this.deps.log.warn({ [F.containerID]: req.containerId, [F.ifName]: req.ifName, [F.err]: e }, 'DEL with a config that does not parse; releasing by attachment');
    }
    await this.serial(req.containerId, () =>
      this.deps.sandbox.del({
        containerId: req.containerId,
        ifName: req.ifName,
        netns: req.netns,
        network: conf?.name ?? networkNameOf(req.config),
        ipam: conf?.ipam,
        ipMasq: conf ? conf.ipMasq : undefined,
      }),
    );
  }

  async check(req: CniCallRequest): Promise<void> {
    const conf = parseBridgeNetConf(req.config);
    if (!conf.prevResult) throw new NodenetError(ErrorCode.InvalidConfig, 'prevResult: CHECK needs the result of the ADD');
    const prev = conf.prevResult;
    const asAttach: AttachResult = {
      interfaces: prev.interfaces.map((i) => ({ name: i.name, mac: i.mac ?? '', ...(i.sandbox ? { sandbox: i.sandbox } : {}) })),
      ips: prev.ips.map((i) => ({ address: i.address, interface: i.interface ?? 0, ...(i.gateway ? { gateway: i.gateway } : {}) })),
      routes: prev.routes.map((r) => ({ dst: r.dst, ...(r.gw ? { gw: r.gw } : {}) })),
      dns: {},
    };
    await this.serial(req.containerId, () => this.deps.sandbox.check(this.attachRequest(req, conf), asAttach));
  }

  async status(_req: CniCallRequest): Promise<void> {
    if (!this.deps.ready()) throw new NodenetError(ErrorCode.NotAvailable, 'the nodenet agent is starting');
  }

  async gc(req: CniCallRequest): Promise<void> {
    const conf = parseBridgeNetConf(req.config);
    const valid = conf.validAttachments ?? [];
    const released = await this.deps.sandbox.gc(conf.name, conf.ipam, valid);
    this.deps.log.info({ released, network: conf.name }, 'GC done');
  }
}

/** CNI_ARGS MAC=, validated like the config's (a unicast Ethernet MAC). @throws CNI 7 naming CNI_ARGS MAC. */
function cniArgsMac(args: string): string | undefined {
  const m = parseCniArgs(args).get('MAC');
  if (m === undefined || m === '') return undefined;
  if (!/^[0-9a-fA-F]{2}(?::[0-9a-fA-F]{2}){5}$/.test(m) || parseInt(m.slice(0, 2), 16) & 1) {
    throw new NodenetError(ErrorCode.InvalidConfig, `CNI_ARGS MAC: not a unicast Ethernet MAC address: ${JSON.stringify(m)}`, { details: 'CNI_ARGS' });
  }
  return m.toLowerCase();
}

/** The config's network name when it is readable and valid, else '' (a DEL then finds the attachment by ID). */
function networkNameOf(config: Uint8Array): string {
  try {
    const o: unknown = JSON.parse(new TextDecoder().decode(config));
    const name = isObject(o) ? o['name'] : undefined;
    return typeof name === 'string' && CNI_NAME_RE.test(name) ? name : '';
  } catch {
    return '';
  }
}

/** A plugin later in a chain appends to prevResult rather than replacing it. */
function mergePrev(prev: CniResult | undefined, r: AttachResult): CniResult {
  const base = prev ?? { interfaces: [], ips: [], routes: [], dns: {} };
  const off = base.interfaces.length;
  return {
    interfaces: [...base.interfaces, ...r.interfaces],
    ips: [...base.ips, ...r.ips.map((i) => ({ ...i, interface: i.interface + off }))],
    routes: [...base.routes, ...r.routes],
    dns: Object.keys(r.dns).length ? (r.dns as CniResult['dns']) : base.dns,
  };
}
