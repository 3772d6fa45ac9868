/**
 * dns/forward: names outside the cluster domain, sent to the node's upstream resolvers, as CoreDNS's
 * `forward . /etc/resolv.conf` with `cache 30` in front (the kubeadm/k3s Corefile).
 *
 * Upstreams: the `nameserver` lines of a resolv.conf (parseResolvConf, pure), minus any that would be this
 * server itself (a loop: the same address and port, or a loopback/local address when we listen on the
 * unspecified one; CoreDNS has its `loop` plugin for this, the Deployment uses dnsPolicy Default). With no
 * upstream left, a query gets SERVFAIL at once: a lab without one must not wait on timeouts.
 *
 * An exchange: UDP first from a fresh socket (a random source port per query, and a random ID, against
 * spoofed answers), the reply accepted only from the upstream's address with our ID and our question;
 * a truncated (TC) reply is retried over TCP at the same upstream. Each attempt has its own timeout
 * (CoreDNS's read timeout, 2 s); a timeout or network error moves on to the next upstream, in
 * resolv.conf's order (CoreDNS's `policy sequential`; its default `random` would make the order
 * untestable and buys nothing with glibc's 3 nameservers). An upstream's rcode (NXDOMAIN, SERVFAIL) is
 * passed through as CoreDNS does without `failover`. When every upstream failed: SERVFAIL. Above
 * `maxConcurrent` upstream exchanges in flight, REFUSED (CoreDNS's `max_concurrent`).
 *
 * The cache is CoreDNS's `cache` plugin with the Corefile's `cache 30`: keyed by name (lowercased), type,
 * class, DO and CD; a positive answer (NOERROR with records) lives for its smallest TTL, a denial
 * (NXDOMAIN, or NOERROR without records) for min(SOA TTL, SOA minimum) (RFC 2308 5), both clamped to
 * [5 s, 30 s]; a denial without an SOA, a truncated reply and any other rcode are not cached (CoreDNS also
 * keeps SERVFAIL 5 s; we do not, so a recovered upstream is used at once). Two LRU maps (success, denial)
 * of `capacity` entries each (CoreDNS: 10,000 each, random eviction for success). Served from the cache,
 * each record's TTL is min(its TTL, the entry's) minus the whole seconds elapsed, as CoreDNS's toMsg.
 * Only forwarded answers are cached: the cluster's come from the in-memory index, always fresh.
 */
import dgram from 'node:dgram';
import { readFile } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import { randomInt } from 'node:crypto';
import packet from 'dns-packet';
import { F } from '../../../lib/log/fields.js';
import type { Logger } from '../../../lib/log/log.js';
import type { Clock } from '../../../lib/reconcile/clock.js';
import type { DnsMetrics } from './metrics.js';
import { FLAG, RCODE, TYPE, rcodeName, readHeader, readQuestion } from './wire.js';

export interface Upstream { readonly host: string; readonly port: number }

/** What resolv.conf says (resolv.conf(5)); only the nameservers are used here. */
export interface ResolvConf { readonly nameservers: readonly string[]; readonly search: readonly string[]; readonly options: readonly string[] }

/** Parses resolv.conf text (pure): `nameserver IP` lines (a `%zone` suffix dropped), `search`/`domain`, `options`; `#`/`;` comments. */
export function parseResolvConf(text: string): ResolvConf {
  const nameservers: string[] = [];
  let search: string[] = [];
  const options: string[] = [];
  for (const raw of text.split('\n')) {
    const line = raw.replace(/[#;].*$/, '').trim();
    const [key, ...rest] = line.split(/\s+/);
    if (key === 'nameserver' && rest[0] !== undefined) {
      const ip = rest[0].replace(/%.*$/, '');
      if (net.isIP(ip) !== 0 && !nameservers.includes(ip)) nameservers.push(ip);
    } else if (key === 'search' || key === 'domain') search = rest; // the last one wins, as in glibc
    else if (key === 'options') options.push(...rest);
  }
  return { nameservers, search, options };
}

const UNSPECIFIED = new Set(['0.0.0.0', '::', '']);
const isLoopback = (ip: string): boolean => ip === '::1' || /^127\./.test(ip) || /^::ffff:127\./i.test(ip);

/**
 * The upstreams for `nameservers`, without this server itself: same port as `listen` and the same address,
 * or (listening on the unspecified address) a loopback or one of `localAddresses`. Port 53.
 */
export function upstreamsFrom(nameservers: readonly string[], listen: Upstream | null, localAddresses: readonly string[] = []): Upstream[] {
  const self = (ip: string): boolean => {
    if (!listen || listen.port !== 53) return false;
    if (ip === listen.host) return true;
    return UNSPECIFIED.has(listen.host) && (isLoopback(ip) || localAddresses.includes(ip));
  };
  return nameservers.filter((ip) => !self(ip)).slice(0, 15).map((host) => ({ host, port: 53 }));
}

/** This host's (this network namespace's) interface addresses: upstreamsFrom's `localAddresses`. */
export function localAddresses(): string[] {
  return Object.values(os.networkInterfaces()).flatMap((list) => (list ?? []).map((a) => a.address.replace(/%.*$/, '')));
}

/** Reads `path` (e.g. /etc/resolv.conf) into upstreams (see upstreamsFrom); a missing file is none. */
export async function upstreamsFromResolvConf(path: string, listen: Upstream | null, localAddresses: readonly string[] = []): Promise<Upstream[]> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw e;
  }
  return upstreamsFrom(parseResolvConf(text).nameservers, listen, localAddresses);
}

