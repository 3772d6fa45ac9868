import t from 'tap';
import { createHash } from 'node:crypto';
import { base32Prefix, flat } from './flat.js';

t.test('base32Prefix is RFC 4648 base32, cut to its length', async (t) => {
  // RFC 4648 section 10 test vectors (padding left out).
  t.equal(base32Prefix(Buffer.from('f'), 2), 'MY');
  t.equal(base32Prefix(Buffer.from('fo'), 4), 'MZXQ');
  t.equal(base32Prefix(Buffer.from('foo'), 5), 'MZXW6');
  t.equal(base32Prefix(Buffer.from('foob'), 7), 'MZXW6YQ');
  t.equal(base32Prefix(Buffer.from('fooba'), 8), 'MZXW6YTB');
  t.equal(base32Prefix(Buffer.from('foobar'), 10), 'MZXW6YTBOI');
  t.equal(base32Prefix(Buffer.from('foobar'), 3), 'MZX');
  t.equal(base32Prefix(new Uint8Array(10).fill(0xff), 16), '7'.repeat(16));
  t.equal(base32Prefix(new Uint8Array(10), 16), 'A'.repeat(16));
});

t.test('base32Prefix of a digest agrees with a bit-by-bit reference', async (t) => {
  const ref = (b: Uint8Array, n: number) => {
    const bitsStr = [...b].map((x) => x.toString(2).padStart(8, '0')).join('');
    let out = '';
    for (let i = 0; i < n; i++) out += 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567'[parseInt(bitsStr.slice(i * 5, i * 5 + 5), 2)];
    return out;
  };
  for (let i = 0; i < 200; i++) {
    const d = createHash('sha256').update(`key-${i}`).digest();
    t.equal(base32Prefix(d, 16), ref(d, 16));
    t.equal(base32Prefix(d, 8), ref(d, 8));
  }
});

t.test('flat concatenates', async (t) => {
  t.equal(flat('KUBE', '-SEP-', 'ABCDEFGHIJKLMNOP'), 'KUBE-SEP-ABCDEFGHIJKLMNOP');
  t.equal(flat(), '');
  t.equal(flat('a'), 'a');
});
