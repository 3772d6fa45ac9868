/**
 * json/digest: digests of strings (rendered rules, manifests' JSON, object
 * names), with the one-shot `crypto.hash` where Node has it (about 3x faster
 * than a Hash object for short inputs; Node 20.12+), else createHash. Pure.
 */
import { createHash, hash as oneShotHash } from 'node:crypto';

const hasOneShot = typeof oneShotHash === 'function';

/** sha256 of s (UTF-8), as bytes. */
export function sha256(s: string): Buffer {
  return hasOneShot ? oneShotHash('sha256', s, 'buffer') : createHash('sha256').update(s, 'utf8').digest();
}

/** sha1 of s (UTF-8), base64: for telling texts apart, not for security. */
export function sha1Base64(s: string): string {
  return hasOneShot ? oneShotHash('sha1', s, 'base64') : createHash('sha1').update(s, 'utf8').digest('base64');
}

// SHA-256 (FIPS 180-4) in JavaScript, for the short names the proxies hash by the ten thousand (chain names:
// 90,000 per full nftables sync at 30,000 Services). A call into node:crypto costs about 5 µs however short the
// input, most of it crossing into C++; this is several times faster for names of a block or two, and exactly
// the same digest (sha256.test.ts compares them). Anything long or not ASCII goes to node:crypto.
const K = new Int32Array([
  0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
  0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
  0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
  0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
  0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
  0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
  0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
  0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
]);
const W = new Int32Array(64);
/** Up to this many ASCII characters are hashed here (4 blocks); longer goes to node:crypto. */
const JS_MAX = 247;
const BLOCKS = new Uint8Array(256);

/**
 * sha256 of s (UTF-8), as bytes: in JavaScript for short ASCII strings, node:crypto otherwise. The bytes of the
 * JavaScript path are a buffer the next call overwrites: read them at once (the name hashes do), or copy them.
 */
export function sha256Short(s: string): Uint8Array {
  const n = s.length;
  if (n > JS_MAX) return sha256(s);
  const buf = BLOCKS;
  for (let i = 0; i < n; i++) {
    const c = s.charCodeAt(i);
    if (c > 127) return sha256(s);
    buf[i] = c;
  }
  const blocks = (n + 9 + 63) >>> 6;
  const end = blocks * 64;
  buf[n] = 0x80;
  buf.fill(0, n + 1, end);
  const bits = n * 8;
  buf[end - 4] = bits >>> 24;
  buf[end - 3] = (bits >>> 16) & 255;
  buf[end - 2] = (bits >>> 8) & 255;
  buf[end - 1] = bits & 255;
  let h0 = 0x6a09e667 | 0, h1 = 0xbb67ae85 | 0, h2 = 0x3c6ef372 | 0, h3 = 0xa54ff53a | 0;
  let h4 = 0x510e527f | 0, h5 = 0x9b05688c | 0, h6 = 0x1f83d9ab | 0, h7 = 0x5be0cd19 | 0;
  for (let off = 0; off < end; off += 64) {
    for (let t = 0; t < 16; t++) {
      const j = off + t * 4;
      W[t] = (buf[j]! << 24) | (buf[j + 1]! << 16) | (buf[j + 2]! << 8) | buf[j + 3]!;
    }
    for (let t = 16; t < 64; t++) {
      const x = W[t - 15]!, y = W[t - 2]!;
      const s0 = ((x >>> 7) | (x << 25)) ^ ((x >>> 18) | (x << 14)) ^ (x >>> 3);
      const s1 = ((y >>> 17) | (y << 15)) ^ ((y >>> 19) | (y << 13)) ^ (y >>> 10);
      W[t] = (W[t - 16]! + s0 + W[t - 7]! + s1) | 0;
    }
    let a = h0, b = h1, c = h2, d = h3, e = h4, f = h5, g = h6, h = h7;
    for (let t = 0; t < 64; t++) {
      const S1 = ((e >>> 6) | (e << 26)) ^ ((e >>> 11) | (e << 21)) ^ ((e >>> 25) | (e << 7));
      const ch = (e & f) ^ (~e & g);
      const t1 = (h + S1 + ch + K[t]! + W[t]!) | 0;
      const S0 = ((a >>> 2) | (a << 30)) ^ ((a >>> 13) | (a << 19)) ^ ((a >>> 22) | (a << 10));
      const maj = (a & b) ^ (a & c) ^ (b & c);
      const t2 = (S0 + maj) | 0;
      h = g; g = f; f = e; e = (d + t1) | 0; d = c; c = b; b = a; a = (t1 + t2) | 0;
    }
    h0 = (h0 + a) | 0; h1 = (h1 + b) | 0; h2 = (h2 + c) | 0; h3 = (h3 + d) | 0;
    h4 = (h4 + e) | 0; h5 = (h5 + f) | 0; h6 = (h6 + g) | 0; h7 = (h7 + h) | 0;
  }
  const out = OUT;
  put(out, 0, h0); put(out, 4, h1); put(out, 8, h2); put(out, 12, h3);
  put(out, 16, h4); put(out, 20, h5); put(out, 24, h6); put(out, 28, h7);
  return out;
}

const OUT = new Uint8Array(32);
function put(out: Uint8Array, i: number, v: number): void {
  out[i] = v >>> 24; out[i + 1] = (v >>> 16) & 255; out[i + 2] = (v >>> 8) & 255; out[i + 3] = v & 255;
}
