/**
 * dns/server: the network side of `nodenet dns` (issue 30): CoreDNS's core/dnsserver with the plugins the
 * kubeadm Corefile chains (`kubernetes cluster.local in-addr.arpa ip6.arpa { pods insecure; fallthrough
 * in-addr.arpa ip6.arpa }`, `forward . /etc/resolv.conf`, `cache 30`) plus the `any` plugin, over UDP and TCP.
 *
 * Wire format: the `dns-packet` npm package (5.x, mafintosh): well kept and widely used (multicast-dns,
 * bonjour and ~60 M weekly downloads), it encodes and decodes every RR type we meet, OPT included; the
 * few byte-level checks it should not be trusted with (header-only errors, the question's limits, the
 * echoed question, a pointer to it) are in wire.ts.
 *
 * One query, in CoreDNS's order (miekg/dns's DefaultMsgAcceptFunc, then core/dnsserver ServeDNS):
 * - fewer than 12 bytes, or QR set (a response: answering could loop or amplify): dropped, no reply;
 * - opcode other than QUERY (NOTIFY, UPDATE...): NOTIMP, header only, opcode echoed (miekg/dns answers
 *   NOTIFY too, then CoreDNS's plugins fail it; we have no use for NOTIFY);
 * - QDCOUNT != 1, ANCOUNT > 1, NSCOUNT > 1, ARCOUNT > 2, a question past RFC 1035's limits (a label over
 *   63, a name over 255 octets, a compression pointer that does not go backwards: loops included, see
 *   wire.ts), anything dns-packet cannot decode, or two OPT records: FORMERR, header only (as miekg/dns);
 * - class other than IN: REFUSED (core/dnsserver without the chaos plugin);
 * - EDNS version > 0: BADVERS (extended rcode 16, OPT version 0), RFC 6891 6.1.3 / CoreDNS edns.Version;
 * - type ANY: the `any` plugin's RFC 8482 reply, HINFO "ANY obsoleted" "See RFC 8482", TTL 8482, for every
 *   name (the plugin sits before kubernetes and forward). Chosen over the kubernetes plugin's own ANY
 *   behaviour (a NODATA after a fake A lookup, and forward sending ANY on upstream) because it is the
 *   documented, cheap, RFC behaviour and cannot be used for amplification;
 * - AXFR/IXFR: REFUSED (no transfer plugin; the kubernetes plugin refuses them too);
 * - a name the record index answers (records.ts, the cluster domain and the reverse names it has a PTR
 *   for): authoritative (AA), NXDOMAIN/NODATA with the zone's SOA in authority as CoreDNS's BackendError;
 *   an ExternalName's CNAME is chased (in the index, else through the forwarder, up to 8 links) as
 *   CoreDNS's plugin.A does; before the first index (not synced) a cluster name gets SERVFAIL, as the
 *   kubernetes plugin before HasSynced, while reverse names fall through to forward;
 * - anything else: the forwarder (forward.ts), not authoritative.
 * Every reply has RA set, ID, RD and CD copied, the question echoed as sent, and an OPT (our payload size,
 * 1232, the DNS flag day's; DO echoed) when the query had one. Over UDP a reply larger than the client's
 * size (512 without EDNS0, else its OPT's size, at least 512, at most maxUdpSize) goes out with TC and no
 * records, so the client retries over TCP (CoreDNS's ScrubWriter truncates to what fits; dropping all is
 * RFC 2181 9's simpler choice).
 *
 * TCP (RFC 7766): 2-byte length framing, any number of queries per connection, answered as they
 * complete (pipelined, possibly out of order), reading paused while `maxPipelined` are in flight; a
 * connection is closed after `idleMs` without a query (CoreDNS: 10 s) or `readMs` inside a frame (3 s);
 * at most `maxConnections` at once (further ones are closed by the listener). A frame's length field caps
 * it at 65535 bytes, the most we ever buffer per connection.
 *
 * Nothing a client sends can throw out of the handler: an unexpected error answers SERVFAIL (counted as
 * coredns_panics_total) and the server keeps serving. Per-query logs only at debug (too hot).
 */
