/**
 * dns/wire: the few byte-level pieces of the DNS message format that `nodenet dns` does itself, around the
 * `dns-packet` codec (see server.ts for why that library). Pure: no sockets, no clock.
 *
 * Why not leave all of it to dns-packet: (1) the server must answer FORMERR/NOTIMP from a message it cannot
 * decode, which needs only the 12-byte header; (2) the question is checked here before any decoding, with
 * RFC 1035's limits enforced explicitly (labels <= 63 octets, a name <= 255 octets on the wire, compression
 * pointers only backwards and at most MAX_HOPS of them), rather than trusting whichever checks the codec
 * version at hand has (5.6.1 does check pointer direction and length, older ones did not); (3) the
 * question is echoed byte for byte (case, binary labels) in the reply, as the wire bytes read here, which
 * dns-packet's utf-8 string names cannot guarantee; (4) a record owned by the question name is written
 * with a compression pointer to it (offset 12), which dns-packet does not compress.
 */
import { createRequire } from 'node:module';
import packet from 'dns-packet';

export const RCODE = { NOERROR: 0, FORMERR: 1, SERVFAIL: 2, NXDOMAIN: 3, NOTIMP: 4, REFUSED: 5, BADVERS: 16 } as const;
export const RCODE_NAME: Readonly<Record<number, string>> = Object.fromEntries(Object.entries(RCODE).map(([k, v]) => [v, k]));
export const rcodeName = (rcode: number): string => RCODE_NAME[rcode] ?? `RCODE${rcode}`;

export const FLAG = { QR: 1 << 15, AA: 1 << 10, TC: 1 << 9, RD: 1 << 8, RA: 1 << 7, AD: 1 << 5, CD: 1 << 4 } as const;
export const TYPE = { A: 1, NS: 2, CNAME: 5, SOA: 6, PTR: 12, HINFO: 13, TXT: 16, AAAA: 28, SRV: 33, OPT: 41, IXFR: 251, AXFR: 252, ANY: 255 } as const;
export const CLASS_IN = 1;

/** A name is at most 255 octets on the wire (RFC 1035 2.3.4), a label 63. */
export const MAX_NAME_OCTETS = 255;
/** Compression pointers followed for one name; a legitimate name needs at most one per label. */
export const MAX_HOPS = 127;

export interface Header {
  readonly id: number;
  /** The 16 flag bits as sent (QR, opcode, AA, TC, RD, RA, Z, AD, CD, rcode). */
  readonly flags: number;
  readonly qr: boolean;
  readonly opcode: number;
  readonly rd: boolean;
  readonly cd: boolean;
  readonly ad: boolean;
  readonly qdcount: number;
  readonly ancount: number;
  readonly nscount: number;
  readonly arcount: number;
}

export function readHeader(msg: Buffer): Header | null {
  if (msg.length < 12) return null;
  const flags = msg.readUInt16BE(2);
  return {
    id: msg.readUInt16BE(0), flags,
    qr: (flags & FLAG.QR) !== 0, opcode: (flags >> 11) & 0xf,
    rd: (flags & FLAG.RD) !== 0, cd: (flags & FLAG.CD) !== 0, ad: (flags & FLAG.AD) !== 0,
    qdcount: msg.readUInt16BE(4), ancount: msg.readUInt16BE(6), nscount: msg.readUInt16BE(8), arcount: msg.readUInt16BE(10),
  };
}

export interface WireQuestion {
  /** Presentation form, as sent (case kept), no trailing dot ("." for the root); odd octets as \DDD. */
  readonly name: string;
  /** `name` lowercased: the lookup and cache key. */
  readonly lname: string;
  readonly qtype: number;
  /** dns-packet's name for the type (A, SRV, UNKNOWN_65280). */
  readonly qtypeName: string;
  readonly qclass: number;
  /** The question re-encoded uncompressed: name octets, type, class (what the reply echoes). */
  readonly wire: Buffer;
}

const labelText = (b: Buffer): string => {
  let s = '';
  for (const c of b) s += c > 0x20 && c < 0x7f && c !== 0x2e && c !== 0x5c ? String.fromCharCode(c) : `\\${String(c).padStart(3, '0')}`;
  return s;
};

/** Reads the question at `offset` (12), checking RFC 1035's limits; a string says why it is malformed. */
export function readQuestion(msg: Buffer, offset = 12): WireQuestion | string {
  const labels: Buffer[] = [];
  let octets = 1; // the root label
  let pos = offset;
  let end = -1; // where the question's type follows (after the first pointer or the root label)
  let hops = 0;
  let lowest = offset; // pointers must go strictly backwards from here
  for (;;) {
    if (pos >= msg.length) return 'name runs past the message';
    const len = msg[pos]!;
    if (len === 0) {
      if (end < 0) end = pos + 1;
      break;
    }
    const kind = len & 0xc0;
    if (kind === 0xc0) {
      if (pos + 1 >= msg.length) return 'pointer runs past the message';
      const target = ((len & 0x3f) << 8) | msg[pos + 1]!;
      if (end < 0) end = pos + 2;
      if (++hops > MAX_HOPS) return 'too many compression pointers';
      if (target >= lowest) return 'compression pointer not backwards (loop)';
      lowest = target;
      pos = target;
      continue;
    }
    if (kind !== 0) return 'bad label type';
    if (pos + 1 + len > msg.length) return 'label runs past the message';
    octets += len + 1;
    if (octets > MAX_NAME_OCTETS) return `name longer than ${MAX_NAME_OCTETS} octets`;
    labels.push(msg.subarray(pos + 1, pos + 1 + len));
    pos += 1 + len;
  }
  if (end + 4 > msg.length) return 'question type/class missing';
  const qtype = msg.readUInt16BE(end);
  const qclass = msg.readUInt16BE(end + 2);
  const wire = Buffer.alloc(octets + 4);
  let w = 0;
  for (const l of labels) {
    wire[w++] = l.length;
    l.copy(wire, w);
    w += l.length;
  }
  wire[w++] = 0;
  wire.writeUInt16BE(qtype, w);
  wire.writeUInt16BE(qclass, w + 2);
  const name = labels.length === 0 ? '.' : labels.map(labelText).join('.');
  return { name, lname: name.toLowerCase(), qtype, qtypeName: typeName(qtype), qclass, wire };
}

