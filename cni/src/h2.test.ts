/**
 * h2.ts: HPACK decoding over what nghttp2 (node:http2, as grpc-js uses it)
 * really sends, and the framing.
 */
import t from 'tap';
import { createServer } from 'node:http2';
import { connect } from 'node:net';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { decodeHeaderBlock, FLAG, FRAME, frame, H2Client, literal, requestStart } from './h2.js';

const work = mkdtempSync(join(tmpdir(), 'nn-h2-'));
t.teardown(() => rmSync(work, { recursive: true, force: true }));

t.test('header blocks as grpc-js sent them (captured): status, trailers, a trailers-only error', async (t) => {
  // Response headers: a table size update to 0, :status 200 (static 8), then literals (Huffman values).
  const trailers = Buffer.from('00889acac8b21234da8f013000899acac8b5254207317f024f4b', 'hex');
  t.same(decodeHeaderBlock(trailers), [{ name: 'grpc-status', value: '0' }, { name: 'grpc-message', value: 'OK' }]);
  const error = Buffer.from('208800889acac8b21234da8f02313200899acac8b5254207317fb3df3954416cee5b1490e542951d2a1a9ae82d25a92a2672a9495339e4518a8f216a2a5725465fb857bd51b716cee62158d27acb0f10901d75d0620d263d4c4d6564ff75d8749f0f1296df697e940054be52282009c5020b8276e36253168dff', 'hex');
  const f = decodeHeaderBlock(error);
  t.same(f.slice(0, 3), [{ name: ':status', value: '200' }, { name: 'grpc-status', value: '12' }, { name: 'grpc-message', value: null }]);
  t.same(f.slice(3), [{ name: 'content-type', value: null }, { name: null, value: null }], 'static names with Huffman values (content-type, date)');
});

t.test('every representation: indexed, literal with/without/never indexing, integers past the prefix, raw strings', async (t) => {
  const long = 'x'.repeat(300);
  const block = Buffer.concat([
    Buffer.from([0x80 | 13]), // :status 404
    Buffer.from([0x40 | 31]), Buffer.from([4]), Buffer.from('text'), // content-type: text, incremental indexing
    Buffer.from([0x10]), Buffer.from([3]), Buffer.from('abc'), Buffer.from([1]), Buffer.from('v'), // never indexed, literal name
    literal('long', long), // a length past the 7-bit prefix
    Buffer.from([0x3f, 0xe1, 0x1f]), // a table size update (4096) with a multi-byte integer
  ]);
  t.same(decodeHeaderBlock(block), [
    { name: ':status', value: '404' }, { name: 'content-type', value: 'text' }, { name: 'abc', value: 'v' }, { name: 'long', value: long },
  ]);
  t.throws(() => decodeHeaderBlock(Buffer.from([0x80])), /index 0/);
  t.throws(() => decodeHeaderBlock(Buffer.from([0x80 | 62])), /dynamic index/);
  t.throws(() => decodeHeaderBlock(Buffer.from([0x00, 0x05, 0x61])), /runs past/);
});

t.test('nghttp2 still sends grpc-status and grpc-message under the Huffman codes h2.ts knows', async (t) => {
  const sock = join(work, 'h.sock');
  const srv = createServer();
  srv.on('stream', (s) => {
    s.respond({ ':status': 200, 'content-type': 'application/grpc' }, { waitForTrailers: true });
    s.on('wantTrailers', () => s.sendTrailers({ 'grpc-status': '14', 'grpc-message': 'x' }));
    s.end(Buffer.from([0, 0, 0, 0, 1, 7]));
  });
  await new Promise<void>((r) => srv.listen(sock, r));
  t.teardown(() => new Promise<void>((r) => srv.close(() => r())));
  const client = new H2Client(Buffer.from([0, 0, 0, 0, 0]));
  const events = await new Promise<ReturnType<H2Client['feed']>['events']>((resolve, reject) => {
    const all: ReturnType<H2Client['feed']>['events'] = [];
    const c = connect(sock, () => c.write(client.start([[':method', 'POST'], [':scheme', 'http'], [':path', '/x'], [':authority', 'l']])));
    c.on('error', reject);
    c.on('data', (d: Buffer) => {
      const out = client.feed(d);
      if (out.reply.length) c.write(out.reply);
      all.push(...out.events);
      if (out.events.some((e) => (e.kind === 'headers' || e.kind === 'data') && e.endStream)) {
        c.destroy();
        resolve(all);
      }
    });
  });
  const heads = events.filter((e) => e.kind === 'headers');
  t.match(heads[0], { kind: 'headers', fields: [{ name: ':status', value: '200' }] });
  t.same(heads[1], { kind: 'headers', fields: [{ name: 'grpc-status', value: '14' }, { name: 'grpc-message', value: 'x' }], endStream: true });
  t.same(events.filter((e) => e.kind === 'data').map((e) => (e.kind === 'data' ? [...e.data] : [])), [[0, 0, 0, 0, 1, 7]]);
});

