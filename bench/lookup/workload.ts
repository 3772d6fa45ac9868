/**
 * bench/lookup/workload: the Services the lookup benchmark programs, as the
 * manifest files the agent reads (watch/manifest-source.ts). Pure.
 *
 * Service n (1-based) is `lookup/lk-<n>`: ClusterIP 10.96.0.0+n, TCP port
 * 80 to targetPort 8080, one EndpointSlice with the benchmark's two server
 * pods as its ready endpoints (every Service has the same two: the rules,
 * one chain or verdict per Service and per endpoint, are what users get for
 * N Services; only the first and the last are ever connected to). The
 * manifests go in files of FILE_CHUNK Services each (a `kind: List`), so a
 * one-endpoint change rewrites one file and the agent's rescan reads that
 * one file, not N.
 */
import { clusterIP, makeEndpointSlice, makeService, type JsonObject } from '../../agent/src/testing/addresses.js';

export const NAMESPACE = 'lookup';
export const SERVICE_PORT = 80;
export const TARGET_PORT = 8080;
export const FILE_CHUNK = 1000;
/** The most Services the address conventions give (10.96.0.1 .. 10.96.255.254). */
export const MAX_SERVICES = 65_534;

export interface Endpoints {
  readonly a: string;
  readonly b: string;
}

export function serviceName(n: number): string {
  return `lk-${n}`;
}

export function service(n: number): JsonObject {
  return makeService({ name: serviceName(n), namespace: NAMESPACE, clusterIP: clusterIP(n), ports: [{ port: SERVICE_PORT, targetPort: TARGET_PORT }] });
}

export function slice(n: number, ips: readonly string[], generation = 1): JsonObject {
  const s = makeEndpointSlice({ service: serviceName(n), namespace: NAMESPACE, ports: [{ port: TARGET_PORT }], endpoints: ips.map((ip) => ({ ip })) });
  (s['metadata'] as JsonObject)['resourceVersion'] = String(generation);
  return s;
}

/** File index (0-based) holding Service n. */
export function fileOf(n: number): number {
  return Math.floor((n - 1) / FILE_CHUNK);
}

export function fileName(index: number): string {
  return `lookup-${String(index).padStart(3, '0')}.json`;
}

/**
 * The manifest files for `services` Services: name → content. `override`
 * gives some Services other endpoint IPs (the one-endpoint changes).
 */
export function manifestFiles(services: number, eps: Endpoints, override: ReadonlyMap<number, readonly string[]> = new Map()): Map<string, string> {
  if (!Number.isInteger(services) || services < 1 || services > MAX_SERVICES) throw new RangeError(`services must be an integer in 1..${MAX_SERVICES}, got ${services}`);
  const out = new Map<string, string>();
  for (let f = 0; f * FILE_CHUNK < services; f++) out.set(fileName(f), chunk(f, services, eps, override));
  return out;
}

/** One file's content: its Services and their slices. */
export function chunk(f: number, services: number, eps: Endpoints, override: ReadonlyMap<number, readonly string[]> = new Map()): string {
  const items: JsonObject[] = [];
  const last = Math.min(services, (f + 1) * FILE_CHUNK);
  for (let n = f * FILE_CHUNK + 1; n <= last; n++) {
    const o = override.get(n);
    items.push(service(n), slice(n, o ?? [eps.a, eps.b], o ? 2 : 1));
  }
  return JSON.stringify({ apiVersion: 'v1', kind: 'List', items });
}

/**
 * The Services the one-endpoint changes touch: `count` of them spread over
 * the list, never the first or the last (the data path measures those).
 */
export function changeTargets(services: number, count: number): number[] {
  const inner = services - 2;
  if (inner < 1) return [];
  const out = new Set<number>();
  for (let i = 1; i <= count; i++) out.add(2 + Math.min(inner - 1, Math.floor((i * inner) / (count + 1))));
  return [...out];
}
