/**
 * ipam: host-local-style IP address management for the sandbox (CNI ADD,
 * DEL, CHECK, GC), one Store per CNI network.
 *
 * Owns: which attachment (containerID, ifName) holds which IPv4 address of a
 * network's range sets. Each ADD takes one address per range set (config
 * order) and returns them with the config's routes. Every operation runs
 * entirely under its store's lock, so concurrent ADDs for one network are
 * serialised and never see a half-done allocation.
 *
 * Assumes: the agent is the only writer of its data dir (the disk store's
 * flock still makes a second process wait rather than corrupt it).
 * Semantics follow containernetworking/plugins host-local: round-robin,
 * gateway excluded, DEL idempotent, GC keeps exactly the valid attachments.
 * Differences: a retried ADD returns the address it already holds instead of
 * failing, and a failed ADD releases only what that call reserved.
 */
import { readdirSync } from 'node:fs';
import { type IPv4 } from '../../../lib/net/ip.js';
import { F } from '../../../lib/log/fields.js';
import { silentLogger, type Logger } from '../../../lib/log/log.js';
import { ErrorCode, NodenetError } from '../../../lib/errors/errors.js';
import { allocate, type Allocation } from './allocator.js';
import { compareIPs, parseNetworkName, type IpamConf, type Route } from './config.js';
import { ipamInvalid } from './ipam-errors.js';
import { parseIPv4Field } from './range.js';
import { DiskStore, type DiskStoreOptions } from './disk-store.js';
import { rangeFor, rangeSetToString } from './range-set.js';
import { assertValidOwner, reservationMatches, type Attachment, type Store } from './store.js';

export interface IpConfig {
  /** "a.b.c.d/nn" */
  readonly address: string;
  readonly gateway?: IPv4;
}

export interface IpamResult {
  /** One per range set, in config order. */
  readonly ips: IpConfig[];
  readonly routes: Route[];
}

export interface IpamAddRequest extends Attachment {
  /** Dotted IPv4 strings (validated here): at most one per range set; each must lie in some range set. */
  readonly requestedIPs?: readonly string[];
}

export interface IpamDeps {
  /** The store of a network (under `dataDir` when the config sets ipam.dataDir); may return the same instance on every call. */
  storeFor(network: string, dataDir?: string): Store;
  /** The networks that have a store in the default data dir. */
  networks?(): string[];
  log?: Logger;
}

export class Ipam {
  private readonly log: Logger;

  constructor(private readonly deps: IpamDeps) {
    this.log = (deps.log ?? silentLogger()).child({ [F.subsys]: 'ipam' });
  }

  /**
   * Allocate one address per range set of `conf` for (id, ifName).
   * Idempotent for a retried ADD: addresses already held are returned again.
   * On failure, addresses reserved by this call are released before throwing.
   * Errors: IpamInvalid (bad requested IP, or one already taken), IpamExhausted, IpamStore.
   */
  async add(conf: IpamConf, req: IpamAddRequest): Promise<IpamResult> {
    assertValidOwner(req.id, req.ifName);
    // Assign each requested IP to the one range set that contains it, before touching the store.
    const requested = new Map<number, IPv4>();
    for (const raw of req.requestedIPs ?? []) {
      const ip = parseIPv4Field(raw, 'requested IP');
      const i = conf.rangeSets.findIndex((s) => rangeFor(s, ip) !== undefined);
      if (i < 0) throw ipamInvalid('requested IP', `${ip} is not in any range set of network ${conf.name}`);
      const other = requested.get(i);
      if (other !== undefined && other !== ip) {
        throw ipamInvalid('requested IP', `${other} and ${ip} are both in range set ${rangeSetToString(conf.rangeSets[i]!)}`);
      }
      requested.set(i, ip);
    }

    const store = this.deps.storeFor(conf.name, conf.dataDir);
    return store.withLock(async () => {
      const done: Allocation[] = [];
      try {
        for (const [i, set] of conf.rangeSets.entries()) {
          const requestedIP = requested.get(i);
          done.push(
            await allocate(store, set, {
              rangeId: String(i),
              id: req.id,
              ifName: req.ifName,
              ...(requestedIP === undefined ? {} : { requestedIP }),
            }),
          );
        }
      } catch (e) {
        for (const a of done) {
          if (a.existing) continue;
          // Best effort: the allocation error is the one to report; a leftover is DEL's or GC's to free.
          await store.release(a.ip).catch((re: unknown) =>
            this.log.warn({ [F.containerID]: req.id, [F.ifName]: req.ifName, [F.ip]: a.ip, [F.err]: re }, 'ipam add rollback failed'),
          );
        }
        throw e;
      }
      this.log.debug(
        { [F.containerID]: req.id, [F.ifName]: req.ifName, [F.ip]: done.map((a) => a.address), reused: done.some((a) => a.existing) },
        'ipam add',
      );
      return {
        ips: done.map((a) => (a.gateway === undefined ? { address: a.address } : { address: a.address, gateway: a.gateway })),
        routes: conf.routes.map((r) => ({ ...r })),
      };
    });
  }

