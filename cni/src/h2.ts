/**
 * h2: the part of HTTP/2 (RFC 9113) and HPACK (RFC 7541) one unary gRPC
 * call over a unix socket needs, for the shim. Pure: frames in, frames out.
 *
 * Why not node:http2: loading it and setting up its session costs ~13 ms of
 * CPU per shim process here (measured: a bare node is ~29 ms, a call with
 * node:http2 ~50 ms, with this ~37 ms), and the shim is one process per pod
 * operation.
 *
 * What it does:
 * - sends the connection preface, a SETTINGS frame (header table size 0, so
 *   the server's HPACK encoder never indexes what it sends; no push), a
 *   WINDOW_UPDATE that lets the server send up to 16 MiB, one HEADERS frame
 *   whose fields are literals without indexing or Huffman coding, and the
 *   request body in DATA frames no larger than the peer's maximum frame size
 *   and its flow-control windows (waiting for WINDOW_UPDATEs when needed);
 * - reads SETTINGS (acknowledged), PING (answered), WINDOW_UPDATE, HEADERS
 *   and CONTINUATION, DATA (padding removed), RST_STREAM and GOAWAY.
 * Decoding a header block understands every HPACK representation; of
 * values, the static table's and raw (not Huffman-coded) literals. The names
 * it looks for (`:status`, `grpc-status`, `grpc-message`) are recognised as
 * raw literals, static-table indexes, or the Huffman codes nghttp2 (the
 * HTTP/2 under node:http2, which the agent's server and grpc-js use) sends for
 * them; a grpc-status value is one or two
 * digits, which nghttp2 never Huffman-codes (no shorter). A Huffman-coded
 * grpc-message is reported as such rather than decoded: it only feeds an
 * error's details.
 */

export const FRAME = { DATA: 0, HEADERS: 1, RST_STREAM: 3, SETTINGS: 4, PING: 6, GOAWAY: 7, WINDOW_UPDATE: 8, CONTINUATION: 9 } as const;
export const FLAG = { END_STREAM: 0x1, ACK: 0x1, END_HEADERS: 0x4, PADDED: 0x8, PRIORITY: 0x20 } as const;
const PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n');
const SETTINGS_HEADER_TABLE_SIZE = 1;
const SETTINGS_ENABLE_PUSH = 2;
const SETTINGS_INITIAL_WINDOW_SIZE = 4;
const SETTINGS_MAX_FRAME_SIZE = 5;
const DEFAULT_WINDOW = 65_535;
const RECEIVE_WINDOW = 16 * 1024 * 1024;
const EMPTY = new Uint8Array(0);

export function frame(type: number, flags: number, stream: number, payload: Uint8Array = EMPTY): Buffer {
  const out = Buffer.allocUnsafe(9 + payload.length);
  out.set(payload, frameHeader(out, 0, payload.length, type, flags, stream));
  return out;
}

/** An HPACK literal header field without indexing, name and value raw (no Huffman). */
export function literal(name: string, value: string): Buffer {
  const n = Buffer.from(name);
  const v = Buffer.from(value);
  const out = Buffer.allocUnsafe(literalLen(n, v));
  writeLiteral(out, 0, n, v);
  return out;
}

function literalLen(n: Uint8Array, v: Uint8Array): number {
  return 1 + hpackIntLen(n.length, 7) + n.length + hpackIntLen(v.length, 7) + v.length;
}

function writeLiteral(out: Buffer, o: number, n: Uint8Array, v: Uint8Array): number {
  out[o++] = 0x00; // literal without indexing, new name
  o = writeHpackInt(out, o, n.length, 7, 0x00);
  out.set(n, o);
  o = writeHpackInt(out, o + n.length, v.length, 7, 0x00);
  out.set(v, o);
  return o + v.length;
}

/**
 * What the client writes first: preface, SETTINGS, a connection WINDOW_UPDATE, and the request's HEADERS on
 * stream 1, then `body` (DATA frames, already framed), written into one buffer with no intermediate ones:
 * building it from small Buffers cost ~0.8 ms of a cold shim's CPU, before the request could leave.
 */