export interface ForwardQuery {
  /** The question name lowercased (WireQuestion.lname): the cache key. */
  readonly lname: string;
  readonly qtype: number;
  readonly qclass: number;
  /** The question's wire (name, type, class), sent upstream as is. */
  readonly question: Buffer;
  /** DNSSEC OK and Checking Disabled, from the client: part of the key, passed upstream. */
  readonly do: boolean;
  readonly cd: boolean;
}

export interface ForwardResult {
  readonly rcode: number;
  /** The upstream's AD bit (the server passes it on only to clients that asked for DNSSEC). */
  readonly ad: boolean;
  readonly answers: packet.Answer[];
  readonly authorities: packet.Answer[];
  /** Without OPT (hop by hop). */
  readonly additionals: packet.Answer[];
  /** cache: served from the cache; upstream: exchanged now; none: no upstream answered (SERVFAIL) or refused. */
  readonly from: 'cache' | 'upstream' | 'none';
}

/** What the server needs of a forwarder (the fake in tests, the real one in the CLI). */
export interface Resolver {
  resolve(q: ForwardQuery): Promise<ForwardResult>;
}

export interface CacheOptions {
  /** Cap on any entry's life, seconds (Corefile `cache 30`). */
  readonly maxTtl?: number;
  /** Floor, seconds (CoreDNS's MINTTL default, 5). */
  readonly minTtl?: number;
  /** Entries per kind (success, denial). */
  readonly capacity?: number;
}

export interface ForwarderOptions {
  readonly upstreams: readonly Upstream[];
  readonly log: Logger;
  readonly clock: Clock;
  readonly metrics?: DnsMetrics | undefined;
  /** Per attempt (UDP, then TCP on TC), ms; CoreDNS's read timeout, 2000. */
  readonly timeoutMs?: number;
  /** Upstream exchanges in flight before REFUSED (CoreDNS `max_concurrent`). */
  readonly maxConcurrent?: number;
  /** Our EDNS0 payload size towards upstreams. */
  readonly udpSize?: number;
  /** false turns the cache off. */
  readonly cache?: CacheOptions | false;
}

type Kind = 'success' | 'denial';
interface Entry {
  readonly kind: Kind;
  readonly storedAt: number;
  /** Seconds the entry lives. */
  readonly ttl: number;
  readonly rcode: number;
  readonly ad: boolean;
  readonly answers: packet.Answer[];
  readonly authorities: packet.Answer[];
  readonly additionals: packet.Answer[];
}

class Timeout extends Error {
  override name = 'Timeout';
}

const hasTtl = (rr: packet.Answer): rr is packet.Answer & { ttl?: number } => rr.type !== 'OPT';
const ttlOf = (rr: packet.Answer): number => (hasTtl(rr) ? rr.ttl ?? 0 : Infinity);
const withTtl = (rrs: readonly packet.Answer[], cap: number, elapsed: number): packet.Answer[] =>
  rrs.map((rr) => (hasTtl(rr) ? ({ ...rr, ttl: Math.max(0, Math.min(rr.ttl ?? 0, cap) - elapsed) } as packet.Answer) : rr));

export class Forwarder implements Resolver {
  readonly upstreams: readonly Upstream[];
  private readonly timeoutMs: number;
  private readonly maxConcurrent: number;
  private readonly udpSize: number;
  private readonly cacheOn: boolean;
  private readonly maxTtl: number;
  private readonly minTtl: number;
  private readonly capacity: number;
  private readonly caches: Record<Kind, Map<string, Entry>> = { success: new Map(), denial: new Map() };
  private inflight = 0;
  private readonly log: Logger;

