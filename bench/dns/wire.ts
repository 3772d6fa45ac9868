/**
 * bench/dns/wire: the bench's own DNS on 127.0.0.1, over dns-packet (the library nodenet dns uses for its
 * wire format): the fake upstream both servers forward external names to, and a small client that asks one
 * A question (the answer check and the freshness polls). Effectful: UDP sockets on loopback only.
 *
 * The fake upstream stands in for the internet so that no query ever leaves the machine: it answers
 * `ext-<k>.example` with workload.ts's TEST-NET address (TTL an hour) and anything else with NXDOMAIN, and
 * counts what it was asked, so the run can show the external case was served from the servers' caches.
 */
import { createSocket, type Socket } from 'node:dgram';
import * as dnsPacket from 'dns-packet';
import { EXTERNAL_TTL, externalIndex, externalIP } from './workload.js';

const LOOPBACK = '127.0.0.1';

export interface FakeUpstream {
  readonly port: number;
  /** Queries received so far. */
  queries(): number;
  close(): Promise<void>;
}

/** The reply to one query packet (pure): an A for an external name, NXDOMAIN otherwise; null for no question. */
export function upstreamReply(query: Buffer): Buffer | null {
  let q: dnsPacket.DecodedPacket;
  try {
    q = dnsPacket.decode(query);
  } catch {
    return null;
  }
  const question = q.questions?.[0];
  if (!question || q.type !== 'query') return null;
  const k = externalIndex(question.name);
  const answers: dnsPacket.Answer[] = k !== null && question.type === 'A' ? [{ type: 'A', name: question.name, ttl: EXTERNAL_TTL, data: externalIP(k) }] : [];
  const rcode = k === null ? 'NXDOMAIN' : 'NOERROR';
  return dnsPacket.encode({
    type: 'response',
    id: q.id ?? 0,
    // RD echoed, RA set, as a recursive resolver answers; the rcode in the low bits (dns-packet's flags field).
    flags: (dnsPacket.RECURSION_DESIRED & (q.flags ?? 0)) | dnsPacket.RECURSION_AVAILABLE | (rcode === 'NXDOMAIN' ? 3 : 0),
    questions: [question],
    answers,
  });
}

/** The fake upstream on 127.0.0.1, an ephemeral port. */
export async function startFakeUpstream(): Promise<FakeUpstream> {
  const sock = createSocket('udp4');
  let n = 0;
  sock.on('message', (msg, rinfo) => {
    n++;
    const r = upstreamReply(msg);
    if (r && rinfo.address === LOOPBACK) sock.send(r, rinfo.port, LOOPBACK);
  });
  await new Promise<void>((resolve, reject) => {
    sock.once('error', reject);
    sock.bind(0, LOOPBACK, () => resolve());
  });
  return {
    port: sock.address().port,
    queries: () => n,
    close: () => new Promise((r) => sock.close(() => r())),
  };
}

export interface AResult {
  readonly rcode: string;
  readonly ips: readonly string[];
}

let nextId = 1;

const RCODES: Readonly<Record<number, string>> = { 0: 'NOERROR', 1: 'FORMERR', 2: 'SERVFAIL', 3: 'NXDOMAIN', 4: 'NOTIMP', 5: 'REFUSED' };
/** The rcode in a decoded packet's flags (its low 4 bits; @types/dns-packet does not declare dns-packet's own `rcode`). */
export function rcodeName(flags: number): string {
  return RCODES[flags & 0xf] ?? `RCODE${flags & 0xf}`;
}

/** One A question to 127.0.0.1:port over UDP; null when no answer came within timeoutMs. */
export async function queryA(port: number, name: string, timeoutMs = 500, sock?: Socket): Promise<AResult | null> {
  const s = sock ?? createSocket('udp4');
  const id = (nextId = (nextId % 65535) + 1);
  const packet = dnsPacket.encode({ type: 'query', id, flags: dnsPacket.RECURSION_DESIRED, questions: [{ type: 'A', name }] });
  try {
    return await new Promise<AResult | null>((resolve, reject) => {
      const timer = setTimeout(() => done(null), timeoutMs);
      const onMessage = (msg: Buffer) => {
        try {
          const r = dnsPacket.decode(msg);
          if (r.id !== id) return; // a late answer to an earlier poll
          done({ rcode: rcodeName(r.flags ?? 0), ips: (r.answers ?? []).flatMap((a) => (a.type === 'A' ? [a.data] : [])) });
        } catch {
          /* not DNS: wait on */
        }
      };
      const done = (x: AResult | null) => {
        clearTimeout(timer);
        s.off('message', onMessage);
        resolve(x);
      };
      s.on('message', onMessage);
      s.send(packet, port, LOOPBACK, (e) => {
        if (e) {
          clearTimeout(timer);
          s.off('message', onMessage);
          reject(e);
        }
      });
    });
  } finally {
    if (!sock) s.close();
  }
}

/** A UDP socket for a run of queries (the freshness polls), bound to loopback. */
export async function clientSocket(): Promise<Socket> {
  const s = createSocket('udp4');
  await new Promise<void>((resolve, reject) => {
    s.once('error', reject);
    s.bind(0, LOOPBACK, () => resolve());
  });
  return s;
}