export function requestStart(headers: readonly (readonly [string, string])[], body: Uint8Array = EMPTY): Buffer {
  const enc = headers.map(([n, v]) => [Buffer.from(n), Buffer.from(v)] as const);
  let blockLen = 0;
  for (const [n, v] of enc) blockLen += literalLen(n, v);
  const out = Buffer.allocUnsafe(PREFACE.length + 9 + 18 + 9 + 4 + 9 + blockLen + body.length);
  let o = PREFACE.copy(out, 0);
  o = frameHeader(out, o, 18, FRAME.SETTINGS, 0, 0);
  for (const [id, v] of [[SETTINGS_HEADER_TABLE_SIZE, 0], [SETTINGS_ENABLE_PUSH, 0], [SETTINGS_INITIAL_WINDOW_SIZE, RECEIVE_WINDOW]] as const) {
    o = out.writeUInt16BE(id, o);
    o = out.writeUInt32BE(v, o);
  }
  o = frameHeader(out, o, 4, FRAME.WINDOW_UPDATE, 0, 0);
  o = out.writeUInt32BE(RECEIVE_WINDOW - DEFAULT_WINDOW, o);
  o = frameHeader(out, o, blockLen, FRAME.HEADERS, FLAG.END_HEADERS, 1);
  for (const [n, v] of enc) o = writeLiteral(out, o, n, v);
  out.set(body, o);
  return out;
}

function frameHeader(out: Buffer, o: number, len: number, type: number, flags: number, stream: number): number {
  out[o] = (len >>> 16) & 0xff;
  out[o + 1] = (len >>> 8) & 0xff;
  out[o + 2] = len & 0xff;
  out[o + 3] = type;
  out[o + 4] = flags;
  return out.writeUInt32BE(stream & 0x7fffffff, o + 5);
}

function hpackIntLen(value: number, prefixBits: number): number {
  const max = (1 << prefixBits) - 1;
  if (value < max) return 1;
  let n = 2;
  for (let v = value - max; v >= 128; v = Math.floor(v / 128)) n++;
  return n;
}

function writeHpackInt(out: Buffer, o: number, value: number, prefixBits: number, firstByte: number): number {
  const max = (1 << prefixBits) - 1;
  if (value < max) {
    out[o] = firstByte | value;
    return o + 1;
  }
  out[o++] = firstByte | max;
  let v = value - max;
  while (v >= 128) {
    out[o++] = (v % 128) + 128;
    v = Math.floor(v / 128);
  }
  out[o] = v;
  return o + 1;
}

/** HPACK static table entries the decoder needs (RFC 7541 Appendix A): names by index, and :status values. */
const STATIC_NAMES: Readonly<Record<number, string>> = { 1: ':authority', 2: ':method', 3: ':method', 4: ':path', 5: ':path', 6: ':scheme', 7: ':scheme', 8: ':status', 9: ':status', 10: ':status', 11: ':status', 12: ':status', 13: ':status', 14: ':status', 31: 'content-type' };
const STATIC_VALUES: Readonly<Record<number, string>> = { 2: 'GET', 3: 'POST', 4: '/', 5: '/index.html', 6: 'http', 7: 'https', 8: '200', 9: '204', 10: '206', 11: '304', 12: '400', 13: '404', 14: '500' };
/** The Huffman codes nghttp2 sends for the names we look for (checked against node:http2 by the tests). */
const HUFFMAN_NAMES: ReadonlyMap<string, string> = new Map([
  ['9acac8b21234da8f', 'grpc-status'],
  ['9acac8b5254207317f', 'grpc-message'],
]);

export interface HeaderField {
  /** The name, or null when it was Huffman-coded and not one we know. */
  readonly name: string | null;
  /** The value, or null when it was Huffman-coded. */
  readonly value: string | null;
}

