/**
 * proxy/model/fields: json/read's readers bound to InvalidObjectError (the
 * message names the JSON path, `spec.ports[1].port`), plus Kubernetes' name
 * and port rules. Pure; shared by the Service and EndpointSlice parsers.
 */
import { InvalidObjectError } from '../../../../lib/errors/errors.js';
import { fieldReaders, isObject, join, show, type JsonObject } from '../../../../lib/json/read.js';
import type { Protocol } from '../types.js';

export type Obj = JsonObject;
export { join, show };
export const isObj = isObject;

const readers = fieldReaders((field, msg) => new InvalidObjectError(field, msg));
export const { optObject: optObj, reqObject: reqObj, optString: optStr, optBool, optArray: optArr } = readers;

/** An integer field; absent or null gives undefined. */
export function optInt(o: Obj, key: string, path: string): number | undefined {
  return readers.optInt(o, key, path);
}

import { isDNS1035Label, isDNS1123Label, isDNS1123Subdomain } from '../../../../lib/net/dns-names.js';
export { isDNS1035Label, isDNS1123Label, isDNS1123Subdomain };

/**
 * IANA_SVC_NAME (a named targetPort): at most 15 characters, lowercase
 * alphanumerics and '-', at least one letter, no leading, trailing or
 * doubled '-'.
 */
export function isIanaSvcName(s: string): boolean {
  return s.length >= 1 && s.length <= 15 && /^[a-z0-9-]+$/.test(s) && /[a-z]/.test(s) && !s.startsWith('-') && !s.endsWith('-') && !s.includes('--');
}

export const PROTOCOLS: readonly Protocol[] = ['TCP', 'UDP', 'SCTP'];

/** A port's protocol; absent means TCP (the API server's default). */
export function protocolField(o: Obj, path: string): Protocol {
  const p = optStr(o, 'protocol', path);
  if (p === undefined || p === '') return 'TCP';
  if (!(PROTOCOLS as readonly string[]).includes(p)) {
    throw new InvalidObjectError(join(path, 'protocol'), `unsupported value ${show(p)}: supported values: "TCP", "UDP", "SCTP"`);
  }
  return p as Protocol;
}

/** A 1..65535 port number. */
export function portNumber(v: number, field: string): number {
  if (v < 1 || v > 65535) throw new InvalidObjectError(field, `must be between 1 and 65535, inclusive, got ${v}`);
  return v;
}

/** metadata.namespace and metadata.name, both required. */
export function objectMeta(o: Obj, nameCheck: (s: string) => boolean, nameRule: string): { namespace: string; name: string } {
  const meta = reqObj(o, 'metadata', '');
  const name = optStr(meta, 'name', 'metadata');
  if (!name) throw new InvalidObjectError('metadata.name', 'required value');
  if (!nameCheck(name)) throw new InvalidObjectError('metadata.name', `${show(name)} must be ${nameRule}`);
  const namespace = optStr(meta, 'namespace', 'metadata');
  if (!namespace) throw new InvalidObjectError('metadata.namespace', 'required value');
  if (!isDNS1123Label(namespace)) throw new InvalidObjectError('metadata.namespace', `${show(namespace)} must be an RFC 1123 label`);
  return { namespace, name };
}

/** Best-effort "namespace/name" of any object, for deletes and logs; null when unreadable. */
export function objectKey(o: unknown): string | null {
  if (!isObj(o)) return null;
  const meta = o['metadata'];
  if (!isObj(meta)) return null;
  const ns = meta['namespace'];
  const name = meta['name'];
  if (typeof ns !== 'string' || typeof name !== 'string' || !ns || !name) return null;
  return `${ns}/${name}`;
}

/** A Service with this label (any value) is served by another proxy: kube-proxy excludes it from its informers. */
export const LABEL_SERVICE_PROXY_NAME = 'service.kubernetes.io/service-proxy-name';
/** Set on headless Services (and their EndpointSlices): kube-proxy excludes them from its informers. */
export const LABEL_HEADLESS = 'service.kubernetes.io/headless';

/**
 * Why an object carrying kube-proxy's excluded labels gets no rules, or null.
 * kube-proxy's informers list with `!service-proxy-name,!headless`, so it
 * never sees such objects; nodenet's manifest source sees everything and
 * drops them here (the API source asks the server for the same selector).
 */
export function excludedByLabels(raw: unknown): string | null {
  const meta = isObj(raw) ? raw['metadata'] : undefined;
  const labels = isObj(meta) ? meta['labels'] : undefined;
  if (!isObj(labels)) return null;
  const proxyName = labels[LABEL_SERVICE_PROXY_NAME];
  if (proxyName !== undefined && proxyName !== null) {
    return `labelled ${LABEL_SERVICE_PROXY_NAME}=${typeof proxyName === 'string' ? proxyName : show(proxyName)}: served by another proxy, no rules (kube-proxy's informers exclude it)`;
  }
  if (labels[LABEL_HEADLESS] !== undefined && labels[LABEL_HEADLESS] !== null) {
    return `labelled ${LABEL_HEADLESS}: no rules (kube-proxy's informers exclude it)`;
  }
  return null;
}
