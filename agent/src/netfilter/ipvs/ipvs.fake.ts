/**
 * netfilter/ipvs.fake: a validating in-memory IPVS table, for unit tests of
 * the IPVS proxy mode. It refuses what the kernel refuses (errno names as
 * the kernel gives them, net/netfilter/ipvs/ip_vs_ctl.c):
 *   - a service added twice: EEXIST; edited or deleted when absent: ESRCH;
 *   - a scheduler the kernel does not have: ENOENT;
 *   - a real server added twice: EEXIST; edited or deleted when absent, or on
 *     a missing service: ENOENT / ESRCH; a weight outside 0..65535: ERANGE;
 *   - ports outside 1..65535 and malformed addresses: EINVAL.
 * A batch is applied op by op and stops at the first refusal, like the
 * kernel (IPVS has no transactions): the error says how many went in.
 * Tests set connection counters (setConns) to drive graceful termination,
 * and `available = false` models a kernel without IPVS.
 */
import { describeOp, IpvsApplyError, KNOWN_SCHEDULERS, noIpvsError, rsKey, vsKey, type Ipvs, type IpvsOp, type RealServerState, type VirtualServer, type VirtualServerState, type VsKey } from './ipvs-types.js';

interface FakeService {
  vs: VirtualServer;
  dests: Map<string, RealServerState>;
}

class RefusedError extends Error {
  constructor(readonly errno: string, msg: string) {
    super(`${msg}: ${errno}`);
  }
}

const IP_RE = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/;

function checkAddr(a: string, port: number, what: string): void {
  const m = IP_RE.exec(a);
  if (!m || m.slice(1).some((x) => Number(x) > 255)) throw new RefusedError('EINVAL', `${what} address ${a}`);
  if (!Number.isInteger(port) || port < 1 || port > 65535) throw new RefusedError('EINVAL', `${what} port ${port}`);
}

export class FakeIpvs implements Ipvs {
  readonly kind = 'fake' as const;
  private readonly services = new Map<VsKey, FakeService>();
  /** Every op applied, as describeOp spells it. */
  readonly journal: string[] = [];
  /** How many apply() calls (one spawn or one socket burst each). */
  applyCalls = 0;
  listCalls = 0;
  available = true;
  schedulers: readonly string[] = KNOWN_SCHEDULERS;
  /** Refuse the op whose description contains this, once. */
  failOn: string | null = null;
  closed = false;

  private svc(k: VsKey, errno = 'ESRCH'): FakeService {
    const s = this.services.get(k);
    if (!s) throw new RefusedError(errno, `no service ${k}`);
    return s;
  }

  private one(o: IpvsOp): void {
    if (this.failOn !== null && describeOp(o).includes(this.failOn)) {
      this.failOn = null;
      throw new RefusedError('EIO', 'injected failure');
    }
    const k = vsKey(o.vs);
    checkAddr(o.vs.address, o.vs.port, 'service');
    switch (o.op) {
      case 'add-service':
      case 'edit-service': {
        if (!this.schedulers.includes(o.vs.scheduler)) throw new RefusedError('ENOENT', `scheduler ${o.vs.scheduler} not found`);
        if (!Number.isInteger(o.vs.persistentTimeout) || o.vs.persistentTimeout < 0) throw new RefusedError('EINVAL', `timeout ${o.vs.persistentTimeout}`);
        if (o.op === 'add-service') {
          if (this.services.has(k)) throw new RefusedError('EEXIST', `service ${k}`);
          this.services.set(k, { vs: { ...o.vs }, dests: new Map() });
        } else {
          this.svc(k).vs = { ...o.vs };
        }
        return;
      }
      case 'del-service':
        this.svc(k);
        this.services.delete(k);
        return;
      case 'add-dest':
      case 'edit-dest': {
        const s = this.svc(k);
        checkAddr(o.rs.address, o.rs.port, 'real server');
        if (!Number.isInteger(o.rs.weight) || o.rs.weight < 0 || o.rs.weight > 65535) throw new RefusedError('ERANGE', `weight ${o.rs.weight}`);
        const rk = rsKey(o.rs);
        const had = s.dests.get(rk);
        if (o.op === 'add-dest' && had) throw new RefusedError('EEXIST', `real server ${rk} in ${k}`);
        if (o.op === 'edit-dest' && !had) throw new RefusedError('ENOENT', `real server ${rk} in ${k}`);
        s.dests.set(rk, { ...o.rs, activeConns: had?.activeConns ?? 0, inactiveConns: had?.inactiveConns ?? 0 });
        return;
      }
      case 'del-dest': {
        const s = this.svc(k);
        if (!s.dests.delete(rsKey(o.rs))) throw new RefusedError('ENOENT', `real server ${rsKey(o.rs)} in ${k}`);
        return;
      }
    }
  }

  async list(): Promise<VirtualServerState[]> {
    if (!this.available) throw noIpvsError('the fake kernel has no IPVS');
    this.listCalls++;
    return [...this.services.values()].map((s) => ({ ...s.vs, dests: [...s.dests.values()].map((d) => ({ ...d })) }));
  }

  async listDests(vs: Pick<VirtualServer, 'protocol' | 'address' | 'port'>): Promise<RealServerState[] | null> {
    if (!this.available) throw noIpvsError('the fake kernel has no IPVS');
    const s = this.services.get(vsKey(vs));
    return s ? [...s.dests.values()].map((d) => ({ ...d })) : null;
  }

  async apply(ops: readonly IpvsOp[]): Promise<void> {
    if (!this.available) throw noIpvsError('the fake kernel has no IPVS');
    this.applyCalls++;
    let done = 0;
    for (const o of ops) {
      try {
        this.one(o);
      } catch (e) {
        throw new IpvsApplyError(`ipvs ${describeOp(o)}: ${e instanceof RefusedError ? e.errno : String(e)} (${done} of ${ops.length} ops applied before it)`, done, { cause: e });
      }
      this.journal.push(describeOp(o));
      done++;
    }
  }

  async flush(): Promise<void> {
    this.services.clear();
    this.journal.push('flush');
  }

  close(): void {
    this.closed = true;
  }

  // -------------------------------------------------------------- test helpers

  /** Sets a real server's connection counters (what the kernel would count). */
  setConns(vs: string, rs: string, activeConns: number, inactiveConns = 0): void {
    const s = this.services.get(vs);
    const d = s?.dests.get(rs);
    if (!s || !d) throw new Error(`FakeIpvs.setConns: no real server ${rs} in ${vs}`);
    s.dests.set(rs, { ...d, activeConns, inactiveConns });
  }

  /** A compact dump, sorted: "TCP/10.96.0.10:80 rr [persistent 10800]" then "  -> 10.0.0.1:80 masq w1". */
  dump(): string {
    const out: string[] = [];
    for (const k of [...this.services.keys()].sort()) {
      const s = this.services.get(k)!;
      out.push(`${k} ${s.vs.scheduler}${s.vs.persistentTimeout ? ` persistent ${s.vs.persistentTimeout}` : ''}`);
      for (const rk of [...s.dests.keys()].sort()) {
        const d = s.dests.get(rk)!;
        out.push(`  -> ${rk} ${d.forward} w${d.weight}`);
      }
    }
    return out.join('\n');
  }

  get serviceCount(): number {
    return this.services.size;
  }
}