  /** Release everything (id, ifName) holds in `network`. Idempotent: an unknown attachment or network is success. */
  async del(network: string, id: string, ifName: string, dataDir?: string): Promise<void> {
    assertValidOwner(id, ifName);
    const store = this.deps.storeFor(parseNetworkName(network, 'network'), dataDir);
    const released = await store.withLock(() => store.releaseByID(id, ifName));
    this.log.debug({ [F.containerID]: id, [F.ifName]: ifName, [F.ip]: released }, 'ipam del');
  }

  /** The addresses (id, ifName) holds in `network`, ascending; [] if none. Read-only. */
  async get(network: string, id: string, ifName: string, dataDir?: string): Promise<IPv4[]> {
    assertValidOwner(id, ifName);
    const store = this.deps.storeFor(parseNetworkName(network, 'network'), dataDir);
    return store.withLock(() => store.getByID(id, ifName));
  }

  /** Every network of the default data dir where (id, ifName) holds addresses. Read-only. */
  async find(id: string, ifName: string): Promise<{ network: string; ips: IPv4[] }[]> {
    assertValidOwner(id, ifName);
    const out: { network: string; ips: IPv4[] }[] = [];
    for (const network of this.deps.networks?.() ?? []) {
      const store = this.deps.storeFor(network);
      const ips = await store.withLock(() => store.getByID(id, ifName));
      if (ips.length) out.push({ network, ips });
    }
    return out;
  }

  /**
   * The addresses (id, ifName) holds in conf's range sets, ascending. Throws
   * CheckFailed if it holds none in some range set (CHECK after a lost ADD).
   */
  async check(conf: IpamConf, id: string, ifName: string): Promise<IPv4[]> {
    assertValidOwner(id, ifName);
    const store = this.deps.storeFor(conf.name, conf.dataDir);
    const held = await store.withLock(() => store.getByID(id, ifName));
    for (const [i, set] of conf.rangeSets.entries()) {
      if (!held.some((ip) => rangeFor(set, ip) !== undefined)) {
        throw new NodenetError(
          ErrorCode.CheckFailed,
          `ipam: ${id}/${ifName} holds no address in range set ${i} (${rangeSetToString(set)}) of network ${conf.name}`,
        );
      }
    }
    return held.filter((ip) => conf.rangeSets.some((s) => rangeFor(s, ip) !== undefined)).sort(compareIPs);
  }

  /**
   * Release every reservation of `network` whose attachment is not in `valid`
   * (CNI GC). A legacy record (no ifName) is kept if its id appears in `valid`.
   * Records with an unreadable owner are never valid and so are released.
   * Returns the released IPs, ascending.
   */
  async gc(network: string, valid: readonly Attachment[], dataDir?: string): Promise<IPv4[]> {
    const store = this.deps.storeFor(parseNetworkName(network, 'network'), dataDir);
    const released = await store.withLock(async () => {
      const out: IPv4[] = [];
      for (const r of await store.listAll()) {
        const keep = valid.some((a) => a.id !== '' && reservationMatches(r, a.id, a.ifName));
        if (!keep) {
          await store.release(r.ip);
          out.push(r.ip);
        }
      }
      return out;
    });
    if (released.length) this.log.info({ [F.ip]: released }, 'ipam gc released addresses');
    return released;
  }
}

/**
 * The agent's IPAM: one DiskStore per network under `dataDir` (or under the
 * config's ipam.dataDir; host-local's default is /var/lib/cni/networks),
 * created on first use and reused.
 */
export function createDiskIpam(dataDir: string, opts: DiskStoreOptions & { log?: Logger } = {}): Ipam {
  const stores = new Map<string, DiskStore>();
  const { log, ...storeOpts } = opts;
  return new Ipam({
    storeFor(network, dir = dataDir) {
      const key = `${dir}\0${network}`;
      let s = stores.get(key);
      if (!s) stores.set(key, (s = new DiskStore(dir, network, storeOpts)));
      return s;
    },
    networks() {
      try {
        return readdirSync(dataDir, { withFileTypes: true }).filter((d) => d.isDirectory()).map((d) => d.name);
      } catch {
        return [];
      }
    },
    ...(log ? { log } : {}),
  });
}
