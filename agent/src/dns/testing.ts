/**
 * dns/testing: test helpers for the DNS server's tests: real UDP/TCP clients on loopback and message
 * builders (with dns-packet), and a fake upstream resolver (a real dgram/net server on 127.0.0.1 that
 * answers from a function). Not used by the product.
 */
import dgram from 'node:dgram';
import net from 'node:net';
import packet from 'dns-packet';

export const RD = packet.RECURSION_DESIRED;

export function query(name: string, type: packet.RecordType = 'A', o: { id?: number; edns?: number | false; do?: boolean; version?: number; flags?: number } = {}): Buffer {
  const additionals: packet.Answer[] = o.edns === false || o.edns === undefined ? [] : [{ type: 'OPT', name: '.', udpPayloadSize: o.edns, extendedRcode: 0, ednsVersion: o.version ?? 0, flags: o.do ? packet.DNSSEC_OK : 0, flag_do: o.do ?? false, options: [] }];
  return packet.encode({ type: 'query', id: o.id ?? 4242, flags: o.flags ?? RD, questions: [{ type, name }], additionals });
}

/** Sends one datagram to 127.0.0.1:port; the reply, or null when none came within waitMs. */
export function udpAsk(port: number, msg: Buffer, waitMs = 2000): Promise<Buffer | null> {
  return new Promise((resolve, reject) => {
    const s = dgram.createSocket('udp4');
    const timer = setTimeout(() => {
      s.close();
      resolve(null);
    }, waitMs);
    s.on('error', (e) => {
      clearTimeout(timer);
      s.close();
      reject(e);
    });
    s.on('message', (m) => {
      clearTimeout(timer);
      s.close();
      resolve(m);
    });
    s.send(msg, port, '127.0.0.1');
  });
}

export const frame = (msg: Buffer): Buffer => {
  const h = Buffer.alloc(2);
  h.writeUInt16BE(msg.length);
  return Buffer.concat([h, msg]);
};

/** A TCP client that collects length-framed replies. */
export class TcpClient {
  readonly sock: net.Socket;
  private buf = Buffer.alloc(0);
  private readonly replies: Buffer[] = [];
  private waiters: (() => void)[] = [];
  closed = false;
  readonly ready: Promise<void>;

  constructor(port: number) {
    this.sock = net.connect({ host: '127.0.0.1', port });
    this.ready = new Promise((r, j) => {
      this.sock.once('connect', () => r());
      this.sock.once('error', j);
    });
    this.sock.on('error', () => undefined);
    this.sock.on('data', (c) => {
      this.buf = Buffer.concat([this.buf, c]);
      while (this.buf.length >= 2 && this.buf.length >= 2 + this.buf.readUInt16BE(0)) {
        this.replies.push(this.buf.subarray(2, 2 + this.buf.readUInt16BE(0)));
        this.buf = this.buf.subarray(2 + this.buf.readUInt16BE(0));
      }
      this.wake();
    });
    this.sock.on('close', () => {
      this.closed = true;
      this.wake();
    });
  }

  private wake(): void {
    const w = this.waiters;
    this.waiters = [];
    for (const f of w) f();
  }

  write(b: Buffer): void {
    this.sock.write(b);
  }

  /** Resolves with `n` replies, or rejects if the connection closes first. */
  async take(n: number): Promise<Buffer[]> {
    while (this.replies.length < n) {
      if (this.closed) throw new Error(`connection closed after ${this.replies.length} replies`);
      await new Promise<void>((r) => this.waiters.push(r));
    }
    return this.replies.splice(0, n);
  }

  /** Resolves once the server closed the connection. */
  async whenClosed(): Promise<void> {
    while (!this.closed) await new Promise<void>((r) => this.waiters.push(r));
  }

  close(): void {
    this.sock.destroy();
  }
}

export interface FakeUpstream {
  readonly port: number;
  /** Queries received over UDP and TCP. */
  readonly udpQueries: packet.DecodedPacket[];
  readonly tcpQueries: packet.DecodedPacket[];
  close(): Promise<void>;
}

/**
 * A resolver on 127.0.0.1 (UDP and TCP on one port): `answer(query, proto)` returns the reply packet, or
 * null to stay silent (a timeout for the client); the reply's id and question are filled from the query.
 */
export async function fakeUpstream(answer: (q: packet.DecodedPacket, proto: 'udp' | 'tcp') => packet.Packet | null): Promise<FakeUpstream> {
  const udpQueries: packet.DecodedPacket[] = [];
  const tcpQueries: packet.DecodedPacket[] = [];
  const reply = (q: packet.DecodedPacket, proto: 'udp' | 'tcp'): Buffer | null => {
    const p = answer(q, proto);
    if (!p) return null;
    return packet.encode({ ...p, type: 'response', id: q.id ?? 0, questions: q.questions ?? [] });
  };
  for (let attempt = 0; ; attempt++) {
    const udp = dgram.createSocket('udp4');
    await new Promise<void>((r) => udp.bind(0, '127.0.0.1', () => r()));
    const port = udp.address().port;
    const tcp = net.createServer((s) => {
      let buf = Buffer.alloc(0);
      s.on('error', () => undefined);
      s.on('data', (c) => {
        buf = Buffer.concat([buf, c]);
        while (buf.length >= 2 && buf.length >= 2 + buf.readUInt16BE(0)) {
          const q = packet.decode(buf.subarray(2, 2 + buf.readUInt16BE(0)));
          buf = buf.subarray(2 + buf.readUInt16BE(0));
          tcpQueries.push(q);
          const r = reply(q, 'tcp');
          if (r) s.write(frame(r));
        }
      });
    });
    try {
      await new Promise<void>((r, j) => {
        tcp.once('error', j);
        tcp.listen({ port, host: '127.0.0.1', exclusive: true }, () => r());
      });
    } catch (e) {
      udp.close();
      if (attempt < 20) continue;
      throw e;
    }
    udp.on('message', (m, rinfo) => {
      const q = packet.decode(m);
      udpQueries.push(q);
      const r = reply(q, 'udp');
      if (r) udp.send(r, rinfo.port, rinfo.address);
    });
    return {
      port, udpQueries, tcpQueries,
      close: () => new Promise<void>((r) => {
        udp.close();
        tcp.close(() => r());
      }),
    };
  }
}