/** dns-packet's type names (A, SRV, UNKNOWN_n), which records.ts's answer() also speaks. */
export function typeName(qtype: number): string {
  return typesJs.toString(qtype);
}
export function typeCode(name: string): number {
  return typesJs.toType(name);
}
// dns-packet's type table (types.js), which @types/dns-packet does not declare.
const typesJs = createRequire(import.meta.url)('dns-packet/types.js') as { toString(t: number): string; toType(n: string): number };

/** The question for `name` (presentation form, plain labels), uncompressed. */
export function encodeQuestion(name: string, qtype: number, qclass = CLASS_IN): Buffer {
  // dns-packet's question.encode returns the question object, not the buffer: give it one.
  const question = { name, type: typeName(qtype) as packet.RecordType, class: 'IN' as const };
  const q = Buffer.alloc(codec.question.encodingLength(question));
  codec.question.encode(question, q, 0);
  if (qclass !== CLASS_IN) q.writeUInt16BE(qclass, q.length - 2);
  return q;
}

interface Codec {
  answer: { encode(a: packet.Answer): Buffer };
  question: { encode(q: packet.Question, buf: Buffer, offset: number): unknown; encodingLength(q: packet.Question): number };
}
const codec = packet as unknown as Codec;

export interface Message {
  readonly id: number;
  /** Flags without QR (set here) and rcode (from `rcode`). */
  readonly flags: number;
  readonly rcode: number;
  /** The question's wire (WireQuestion.wire); none for a header-only error. */
  readonly question?: Buffer | undefined;
  readonly answers?: readonly packet.Answer[];
  readonly authorities?: readonly packet.Answer[];
  readonly additionals?: readonly packet.Answer[];
  /** The reply's OPT when the query had one: our payload size, DO echoed. */
  readonly opt?: { readonly udpPayloadSize: number; readonly do: boolean } | undefined;
}

/** The OPT record of a reply (RFC 6891 6.1.3: the extended rcode's upper 8 bits live here). */
function optRecord(o: NonNullable<Message['opt']>, rcode: number): packet.Answer {
  return { type: 'OPT', name: '.', udpPayloadSize: o.udpPayloadSize, extendedRcode: rcode >> 4, ednsVersion: 0, flags: o.do ? packet.DNSSEC_OK : 0, flag_do: o.do, options: [] };
}

/** One record, owner written as a pointer to the question name (offset 12) when it is that name. */
function encodeRr(rr: packet.Answer, qlname: string | null): Buffer {
  if (qlname !== null && rr.type !== 'OPT' && rr.name.toLowerCase().replace(/\.$/, '') === qlname) {
    const b = codec.answer.encode({ ...rr, name: '.' } as packet.Answer);
    return Buffer.concat([Buffer.from([0xc0, 0x0c]), b.subarray(1)]);
  }
  return codec.answer.encode(rr);
}

/**
 * Encodes a reply. `maxSize`: when the whole message would not fit, it is sent with TC set and only the
 * question and OPT (RFC 1035 4.2.1 / RFC 2181 9: the client retries over TCP); throws only on records
 * dns-packet cannot encode.
 */
export function encodeMessage(m: Message, qlname: string | null, maxSize = 65535): Buffer {
  const opt = m.opt ? [optRecord(m.opt, m.rcode)] : [];
  const build = (answers: readonly packet.Answer[], authorities: readonly packet.Answer[], additionals: readonly packet.Answer[], tc: boolean): Buffer => {
    const head = Buffer.alloc(12);
    head.writeUInt16BE(m.id, 0);
    head.writeUInt16BE((m.flags & ~0x800f & ~FLAG.TC) | FLAG.QR | (tc ? FLAG.TC : 0) | (m.rcode & 0xf), 2);
    head.writeUInt16BE(m.question ? 1 : 0, 4);
    head.writeUInt16BE(answers.length, 6);
    head.writeUInt16BE(authorities.length, 8);
    head.writeUInt16BE(additionals.length + opt.length, 10);
    const parts: Buffer[] = [head];
    if (m.question) parts.push(m.question);
    const q = m.question ? qlname : null;
    for (const rr of [...answers, ...authorities, ...additionals, ...opt]) parts.push(encodeRr(rr, q));
    return Buffer.concat(parts);
  };
  const full = build(m.answers ?? [], m.authorities ?? [], m.additionals ?? [], false);
  if (full.length <= maxSize) return full;
  return build([], [], [], true);
}