import dgram from 'node:dgram';
import net from 'node:net';
import type packet from 'dns-packet';
import dnsPacket from 'dns-packet';
import { F } from '../../../lib/log/fields.js';
import type { Logger } from '../../../lib/log/log.js';
import type { Clock } from '../../../lib/reconcile/clock.js';
import type { ForwardResult, Resolver } from './forward.js';
import { DnsMetrics, ZONE_DROPPED, type PluginLabel } from './metrics.js';
import { DEFAULT_DOMAIN, DEFAULT_TTL, type DnsIndex, type Rr } from './records.js';
import { CLASS_IN, FLAG, RCODE, TYPE, encodeMessage, encodeQuestion, rcodeName, readHeader, readQuestion, typeName, type Message } from './wire.js';

export interface ListenAddress { readonly host: string; readonly port: number }

export interface DnsServerOptions {
  /** UDP and TCP on this address; port 0: one free port, the same for both (so `dig -p` retries over TCP). */
  readonly listen: ListenAddress;
  /** The index to answer from; null until the first lists arrived (then cluster names get SERVFAIL). */
  readonly records: () => DnsIndex | null;
  /** Where other names go; null: SERVFAIL at once for them. */
  readonly forwarder: Resolver | null;
  readonly log: Logger;
  readonly clock: Clock;
  readonly metrics?: DnsMetrics | undefined;
  /** The cluster domain, for SERVFAIL before the first index (the index's own domain after). */
  readonly domain?: string;
  /** TTL of the zone's SOA (records.ts's TTL, 5). */
  readonly ttl?: number;
  /** Our EDNS0 payload size, advertised in replies (1232). */
  readonly udpSize?: number;
  /** The largest UDP reply we send, whatever the client advertises (4096). */
  readonly maxUdpSize?: number;
  readonly tcp?: { readonly idleMs?: number; readonly readMs?: number; readonly maxConnections?: number; readonly maxPipelined?: number };
}

/** The result of handling one message: the reply (null: dropped) and what metrics need. */
export interface Handled {
  readonly reply: Buffer | null;
  readonly rcode: number;
  readonly zone: string;
  readonly plugin: PluginLabel;
  readonly qtype: string;
  readonly do: boolean;
}

const MAX_CNAME_CHAIN = 8;

const toPacket = (rr: Rr): packet.Answer =>
  rr.type === 'SRV' && typeof rr.data === 'object' ? { type: 'SRV', name: rr.name, ttl: rr.ttl, data: rr.data } : ({ type: rr.type, name: rr.name, ttl: rr.ttl, data: rr.data } as packet.Answer);

const inZone = (lname: string, zone: string): boolean => lname === zone || lname.endsWith(`.${zone}`);

export class DnsServer {
  readonly metrics: DnsMetrics;
  private udp: dgram.Socket | null = null;
  private tcp: net.Server | null = null;
  private readonly conns = new Set<net.Socket>();
  private readonly log: Logger;
  private readonly serials = new WeakMap<DnsIndex, number>();
  private readonly domain: string;
  private readonly ttl: number;
  private readonly udpSize: number;
  private readonly maxUdpSize: number;
  private readonly idleMs: number;
  private readonly readMs: number;
  private readonly maxConnections: number;
  private readonly maxPipelined: number;
  private ports: { udp: number; tcp: number } | null = null;