  constructor(private readonly o: ForwarderOptions) {
    this.upstreams = [...o.upstreams];
    this.timeoutMs = o.timeoutMs ?? 2000;
    this.maxConcurrent = o.maxConcurrent ?? 1000;
    this.udpSize = o.udpSize ?? 1232;
    this.cacheOn = o.cache !== false;
    const c = o.cache === false ? {} : o.cache ?? {};
    this.maxTtl = c.maxTtl ?? 30;
    this.minTtl = c.minTtl ?? 5;
    this.capacity = c.capacity ?? 10_000;
    this.log = o.log.child({ [F.subsys]: 'dns/forward' });
  }

  /** Entries in the cache by kind. */
  cacheEntries(): Record<Kind, number> {
    return { success: this.caches.success.size, denial: this.caches.denial.size };
  }

  async resolve(q: ForwardQuery): Promise<ForwardResult> {
    const key = `${q.lname}|${q.qtype}|${q.qclass}|${q.do ? 1 : 0}|${q.cd ? 1 : 0}`;
    if (this.cacheOn) {
      const hit = this.fromCache(key);
      this.o.metrics?.cacheLookup(hit ? hit.kind : null);
      if (hit) return hit.result;
    }
    if (this.upstreams.length === 0) return { rcode: RCODE.SERVFAIL, ad: false, answers: [], authorities: [], additionals: [], from: 'none' };
    if (this.inflight >= this.maxConcurrent) {
      this.o.metrics?.maxConcurrentReject();
      return { rcode: RCODE.REFUSED, ad: false, answers: [], authorities: [], additionals: [], from: 'none' };
    }
    this.inflight++;
    try {
      for (const up of this.upstreams) {
        const to = up.host.includes(':') ? `[${up.host}]:${up.port}` : `${up.host}:${up.port}`;
        const t0 = performance.now();
        try {
          const reply = await this.exchange(up, q);
          this.o.metrics?.upstream(to, rcodeName(reply.rcode), (performance.now() - t0) / 1000);
          if (this.cacheOn) this.store(key, reply);
          return reply;
        } catch (e) {
          this.o.metrics?.upstream(to, e instanceof Timeout ? 'timeout' : 'error', (performance.now() - t0) / 1000);
          this.log.debug({ [F.endpoint]: to, [F.err]: e }, 'upstream failed, trying the next');
        }
      }
    } finally {
      this.inflight--;
    }
    return { rcode: RCODE.SERVFAIL, ad: false, answers: [], authorities: [], additionals: [], from: 'none' };
  }

  private fromCache(key: string): { kind: Kind; result: ForwardResult } | null {
    for (const kind of ['success', 'denial'] as const) {
      const map = this.caches[kind];
      const e = map.get(key);
      if (!e) continue;
      const age = this.o.clock.now() - e.storedAt;
      if (age >= e.ttl * 1000 || age < 0) {
        map.delete(key);
        this.o.metrics?.cacheSize(kind, map.size);
        continue;
      }
      map.delete(key); // LRU: most recently used last
      map.set(key, e);
      const elapsed = Math.floor(age / 1000);
      return {
        kind,
        result: { rcode: e.rcode, ad: e.ad, answers: withTtl(e.answers, e.ttl, elapsed), authorities: withTtl(e.authorities, e.ttl, elapsed), additionals: withTtl(e.additionals, e.ttl, elapsed), from: 'cache' },
      };
    }
    return null;
  }

  private store(key: string, r: ForwardResult): void {
    let kind: Kind;
    let ttl: number;
    const all = [...r.answers, ...r.authorities, ...r.additionals];
    if (r.rcode === RCODE.NOERROR && r.answers.length > 0) {
      kind = 'success';
      ttl = Math.min(...all.map(ttlOf));
    } else if (r.rcode === RCODE.NXDOMAIN || (r.rcode === RCODE.NOERROR && r.answers.length === 0)) {
      const soa = r.authorities.find((rr): rr is packet.SoaAnswer => rr.type === 'SOA');
      if (!soa) return; // RFC 2308 5: no SOA, no negative caching
      kind = 'denial';
      ttl = Math.min(soa.ttl ?? 0, soa.data.minimum ?? 0, ...all.map(ttlOf));
    } else return;
    ttl = Math.min(Math.max(ttl, this.minTtl), this.maxTtl);
    const map = this.caches[kind];
    map.delete(key);
    map.set(key, { kind, storedAt: this.o.clock.now(), ttl, rcode: r.rcode, ad: r.ad, answers: r.answers, authorities: r.authorities, additionals: r.additionals });
    if (map.size > this.capacity) {
      const oldest = map.keys().next().value;
      if (oldest !== undefined) map.delete(oldest);
      this.o.metrics?.cacheEviction(kind);
    }
    this.o.metrics?.cacheSize(kind, map.size);
  }

