import t from 'tap';
import { Output, type StreamWrite, type WriteSync } from './out.js';

function errno(code: string): Error {
  return Object.assign(new Error(code), { code });
}

/** A fake fd table: `takes` says how many bytes each writeSync call accepts (or throws), per fd. */
function fakeFds(takes: Record<number, (number | string)[]>) {
  const written: Record<number, Buffer[]> = {};
  const streamed: { fd: number; data: Buffer; done: () => void }[] = [];
  const writeSync: WriteSync = (fd, data) => {
    const next = (takes[fd] ?? []).shift() ?? data.length;
    if (typeof next === 'string') throw errno(next);
    const n = Math.min(next, data.length);
    (written[fd] ??= []).push(Buffer.from(data.subarray(0, n)));
    return n;
  };
  const streamWrite: StreamWrite = (fd, data, done) => streamed.push({ fd, data: Buffer.from(data), done });
  const text = (fd: number) => Buffer.concat(written[fd] ?? []).toString();
  return { writeSync, streamWrite, text, streamed };
}

t.test('writes go straight to the fd, partial writes resumed, nothing left to flush', async (t) => {
  const f = fakeFds({ 1: [3, 2] });
  const out = new Output(f.writeSync, f.streamWrite);
  out.write(1, '{"cniVersion":"1.1.0"}');
  out.write(2, 'a note\n');
  t.equal(f.text(1), '{"cniVersion":"1.1.0"}');
  t.equal(f.text(2), 'a note\n');
  t.equal(f.streamed.length, 0);
  let flushed = false;
  await out.flushed().then(() => (flushed = true));
  t.ok(flushed);
});

t.test('EAGAIN (a non-blocking pipe): the rest goes to the stream, later writes follow it, flushed waits for it', async (t) => {
  const f = fakeFds({ 1: [4, 'EAGAIN'] });
  const out = new Output(f.writeSync, f.streamWrite);
  out.write(1, Buffer.from('0123456789'));
  out.write(1, 'tail');
  out.write(2, 'err');
  t.equal(f.text(1), '0123', 'what the fd took');
  t.same(f.streamed.map((s) => [s.fd, s.data.toString()]), [[1, '456789'], [1, 'tail']], 'the rest, in order, through the stream');
  t.equal(f.text(2), 'err', 'another fd is not affected');
  let flushed = false;
  const p = out.flushed().then(() => (flushed = true));
  f.streamed[0]!.done();
  await new Promise((r) => setImmediate(r));
  t.notOk(flushed, 'one stream write still pending');
  f.streamed[1]!.done();
  await p;
  t.ok(flushed);
});

t.test('another error (EPIPE: the reader is gone) drops that fd\'s output, and nothing throws', async (t) => {
  const f = fakeFds({ 1: ['EPIPE'] });
  const out = new Output(f.writeSync, f.streamWrite);
  out.write(1, 'lost');
  out.write(1, 'also lost');
  out.write(2, 'kept');
  t.equal(f.text(1), '');
  t.equal(f.text(2), 'kept');
  t.equal(f.streamed.length, 0);
  await out.flushed();
});
