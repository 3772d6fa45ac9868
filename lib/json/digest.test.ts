import t from 'tap';
import { createHash, randomBytes } from 'node:crypto';
import { sha256, sha256Short } from './digest.js';

const hex = (b: Uint8Array) => Buffer.from(b).toString('hex'); // copies: sha256Short's buffer is reused

t.test('sha256Short is SHA-256: the FIPS 180-4 examples', async (t) => {
  t.equal(hex(sha256Short('abc')), 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
  t.equal(hex(sha256Short('')), 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855');
  t.equal(hex(sha256Short('abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq')), '248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1');
});

t.test('sha256Short matches node:crypto at every length around the block edges and for chain names', async (t) => {
  let bad = 0;
  for (let n = 0; n <= 300; n++) {
    for (let k = 0; k < 3; k++) {
      const s = randomBytes(n).toString('base64').slice(0, n).padEnd(n, 'x');
      if (hex(sha256Short(s)) !== createHash('sha256').update(s).digest('hex')) bad++;
    }
  }
  t.equal(bad, 0, 'ASCII strings of 0..300 characters (JS up to 247, node:crypto past it)');
  for (const s of ['ns1/svc1/tcp/p80', 'ns1/svc1/tcp/p80__10.180.0.1/80', 'bench/svc-12345/tcp/http__10.244.3.7/8080', 'ünïcode/svc/tcp/p80']) {
    t.equal(hex(sha256Short(s)), hex(sha256(s)), s);
  }
});