  /** One upstream: UDP, then TCP when the reply is truncated. */
  private async exchange(up: Upstream, q: ForwardQuery): Promise<ForwardResult> {
    const id = randomInt(0, 65536);
    const query = this.query(id, q);
    let reply = await this.udp(up, id, q, query);
    if ((readHeader(reply)!.flags & FLAG.TC) !== 0) reply = await this.tcp(up, id, q, query);
    return this.parse(reply);
  }

  /** Header (RD, CD), the client's question, and an OPT with our size and the client's DO. */
  private query(id: number, q: ForwardQuery): Buffer {
    const head = Buffer.alloc(12);
    head.writeUInt16BE(id, 0);
    head.writeUInt16BE(FLAG.RD | (q.cd ? FLAG.CD : 0), 2);
    head.writeUInt16BE(1, 4);
    head.writeUInt16BE(1, 10);
    const opt = (packet as unknown as { answer: { encode(a: packet.Answer): Buffer } }).answer.encode({
      type: 'OPT', name: '.', udpPayloadSize: this.udpSize, extendedRcode: 0, ednsVersion: 0, flags: q.do ? packet.DNSSEC_OK : 0, flag_do: q.do, options: [],
    });
    return Buffer.concat([head, q.question, opt]);
  }

  /** A reply to us: our ID, QR set, our question (names compared case-insensitively). */
  private matches(msg: Buffer, id: number, q: ForwardQuery): boolean {
    const h = readHeader(msg);
    if (!h || h.id !== id || !h.qr || h.qdcount !== 1) return false;
    const rq = readQuestion(msg);
    return typeof rq !== 'string' && rq.lname === q.lname && rq.qtype === q.qtype && rq.qclass === q.qclass;
  }

  private udp(up: Upstream, id: number, q: ForwardQuery, query: Buffer): Promise<Buffer> {
    return new Promise((resolve, reject) => {
      const sock = dgram.createSocket(net.isIPv6(up.host) ? 'udp6' : 'udp4');
      let settled = false;
      const done = (err: Error | null, msg?: Buffer): void => {
        if (settled) return;
        settled = true;
        this.o.clock.clearTimeout(timer);
        sock.close();
        if (err) reject(err);
        else resolve(msg!);
      };
      const timer = this.o.clock.setTimeout(() => done(new Timeout(`udp ${up.host}:${up.port}: no reply in ${this.timeoutMs} ms`)), this.timeoutMs);
      sock.on('error', (e) => done(e));
      sock.on('message', (msg, rinfo) => {
        if (rinfo.address !== up.host || rinfo.port !== up.port || !this.matches(msg, id, q)) return; // not ours: keep waiting
        done(null, msg);
      });
      sock.send(query, up.port, up.host, (e) => {
        if (e) done(e);
      });
    });
  }

  private tcp(up: Upstream, id: number, q: ForwardQuery, query: Buffer): Promise<Buffer> {
    return new Promise((resolve, reject) => {
      const sock = net.connect({ host: up.host, port: up.port });
      let buf = Buffer.alloc(0);
      let settled = false;
      const done = (err: Error | null, msg?: Buffer): void => {
        if (settled) return;
        settled = true;
        this.o.clock.clearTimeout(timer);
        sock.destroy();
        if (err) reject(err);
        else resolve(msg!);
      };
      const timer = this.o.clock.setTimeout(() => done(new Timeout(`tcp ${up.host}:${up.port}: no reply in ${this.timeoutMs} ms`)), this.timeoutMs);
      sock.on('error', (e) => done(e));
      sock.on('close', () => done(new Error(`tcp ${up.host}:${up.port}: closed before a reply`)));
      sock.on('data', (chunk) => {
        buf = Buffer.concat([buf, chunk]);
        while (buf.length >= 2) {
          const len = buf.readUInt16BE(0);
          if (buf.length < 2 + len) break;
          const msg = buf.subarray(2, 2 + len);
          buf = buf.subarray(2 + len);
          if (this.matches(msg, id, q)) return done(null, msg);
        }
      });
      const frame = Buffer.alloc(2);
      frame.writeUInt16BE(query.length);
      sock.write(Buffer.concat([frame, query]));
    });
  }

  private parse(msg: Buffer): ForwardResult {
    const p = packet.decode(msg);
    const h = readHeader(msg)!;
    const opt = (p.additionals ?? []).find((rr): rr is packet.OptAnswer => rr.type === 'OPT');
    const rcode = (h.flags & 0xf) | ((opt?.extendedRcode ?? 0) << 4);
    const keep = (rrs: packet.Answer[] | undefined): packet.Answer[] => (rrs ?? []).filter((rr) => rr.type !== 'OPT' && (rr.type as string) !== 'UNKNOWN_' + TYPE.OPT);
    return { rcode, ad: h.ad, answers: keep(p.answers), authorities: keep(p.authorities), additionals: keep(p.additionals), from: 'upstream' };
  }
}
