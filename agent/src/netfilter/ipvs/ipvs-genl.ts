/**
 * netfilter/ipvs-genl: the Ipvs executor over the kernel's "IPVS" generic
 * netlink family, through the `netlink` package's generic netlink socket
 * (attributes by ipvs-genl-codec.ts). No process is spawned: one request
 * per op, about as cheap as an rtnetlink request (~0.1 ms), where
 * `ipvsadm -R` costs a spawn (20-50 ms here) plus its own per-op requests.
 * This is the executor the agent uses; ipvsadm.ts is the fallback and the
 * reference the VM tests compare it against.
 *
 * The socket is created inside the node's namespace (withNetnsSync): IPVS
 * tables are per network namespace and a netlink socket acts in the one it
 * was created in. Requests are serialised (two dumps on one socket fail).
 * The family id is resolved once, at open: a kernel without ip_vs has no
 * "IPVS" family (ENOENT), which becomes the NotAvailable error agent start
 * reports.
 */
import { createGenericNetlink, FlagsGet, genl, type GenericNetlinkSocket } from 'netlink';
import { ErrorCode, NodenetError } from '../../../../lib/errors/errors.js';
import { errnoOf } from '../../netlink/netlink-error.js';
import { withNetnsSync, type NetnsPath } from '../../netns/netns.js';
import {
  decodeDest, decodeInfoVersion, decodeService, encodeGetDests, encodeOp, IPVS_CMD, IPVS_GENL_NAME, IPVS_GENL_VERSION,
} from './ipvs-genl-codec.js';
import { describeOp, IpvsApplyError, noIpvsError, vsKey, type Ipvs, type IpvsOp, type RealServerState, type VirtualServer, type VirtualServerState } from './ipvs-types.js';

export class GenlIpvs implements Ipvs {
  readonly kind = 'genl' as const;
  private queue: Promise<unknown> = Promise.resolve();
  private closed = false;

  private constructor(private readonly sock: GenericNetlinkSocket, private readonly family: number, readonly version: string | null) {
    sock.socket.on('error', () => undefined); // an unhandled 'error' event would crash the process; requests report their own
  }

  /**
   * Opens the family in `netns` (or the caller's namespace).
   * @throws NodenetError(NotAvailable) when the kernel has no IPVS family.
   */
  static async open(netns?: NetnsPath): Promise<GenlIpvs> {
    const sock = netns ? withNetnsSync(netns, () => createGenericNetlink()) : createGenericNetlink();
    try {
      let family: number | undefined;
      try {
        const [m] = await sock.ctrlRequest(genl.Commands.GET_FAMILY, { familyName: IPVS_GENL_NAME }, { timeout: 5000 });
        family = m?.familyId;
      } catch (e) {
        throw noIpvsError(`the generic netlink family "IPVS" is not registered (${errnoOf(e) ?? String(e)})`, e);
      }
      if (family === undefined) throw noIpvsError('the generic netlink controller returned no id for "IPVS"');
      const [info] = (await sock.request(family, IPVS_CMD.GET_INFO, IPVS_GENL_VERSION, [], { timeout: 5000 }))[0];
      return new GenlIpvs(sock, family, info ? decodeInfoVersion(info.data) : null);
    } catch (e) {
      sock.socket.close();
      throw e;
    }
  }

  private req<T>(op: string, f: () => Promise<T>): Promise<T> {
    const run = async (): Promise<T> => {
      if (this.closed) throw new NodenetError(ErrorCode.Netlink, `ipvs ${op}: socket closed`);
      return f();
    };
    const p = this.queue.then(run, run);
    this.queue = p.catch(() => undefined);
    return p;
  }

  private async dump(cmd: number, data: Buffer): Promise<Buffer[]> {
    const [msgs] = await this.sock.request(this.family, cmd, IPVS_GENL_VERSION, data.length ? [data] : [], { flags: FlagsGet.DUMP, timeout: 30_000 });
    return msgs.map((m) => m.data);
  }

  async list(): Promise<VirtualServerState[]> {
    return this.req('list', async () => {
      const services = (await this.dump(IPVS_CMD.GET_SERVICE, Buffer.alloc(0))).map(decodeService).filter((v): v is VirtualServer => v !== null);
      const out: VirtualServerState[] = [];
      for (const vs of services) out.push({ ...vs, dests: await this.destsOf(vs) });
      return out;
    }).catch((e) => {
      throw e instanceof NodenetError ? e : new NodenetError(ErrorCode.RuleApply, `ipvs list: ${errnoOf(e) ?? String(e)}`, { cause: e });
    });
  }

  /** One GET_SERVICE (not a dump): ESRCH when the kernel has no such virtual service. */
  private async serviceExists(vs: Pick<VirtualServer, 'protocol' | 'address' | 'port'>): Promise<boolean> {
    try {
      await this.sock.request(this.family, IPVS_CMD.GET_SERVICE, IPVS_GENL_VERSION, [encodeGetDests(vs)], { timeout: 10_000 });
      return true;
    } catch (e) {
      if (errnoOf(e) === 'ESRCH') return false;
      throw e;
    }
  }

  private async destsOf(vs: Pick<VirtualServer, 'protocol' | 'address' | 'port'>): Promise<RealServerState[]> {
    return (await this.dump(IPVS_CMD.GET_DEST, encodeGetDests(vs))).map(decodeDest).filter((d): d is RealServerState => d !== null);
  }

  async listDests(vs: Pick<VirtualServer, 'protocol' | 'address' | 'port'>): Promise<RealServerState[] | null> {
    return this.req(`listDests ${vsKey(vs)}`, async () => {
      try {
        const dests = await this.destsOf(vs);
        // The kernel answers a dump of a missing service's destinations with an empty dump, not ESRCH
        // (ip_vs_genl_dump_dests); an empty answer is checked with a GET of the service itself.
        if (dests.length === 0 && !(await this.serviceExists(vs))) return null;
        return dests;
      } catch (e) {
        if (errnoOf(e) === 'ESRCH') return null; // no such service
        throw new NodenetError(ErrorCode.RuleApply, `ipvs listDests ${vsKey(vs)}: ${errnoOf(e) ?? String(e)}`, { cause: e });
      }
    });
  }

  async apply(ops: readonly IpvsOp[]): Promise<void> {
    await this.req(`apply ${ops.length} ops`, async () => {
      let done = 0;
      for (const o of ops) {
        const { cmd, data } = encodeOp(o);
        try {
          await this.sock.request(this.family, cmd, IPVS_GENL_VERSION, [data], { timeout: 10_000 });
        } catch (e) {
          throw new IpvsApplyError(`ipvs ${describeOp(o)}: ${errnoOf(e) ?? String(e)} (${done} of ${ops.length} ops applied before it)`, done, { cause: e });
        }
        done++;
      }
    });
  }

  async flush(): Promise<void> {
    await this.req('flush', async () => {
      try {
        await this.sock.request(this.family, IPVS_CMD.FLUSH, IPVS_GENL_VERSION, [], { timeout: 10_000 });
      } catch (e) {
        throw new NodenetError(ErrorCode.RuleApply, `ipvs flush: ${errnoOf(e) ?? String(e)}`, { cause: e });
      }
    });
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.sock.socket.close();
  }
}