  constructor(private readonly o: DnsServerOptions) {
    this.metrics = o.metrics ?? new DnsMetrics();
    this.log = o.log.child({ [F.subsys]: 'dns/server' });
    this.domain = (o.domain ?? DEFAULT_DOMAIN).toLowerCase().replace(/\.$/, '');
    this.ttl = o.ttl ?? DEFAULT_TTL;
    this.udpSize = o.udpSize ?? 1232;
    this.maxUdpSize = o.maxUdpSize ?? 4096;
    this.idleMs = o.tcp?.idleMs ?? 10_000;
    this.readMs = o.tcp?.readMs ?? 3_000;
    this.maxConnections = o.tcp?.maxConnections ?? 1000;
    this.maxPipelined = o.tcp?.maxPipelined ?? 64;
  }

  /** Binds UDP and TCP; resolves with the ports (equal unless the listen port was taken for TCP). */
  async start(): Promise<{ udpPort: number; tcpPort: number }> {
    const { host, port } = this.o.listen;
    for (let attempt = 0; ; attempt++) {
      const udp = await this.bindUdp(host, port);
      const udpPort = udp.address().port;
      try {
        const tcp = await this.listenTcp(host, udpPort);
        this.udp = udp;
        this.tcp = tcp;
        this.ports = { udp: udpPort, tcp: udpPort };
        break;
      } catch (e) {
        udp.close();
        // Port 0: the kernel's free UDP port may be taken for TCP; pick again.
        if (port !== 0 || attempt >= 20 || (e as NodeJS.ErrnoException).code !== 'EADDRINUSE') throw e;
      }
    }
    this.metrics.setServer(net.isIP(host) && !['0.0.0.0', '::'].includes(host) ? `dns://${host.includes(':') ? `[${host}]` : host}:${this.ports.udp}` : `dns://:${this.ports.udp}`);
    this.log.info({ [F.endpoint]: `${host}:${this.ports.udp}` }, 'DNS server listening (UDP and TCP)');
    return { udpPort: this.ports.udp, tcpPort: this.ports.tcp };
  }

  /** Stops listening and closes every TCP connection. Idempotent. */
  async close(): Promise<void> {
    const udp = this.udp;
    const tcp = this.tcp;
    this.udp = null;
    this.tcp = null;
    for (const c of this.conns) c.destroy();
    this.conns.clear();
    await Promise.all([
      udp ? new Promise<void>((r) => udp.close(() => r())) : undefined,
      tcp ? new Promise<void>((r) => tcp.close(() => r())) : undefined,
    ]);
  }

  private bindUdp(host: string, port: number): Promise<dgram.Socket> {
    return new Promise((resolve, reject) => {
      const sock = dgram.createSocket({ type: net.isIPv6(host) ? 'udp6' : 'udp4' });
      sock.once('error', reject);
      sock.bind(port, host, () => {
        sock.off('error', reject);
        sock.on('error', (e) => this.log.warn({ [F.err]: e }, 'UDP socket error'));
        sock.on('message', (msg, rinfo) => void this.onUdp(sock, msg, rinfo));
        resolve(sock);
      });
    });
  }

  private listenTcp(host: string, port: number): Promise<net.Server> {
    return new Promise((resolve, reject) => {
      const srv = net.createServer((s) => this.onTcp(s));
      srv.maxConnections = this.maxConnections;
      srv.once('error', reject);
      srv.listen({ host, port, exclusive: true }, () => {
        srv.off('error', reject);
        srv.on('error', (e) => this.log.warn({ [F.err]: e }, 'TCP listener error'));
        resolve(srv);
      });
    });
  }

  private async onUdp(sock: dgram.Socket, msg: Buffer, rinfo: dgram.RemoteInfo): Promise<void> {
    const reply = await this.serve(msg, 'udp', rinfo.family === 'IPv6' ? 2 : 1);
    if (reply && this.udp === sock) {
      sock.send(reply, rinfo.port, rinfo.address, (e) => {
        if (e) this.log.debug({ [F.err]: e }, 'UDP reply not sent');
      });
    }
  }

