/**
 * cnitypes/fields: typed readers over `unknown` JSON for the CNI parsers.
 * Every failure is a NodenetError (NN_ERR_INVALID_CONFIG, CNI code 7) whose
 * message starts with the JSON path of the offending field and whose
 * `details` is that path alone.
 */
import { isIPv6 } from 'node:net';
import { CniCode, ErrorCode, NodenetError } from '../errors/errors.js';
import { isIPv4 } from '../net/ip.js';

export type JsonObject = Readonly<Record<string, unknown>>;

export function invalidField(field: string, msg: string): NodenetError {
  return new NodenetError(ErrorCode.InvalidConfig, `${field}: ${msg}`, CniCode.InvalidNetworkConfig, { details: field });
}

export function isObject(v: unknown): v is JsonObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

export function objectAt(v: unknown, field: string): JsonObject {
  if (!isObject(v)) throw invalidField(field, 'must be an object');
  return v;
}

export function optObject(o: JsonObject, key: string, path: string): JsonObject | undefined {
  const v = o[key];
  return v === undefined || v === null ? undefined : objectAt(v, `${path}${key}`);
}

export function optString(o: JsonObject, key: string, path: string): string | undefined {
  const v = o[key];
  if (v === undefined) return undefined;
  if (typeof v !== 'string') throw invalidField(`${path}${key}`, 'must be a string');
  return v;
}

export function reqString(o: JsonObject, key: string, path: string): string {
  const v = optString(o, key, path);
  if (v === undefined || v === '') throw invalidField(`${path}${key}`, 'is required');
  return v;
}

export function optBool(o: JsonObject, key: string, path: string): boolean | undefined {
  const v = o[key];
  if (v === undefined) return undefined;
  if (typeof v !== 'boolean') throw invalidField(`${path}${key}`, 'must be true or false');
  return v;
}

/** An integer in [min, max]. */
export function optInt(o: JsonObject, key: string, path: string, min: number, max: number): number | undefined {
  const v = o[key];
  if (v === undefined) return undefined;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > max) {
    throw invalidField(`${path}${key}`, `must be an integer from ${min} to ${max}`);
  }
  return v;
}

export function optStringArray(o: JsonObject, key: string, path: string): string[] | undefined {
  const v = o[key];
  if (v === undefined || v === null) return undefined;
  if (!Array.isArray(v)) throw invalidField(`${path}${key}`, 'must be an array of strings');
  return v.map((s: unknown, i) => {
    if (typeof s !== 'string') throw invalidField(`${path}${key}[${i}]`, 'must be a string');
    return s;
  });
}

export function optArray(o: JsonObject, key: string, path: string): readonly unknown[] | undefined {
  const v = o[key];
  if (v === undefined || v === null) return undefined;
  if (!Array.isArray(v)) throw invalidField(`${path}${key}`, 'must be an array');
  return v;
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
