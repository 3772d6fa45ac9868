/**
 * cnitypes/version: ordering the CNI spec versions nodenet speaks (the list
 * itself is the shim↔agent contract's, proto/cni/v1/contract.ts).
 */
import { IncompatibleVersionError } from '../../../lib/errors/errors.js';
import { isSupportedVersion, LATEST_VERSION, SUPPORTED_VERSIONS, type CniVersion } from '../../../proto/cni/v1/contract.js';

export { isSupportedVersion, LATEST_VERSION, SUPPORTED_VERSIONS, type CniVersion };

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
