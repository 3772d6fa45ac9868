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
