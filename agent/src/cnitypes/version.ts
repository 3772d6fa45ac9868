/**
 * cnitypes/version: the CNI spec versions nodenet speaks, and ordering them.
 * (The shim has the same list in cni/src/skel.ts; it may not import the agent.
 * cnitypes tests check the two agree.)
 */
import { IncompatibleVersionError } from '../errors/errors.js';

export const SUPPORTED_VERSIONS = ['0.3.0', '0.3.1', '0.4.0', '1.0.0', '1.1.0'] as const;
export type CniVersion = (typeof SUPPORTED_VERSIONS)[number];
export const LATEST_VERSION: CniVersion = '1.1.0';

export function isSupportedVersion(v: unknown): v is CniVersion {
  return typeof v === 'string' && (SUPPORTED_VERSIONS as readonly string[]).includes(v);
}

/** True if `v` is `min` or later. Both must be supported versions. */
export function versionAtLeast(v: CniVersion, min: CniVersion): boolean {
  return SUPPORTED_VERSIONS.indexOf(v) >= SUPPORTED_VERSIONS.indexOf(min);
}

/** Narrows `v` or throws IncompatibleVersionError (CNI code 1) naming `field`. */
export function requireSupportedVersion(v: unknown, field: string): CniVersion {
  if (isSupportedVersion(v)) return v;
  throw new IncompatibleVersionError(`${field}: unsupported CNI version ${JSON.stringify(v)}`, {
    details: `supported: ${SUPPORTED_VERSIONS.join(', ')}`,
  });
}