/** Decodes one header block. @throws Error on a malformed block. */
export function decodeHeaderBlock(block: Buffer): HeaderField[] {
  const out: HeaderField[] = [];
  let i = 0;
  const int = (prefixBits: number): number => {
    const max = (1 << prefixBits) - 1;
    let v = block[i++]! & max;
    if (v < max) return v;
    let m = 0;
    for (;;) {
      if (i >= block.length) throw new Error('HPACK: truncated integer');
      const b = block[i++]!;
      v += (b & 0x7f) * 2 ** m;
      m += 7;
      if (!(b & 0x80)) return v;
      if (m > 28) throw new Error('HPACK: integer too large');
    }
  };
  const str = (): { raw: Buffer; huffman: boolean } => {
    if (i >= block.length) throw new Error('HPACK: truncated string');
    const huffman = (block[i]! & 0x80) !== 0;
    const len = int(7);
    if (i + len > block.length) throw new Error('HPACK: string runs past the block');
    const raw = block.subarray(i, i + len);
    i += len;
    return { raw, huffman };
  };
  const nameOf = (s: { raw: Buffer; huffman: boolean }): string | null => (s.huffman ? (HUFFMAN_NAMES.get(s.raw.toString('hex')) ?? null) : s.raw.toString('latin1'));
  while (i < block.length) {
    const b = block[i]!;
    if (b & 0x80) {
      const idx = int(7);
      if (idx === 0) throw new Error('HPACK: index 0');
      if (idx > 61) throw new Error(`HPACK: dynamic index ${idx} (the table size is 0)`);
      out.push({ name: STATIC_NAMES[idx] ?? null, value: STATIC_VALUES[idx] ?? null });
      continue;
    }
    if ((b & 0xe0) === 0x20) {
      int(5); // dynamic table size update
      continue;
    }
    const prefix = (b & 0xc0) === 0x40 ? 6 : 4; // with incremental indexing, or without / never indexed
    const idx = int(prefix);
    const name = idx === 0 ? nameOf(str()) : (STATIC_NAMES[idx] ?? null);
    if (idx > 61) throw new Error(`HPACK: dynamic index ${idx} (the table size is 0)`);
    const v = str();
    out.push({ name, value: v.huffman ? null : v.raw.toString('latin1') });
  }
  return out;
}

export type H2Event =
  | { readonly kind: 'headers'; readonly fields: HeaderField[]; readonly endStream: boolean }
  | { readonly kind: 'data'; readonly data: Buffer; readonly endStream: boolean }
  | { readonly kind: 'reset'; readonly code: number }
  | { readonly kind: 'goaway'; readonly lastStream: number; readonly code: number };

/**
 * The client's side of one connection with one stream (1): feed it what the
 * socket delivers, get the events of stream 1 and the bytes to write back
 * (acknowledgements, the body as the windows allow).
 */
export class H2Client {
  private buf: Buffer = Buffer.alloc(0);
  private headerBlock: Buffer[] | null = null;
  private headerEnd = false;
  private maxFrame = 16_384;
  private connWindow = DEFAULT_WINDOW;
  private streamWindow = DEFAULT_WINDOW;
  private initialWindow = DEFAULT_WINDOW;
  private body: Buffer;
  private bodySent = false;

  /** `body`: the request's DATA payload (a framed gRPC message), sent with END_STREAM. */
  constructor(body: Uint8Array) {
    this.body = Buffer.from(body);
  }

  /** The bytes to write first. */
  start(headers: readonly (readonly [string, string])[]): Buffer {
    return requestStart(headers, this.flushBody());
  }

  /** DATA frames as far as the windows and the frame size allow (END_STREAM on the last), in one buffer. */
  private flushBody(): Buffer {
    if (this.bodySent) return Buffer.alloc(0);
    const sizes: number[] = [];
    let conn = this.connWindow;
    let stream = this.streamWindow;
    let left = this.body.length;
    for (;;) {
      const room = Math.min(conn, stream, this.maxFrame);
      if (left > 0 && room <= 0) break;
      const n = Math.min(room, left);
      sizes.push(n);
      conn -= n;
      stream -= n;
      left -= n;
      if (left === 0) break;
    }
    const out = Buffer.allocUnsafe(sizes.reduce((a, n) => a + 9 + n, 0));
    let o = 0;
    for (const n of sizes) {
      const last = n === this.body.length;
      o = frameHeader(out, o, n, FRAME.DATA, last ? FLAG.END_STREAM : 0, 1);
      out.set(this.body.subarray(0, n), o);
      o += n;
      this.body = this.body.subarray(n);
      this.connWindow -= n;
      this.streamWindow -= n;
      if (last) this.bodySent = true;
    }
    return out;
  }

