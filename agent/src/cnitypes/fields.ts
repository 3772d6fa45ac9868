/**
 * cnitypes/fields: json/read's readers bound to the CNI config error (a
 * NodenetError, NN_ERR_INVALID_CONFIG, CNI code 7, whose message starts with
 * the JSON path of the offending field and whose `details` is that path
 * alone), plus the CNI spec's value checks.
 */
import { isIPv6 } from 'node:net';
import { ErrorCode, NodenetError } from '../../../lib/errors/errors.js';
import { isIPv4 } from '../../../lib/net/ip.js';
import { fieldReaders, isObject as isJsonObject, type JsonObject } from '../../../lib/json/read.js';

export type { JsonObject };

export function invalidField(field: string, msg: string): NodenetError {
  return new NodenetError(ErrorCode.InvalidConfig, `${field}: ${msg}`, { details: field });
}

const readers = fieldReaders(invalidField);
export const isObject = isJsonObject;
export const { objectAt, optObject, optString, reqString, optBool, optArray, optStringArray } = readers;

/** An integer in [min, max]. */
export function optInt(o: JsonObject, key: string, path: string, min: number, max: number): number | undefined {
  return readers.optInt(o, key, path, { min, max });
}

export function isIP(s: string): boolean {
  return isIPv4(s) || isIPv6(s);
}

/** "addr/prefix" with an IPv4 or IPv6 address (host bits allowed). */
export function isIPPrefix(s: string): boolean {
  const slash = s.lastIndexOf('/');
  if (slash < 0) return false;
  const ip = s.slice(0, slash);
  const pfx = s.slice(slash + 1);
  if (!/^\d{1,3}$/.test(pfx)) return false;
  if (isIPv4(ip)) return Number(pfx) <= 32;
  return isIPv6(ip) && Number(pfx) <= 128;
}

export function ipFamily(addressOrPrefix: string): '4' | '6' {
  return addressOrPrefix.includes(':') ? '6' : '4';
}

/** Linux interface-name rules (SPEC: not empty, < 16 bytes, not . or .., no / : or whitespace). */
export function isInterfaceName(s: string): boolean {
  return s.length > 0 && Buffer.byteLength(s) <= 15 && s !== '.' && s !== '..' && !/[/:\s]/u.test(s);
}

/** Network names and container IDs: [a-zA-Z0-9][a-zA-Z0-9_.-]* */
export const CNI_NAME_RE = /^[a-zA-Z0-9][a-zA-Z0-9_.-]*$/;

export const MAC_RE = /^[0-9a-fA-F]{2}(?::[0-9a-fA-F]{2}){5,19}$/;