t.test('the body goes out in frames no larger than the peer allows, and waits for window updates', async (t) => {
  const body = Buffer.alloc(100_000, 1);
  const c = new H2Client(body);
  const first = c.start([[':path', '/x']]);
  const dataBytes = (b: Buffer) => {
    let n = 0;
    for (let o = 0; o + 9 <= b.length; ) {
      const len = b.readUIntBE(o, 3);
      if (b[o + 3] === FRAME.DATA) {
        t.ok(len <= 16_384, 'frame within the default maximum');
        n += len;
      }
      o += 9 + len;
    }
    return n;
  };
  const skipPreface = first.subarray(24);
  t.equal(dataBytes(skipPreface), 65_535, 'the default window, then it stops');
  const more = c.feed(Buffer.concat([frame(FRAME.WINDOW_UPDATE, 0, 0, Buffer.from([0, 1, 0, 0])), frame(FRAME.WINDOW_UPDATE, 0, 1, Buffer.from([0, 1, 0, 0]))]));
  t.equal(dataBytes(more.reply), 100_000 - 65_535, 'the rest once the windows grew');
  const ping = c.feed(frame(FRAME.PING, 0, 0, Buffer.alloc(8, 9)));
  t.same([...ping.reply.subarray(0, 9)], [0, 0, 8, FRAME.PING, FLAG.ACK, 0, 0, 0, 0], 'PING answered');
  t.same(c.feed(frame(FRAME.RST_STREAM, 0, 1, Buffer.from([0, 0, 0, 7]))).events, [{ kind: 'reset', code: 7 }]);
});

t.test('the first write, byte by byte: preface, SETTINGS, WINDOW_UPDATE, HEADERS (long values too), the body', async (t) => {
  const long = `/${'p'.repeat(300)}`;
  const body = Buffer.from([0, 0, 0, 0, 2, 8, 1]);
  const out = requestStart([[':path', long], ['te', 'trailers']], frame(FRAME.DATA, FLAG.END_STREAM, 1, body));
  t.equal(out.subarray(0, 24).toString(), 'PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n');
  const frames: { type: number; flags: number; stream: number; payload: Buffer }[] = [];
  for (let o = 24; o < out.length; ) {
    const len = out.readUIntBE(o, 3);
    frames.push({ type: out[o + 3]!, flags: out[o + 4]!, stream: out.readUInt32BE(o + 5), payload: out.subarray(o + 9, o + 9 + len) });
    o += 9 + len;
  }
  t.same(frames.map((f) => [f.type, f.flags, f.stream]), [[FRAME.SETTINGS, 0, 0], [FRAME.WINDOW_UPDATE, 0, 0], [FRAME.HEADERS, FLAG.END_HEADERS, 1], [FRAME.DATA, FLAG.END_STREAM, 1]]);
  t.same([...frames[0]!.payload], [0, 1, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 4, 1, 0, 0, 0], 'header table 0, no push, a 16 MiB stream window');
  t.equal(frames[1]!.payload.readUInt32BE(0), 16 * 1024 * 1024 - 65_535);
  t.same(decodeHeaderBlock(frames[2]!.payload), [{ name: ':path', value: long }, { name: 'te', value: 'trailers' }]);
  t.ok(frames[2]!.payload.equals(Buffer.concat([literal(':path', long), literal('te', 'trailers')])), 'the same bytes as literal() makes');
  t.same([...frames[3]!.payload], [...body]);
});