  /** Consumes socket bytes; returns stream 1's events and what to write back. @throws Error on a protocol violation. */
  feed(chunk: Buffer): { events: H2Event[]; reply: Buffer } {
    this.buf = this.buf.length ? Buffer.concat([this.buf, chunk]) : chunk;
    const events: H2Event[] = [];
    const reply: Buffer[] = [];
    while (this.buf.length >= 9) {
      const len = this.buf.readUIntBE(0, 3);
      if (this.buf.length < 9 + len) break;
      const type = this.buf[3]!;
      const flags = this.buf[4]!;
      const stream = this.buf.readUInt32BE(5) & 0x7fffffff;
      let p = this.buf.subarray(9, 9 + len);
      this.buf = this.buf.subarray(9 + len);
      if (this.headerBlock && type !== FRAME.CONTINUATION) throw new Error('HTTP/2: a header block interrupted');
      switch (type) {
        case FRAME.SETTINGS:
          if (flags & FLAG.ACK) break;
          for (let o = 0; o + 6 <= p.length; o += 6) {
            const id = p.readUInt16BE(o);
            const v = p.readUInt32BE(o + 2);
            if (id === SETTINGS_INITIAL_WINDOW_SIZE) {
              this.streamWindow += v - this.initialWindow;
              this.initialWindow = v;
            } else if (id === SETTINGS_MAX_FRAME_SIZE) this.maxFrame = v;
          }
          reply.push(frame(FRAME.SETTINGS, FLAG.ACK, 0));
          break;
        case FRAME.PING:
          if (!(flags & FLAG.ACK)) reply.push(frame(FRAME.PING, FLAG.ACK, 0, p));
          break;
        case FRAME.WINDOW_UPDATE: {
          const inc = p.readUInt32BE(0) & 0x7fffffff;
          if (stream === 0) this.connWindow += inc;
          else if (stream === 1) this.streamWindow += inc;
          break;
        }
        case FRAME.GOAWAY:
          events.push({ kind: 'goaway', lastStream: p.readUInt32BE(0) & 0x7fffffff, code: p.readUInt32BE(4) });
          break;
        case FRAME.RST_STREAM:
          if (stream === 1) events.push({ kind: 'reset', code: p.readUInt32BE(0) });
          break;
        case FRAME.DATA:
          if (stream !== 1) break;
          if (flags & FLAG.PADDED) p = p.subarray(1, p.length - p[0]!);
          events.push({ kind: 'data', data: Buffer.from(p), endStream: (flags & FLAG.END_STREAM) !== 0 });
          break;
        case FRAME.HEADERS:
        case FRAME.CONTINUATION: {
          if (type === FRAME.HEADERS) {
            if (flags & FLAG.PADDED) p = p.subarray(1, p.length - p[0]!);
            if (flags & FLAG.PRIORITY) p = p.subarray(5);
            this.headerBlock = [];
            this.headerEnd = (flags & FLAG.END_STREAM) !== 0;
          } else if (!this.headerBlock) throw new Error('HTTP/2: CONTINUATION without HEADERS');
          this.headerBlock.push(Buffer.from(p));
          if (flags & FLAG.END_HEADERS) {
            const block = Buffer.concat(this.headerBlock);
            this.headerBlock = null;
            if (stream === 1) events.push({ kind: 'headers', fields: decodeHeaderBlock(block), endStream: this.headerEnd });
          }
          break;
        }
        default:
          break; // PRIORITY, PUSH_PROMISE (disabled), unknown types: ignored, as the spec requires
      }
    }
    if (!this.bodySent) reply.push(this.flushBody());
    return { events, reply: Buffer.concat(reply) };
  }
}
