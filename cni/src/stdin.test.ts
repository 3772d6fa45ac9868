import t from 'tap';
import { readAllSync, type ReadSync } from './stdin.js';

/** A fake fd: each read returns the next chunk (at most what fits), a string throws that errno, the end is 0. */
function fakeRead(script: (Buffer | string)[]): ReadSync {
  return (_fd, buf, offset, length) => {
    const next = script[0];
    if (next === undefined) return 0;
    if (typeof next === 'string') {
      script.shift();
      throw Object.assign(new Error(next), { code: next });
    }
    const n = Math.min(length, next.length);
    buf.set(next.subarray(0, n), offset);
    if (n === next.length) script.shift();
    else script[0] = next.subarray(n);
    return n;
  };
}

t.test('reads to the end across short reads; nothing is an empty buffer', async (t) => {
  const r = readAllSync(fakeRead([Buffer.from('{"cniV'), Buffer.from('ersion":"1.1.0"}')]), 0);
  t.same(r, { bytes: Buffer.from('{"cniVersion":"1.1.0"}'), complete: true });
  t.same(readAllSync(fakeRead([]), 0), { bytes: Buffer.alloc(0), complete: true });
});

t.test('a config larger than the first buffer grows it, bytes intact', async (t) => {
  const big = Buffer.alloc(100_000);
  for (let i = 0; i < big.length; i++) big[i] = i % 251;
  const r = readAllSync(fakeRead([big.subarray(0, 40_000), big.subarray(40_000)]), 0);
  t.ok(r.complete);
  t.ok(r.bytes.equals(big));
});

t.test('EAGAIN (a non-blocking pipe): what was read is kept, the rest is the caller\'s to read', async (t) => {
  const r = readAllSync(fakeRead([Buffer.from('{"a":'), 'EAGAIN', Buffer.from('1}')]), 0);
  t.same(r, { bytes: Buffer.from('{"a":'), complete: false });
});

t.test('any other error is thrown', async (t) => {
  t.throws(() => readAllSync(fakeRead([Buffer.from('x'), 'EIO']), 0), { code: 'EIO' });
});