  private onTcp(s: net.Socket): void {
    this.conns.add(s);
    const family = s.remoteFamily === 'IPv6' ? 2 : 1;
    let chunks: Buffer[] = [];
    let buffered = 0;
    let pending = 0;
    let timer: unknown = null;
    const arm = (): void => {
      if (timer !== null) this.o.clock.clearTimeout(timer);
      timer = null;
      if (s.destroyed) return;
      if (buffered > 0) timer = this.o.clock.setTimeout(() => s.destroy(), this.readMs);
      else if (pending === 0) timer = this.o.clock.setTimeout(() => s.destroy(), this.idleMs);
    };
    // Backpressure: stop reading while maxPipelined queries are in flight or the client is not reading
    // its replies (the socket's write buffer is over its high-water mark), so one client's memory is bounded.
    const resumeIfRoom = (): void => {
      if (pending < this.maxPipelined && !s.writableNeedDrain && s.isPaused() && !s.destroyed) s.resume();
    };
    s.on('drain', resumeIfRoom);
    s.on('data', (chunk: Buffer) => {
      chunks.push(chunk);
      buffered += chunk.length;
      if (buffered >= 2) {
        let buf = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks);
        while (buf.length >= 2 && buf.length >= 2 + buf.readUInt16BE(0)) {
          const len = buf.readUInt16BE(0);
          const frame = buf.subarray(2, 2 + len);
          buf = buf.subarray(2 + len);
          pending++;
          if (pending >= this.maxPipelined || s.writableNeedDrain) s.pause();
          void this.serve(frame, 'tcp', family).then((reply) => {
            pending--;
            if (reply && !s.destroyed) {
              const head = Buffer.alloc(2);
              head.writeUInt16BE(reply.length);
              s.write(Buffer.concat([head, reply]));
            }
            resumeIfRoom();
            arm();
          });
        }
        chunks = buf.length > 0 ? [buf] : [];
        buffered = buf.length;
      }
      arm();
    });
    s.on('error', (e) => this.log.debug({ [F.err]: e }, 'TCP connection error'));
    s.on('close', () => {
      if (timer !== null) this.o.clock.clearTimeout(timer);
      timer = null;
      this.conns.delete(s);
    });
    arm();
  }

  /** Handles one message from a socket: the reply to send, never throws; reports metrics. */
  async serve(msg: Buffer, proto: 'udp' | 'tcp', family: 1 | 2): Promise<Buffer | null> {
    const t0 = performance.now();
    let h: Handled;
    try {
      h = await this.handle(msg, proto);
    } catch (e) {
      this.metrics.panics.inc();
      this.log.error({ [F.err]: e }, 'DNS query handler failed: SERVFAIL');
      const hdr = readHeader(msg);
      if (!hdr) return null;
      h = { reply: encodeMessage({ id: hdr.id, flags: (hdr.flags & FLAG.RD) | FLAG.RA, rcode: RCODE.SERVFAIL }, null), rcode: RCODE.SERVFAIL, zone: ZONE_DROPPED, plugin: '', qtype: 'other', do: false };
    }
    if (h.reply) {
      this.metrics.report({ zone: h.zone, proto, family, qtype: h.qtype, rcode: rcodeName(h.rcode), plugin: h.plugin, do: h.do, requestBytes: msg.length, responseBytes: h.reply.length, seconds: (performance.now() - t0) / 1000 });
      if (this.log.isLevelEnabled('debug')) this.log.debug({ [F.code]: rcodeName(h.rcode), [F.kind]: h.qtype, [F.reason]: h.plugin }, 'DNS query');
    }
    return h.reply;
  }

  /** The reply to one message (pure but for the index, the forwarder and the clock). */
  async handle(msg: Buffer, proto: 'udp' | 'tcp'): Promise<Handled> {
    const hdr = readHeader(msg);
    const dropped = (reply: Buffer | null, rcode: number, qtype = 'other', d = false): Handled => ({ reply, rcode, zone: ZONE_DROPPED, plugin: '', qtype, do: d });
    if (!hdr || hdr.qr) return dropped(null, 0);
    const rdcd = hdr.flags & (FLAG.RD | FLAG.CD);
    const headerOnly = (rcode: number, opcode = 0): Buffer => encodeMessage({ id: hdr.id, flags: (opcode << 11) | (hdr.flags & FLAG.RD) | FLAG.RA, rcode }, null);
    if (hdr.opcode !== 0) return dropped(headerOnly(RCODE.NOTIMP, hdr.opcode), RCODE.NOTIMP);
    if (hdr.qdcount !== 1 || hdr.ancount > 1 || hdr.nscount > 1 || hdr.arcount > 2) return dropped(headerOnly(RCODE.FORMERR), RCODE.FORMERR);
    const q = readQuestion(msg);
    if (typeof q === 'string') {
      this.log.debug({ [F.reason]: q }, 'malformed DNS query: FORMERR');
      return dropped(headerOnly(RCODE.FORMERR), RCODE.FORMERR);
    }
    let edns: packet.OptAnswer | undefined;
    try {
      const p = dnsPacket.decode(msg);
      const opts = (p.additionals ?? []).filter((rr): rr is packet.OptAnswer => rr.type === 'OPT');
      if (opts.length > 1) throw new Error('more than one OPT');
      edns = opts[0];
    } catch (e) {
      this.log.debug({ [F.err]: e }, 'undecodable DNS query: FORMERR');
      return dropped(headerOnly(RCODE.FORMERR), RCODE.FORMERR);
    }
    const d = edns?.flag_do ?? false;
    const opt = edns ? { udpPayloadSize: this.udpSize, do: d } : undefined;
    const maxSize = proto === 'tcp' ? 65535 : edns ? Math.min(Math.max(edns.udpPayloadSize, 512), this.maxUdpSize) : 512;
    const reply = (m: Omit<Message, 'id' | 'question' | 'opt'>, aa = false): Buffer =>
      encodeMessage({ ...m, id: hdr.id, flags: m.flags | rdcd | FLAG.RA | (aa ? FLAG.AA : 0), question: q.wire, opt }, q.lname, maxSize);
    if (q.qclass !== CLASS_IN) return dropped(reply({ flags: 0, rcode: RCODE.REFUSED }), RCODE.REFUSED, q.qtypeName, d);
    if (edns && edns.ednsVersion > 0) {
      // RFC 6891 6.1.3: BADVERS (16) is the OPT's extended rcode 1 with header rcode 0; the OPT says version 0.
      return dropped(reply({ flags: 0, rcode: RCODE.BADVERS }), RCODE.BADVERS, q.qtypeName, d);
    }
    const handled = (rcode: number, plugin: PluginLabel, buf: Buffer): Handled => ({ reply: buf, rcode, zone: '.', plugin, qtype: q.qtypeName, do: d });

    if (q.qtype === TYPE.ANY) {
      const hinfo: packet.Answer = { type: 'HINFO', name: q.name, ttl: 8482, data: { cpu: 'ANY obsoleted', os: 'See RFC 8482' } };
      return handled(RCODE.NOERROR, 'any', reply({ flags: 0, rcode: RCODE.NOERROR, answers: [hinfo] }));
    }
    if (q.qtype === TYPE.AXFR || q.qtype === TYPE.IXFR) return handled(RCODE.REFUSED, 'kubernetes', reply({ flags: 0, rcode: RCODE.REFUSED }));

    const index = this.o.records();
    const zone = index?.domain ?? this.domain;
    if (index === null && inZone(q.lname, zone)) {
      return handled(RCODE.SERVFAIL, 'kubernetes', reply({ flags: 0, rcode: RCODE.SERVFAIL, authorities: [this.soa(zone, null)] }, true));
    }
    const a = index?.answer(q.lname, q.qtypeName);
    if (index && a) {
      const answers = a.answers.map(toPacket);
      const additionals = (a.additionals ?? []).map(toPacket);
      if (q.qtype === TYPE.SOA && q.lname === zone) answers.push(this.soa(zone, index));
      if (answers.length > 0 && q.qtype !== TYPE.CNAME) answers.push(...(await this.chase(index, answers, q.qtype, d, hdr.cd)));
      const authorities = answers.length === 0 && inZone(q.lname, zone) ? [this.soa(zone, index)] : [];
      return handled(a.rcode === 'NXDOMAIN' ? RCODE.NXDOMAIN : RCODE.NOERROR, 'kubernetes', reply({ flags: 0, rcode: a.rcode === 'NXDOMAIN' ? RCODE.NXDOMAIN : RCODE.NOERROR, answers, authorities, additionals }, true));
    }
    if (!this.o.forwarder) return handled(RCODE.SERVFAIL, 'forward', reply({ flags: 0, rcode: RCODE.SERVFAIL }));
    const f: ForwardResult = await this.o.forwarder.resolve({ lname: q.lname, qtype: q.qtype, qclass: q.qclass, question: q.wire, do: d, cd: hdr.cd });
    // CoreDNS's cache clears AD unless the client asked for DNSSEC (DO) or set AD itself (RFC 6840 5.7).
    const ad = f.ad && (d || hdr.ad) ? FLAG.AD : 0;
    return handled(f.rcode, f.from === 'cache' ? 'cache' : 'forward', reply({ flags: ad, rcode: f.rcode, answers: f.answers, authorities: f.authorities, additionals: f.additionals }));
  }

  /** The records a CNAME chain leads to: from the index while in it, else from the forwarder. */
  private async chase(index: DnsIndex, answers: packet.Answer[], qtype: number, d: boolean, cd: boolean): Promise<packet.Answer[]> {
    const out: packet.Answer[] = [];
    let last = answers[answers.length - 1]!;
    for (let i = 0; i < MAX_CNAME_CHAIN && last.type === 'CNAME'; i++) {
      const target = String(last.data).toLowerCase().replace(/\.$/, '');
      const inIndex = index.answer(target, typeName(qtype));
      let next: packet.Answer[];
      if (inIndex) next = inIndex.answers.map(toPacket);
      else if (this.o.forwarder) {
        const question = encodeQuestion(target, qtype);
        next = (await this.o.forwarder.resolve({ lname: target, qtype, qclass: CLASS_IN, question, do: d, cd })).answers;
      } else next = [];
      if (next.length === 0) break;
      out.push(...next);
      last = next[next.length - 1]!;
    }
    return out;
  }

  /** The zone's SOA, as CoreDNS's plugin.SOA: serial = when this index was first seen (it changes with the data). */
  private soa(zone: string, index: DnsIndex | null): packet.Answer {
    let serial = index ? this.serials.get(index) : undefined;
    if (serial === undefined) {
      serial = Math.floor(this.o.clock.now() / 1000) >>> 0;
      if (index) this.serials.set(index, serial);
    }
    return { type: 'SOA', name: zone, ttl: Math.min(this.ttl, 300), data: { mname: `ns.dns.${zone}`, rname: `hostmaster.${zone}`, serial, refresh: 7200, retry: 1800, expire: 86400, minimum: this.ttl } };
  }
}

export interface RunningDnsServer {
  readonly udpPort: number;
  readonly tcpPort: number;
  readonly server: DnsServer;
  readonly metrics: DnsMetrics;
  close(): Promise<void>;
}

/** Builds and starts a DnsServer (the CLI's composition point). */
export async function startDnsServer(o: DnsServerOptions): Promise<RunningDnsServer> {
  const server = new DnsServer(o);
  const { udpPort, tcpPort } = await server.start();
  return { udpPort, tcpPort, server, metrics: server.metrics, close: () => server.close() };
}
