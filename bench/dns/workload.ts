/**
 * bench/dns/workload: what bench:dns serves and asks, the same for both servers. Pure.
 *
 * Service i (0-based) is `svc-<i>` in namespace `ns-<i mod namespaces>`, a plain ClusterIP Service (the API
 * allocates its address; dnsmasq's hosts file gets the same address, so both servers hold identical data).
 * The query files dnsperf loops over:
 *   (a) cluster: every Service's A name once, in a seeded random order (dnsperf goes round the file, so each
 *       name is asked equally often and no two runs differ);
 *   (b) external: EXTERNAL_NAMES names `ext-<k>.example.`, which only the bench's fake upstream answers
 *       (198.51.100.x / 203.0.113.x, TEST-NET, TTL an hour), asked after a warm-up, so from the servers' caches;
 *   (c) nxdomain: `nx-<i>.ns-<m>.svc.cluster.local` in existing namespaces, no such Service: NXDOMAIN from both
 *       (dnsmasq through --local=/cluster.local/, never asking upstream).
 */

export const CLUSTER_DOMAIN = 'cluster.local';
export const EXTERNAL_NAMES = 100;
/** The TTL the fake upstream gives: long, so neither cache drops an entry during a case. */
export const EXTERNAL_TTL = 3600;

export const CASES = ['cluster', 'external', 'nxdomain'] as const;
export type CaseName = (typeof CASES)[number];

export interface Svc {
  readonly name: string;
  readonly namespace: string;
}

export function namespaceName(m: number): string {
  return `ns-${m}`;
}

export function serviceAt(i: number, namespaces: number): Svc {
  return { name: `svc-${i}`, namespace: namespaceName(i % namespaces) };
}

export function fqdn(s: Svc, domain = CLUSTER_DOMAIN): string {
  return `${s.name}.${s.namespace}.svc.${domain}`;
}

/** The Service object the bench creates: ClusterIP, one TCP port, no selector (no endpoints needed for its A record). */
export function serviceBody(s: Svc): Record<string, unknown> {
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name: s.name, namespace: s.namespace },
    spec: { type: 'ClusterIP', ports: [{ name: 'http', protocol: 'TCP', port: 80, targetPort: 8080 }] },
  };
}

export function namespaceBody(name: string): Record<string, unknown> {
  return { apiVersion: 'v1', kind: 'Namespace', metadata: { name } };
}

/** External name k (0-based), as dnsperf and the client write it (no trailing dot). */
export function externalName(k: number): string {
  return `ext-${k}.example`;
}

/** The address the fake upstream gives external name k: TEST-NET-2 then TEST-NET-3, never a routable host. */
export function externalIP(k: number): string {
  if (!Number.isInteger(k) || k < 0 || k >= 508) throw new RangeError(`external name index must be in 0..507, got ${k}`);
  return k < 254 ? `198.51.100.${k + 1}` : `203.0.113.${k - 253}`;
}

/** k for `ext-<k>.example` (any case, with or without the trailing dot); null for any other name. */
export function externalIndex(name: string): number | null {
  const m = /^ext-(\d{1,3})\.example\.?$/i.exec(name);
  if (!m) return null;
  const k = Number(m[1]);
  return k < EXTERNAL_NAMES ? k : null;
}

/** A small seeded PRNG (mulberry32): the same order in every run. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** A seeded Fisher–Yates shuffle (a copy). */
export function shuffled<T>(xs: readonly T[], seed: number): T[] {
  const out = [...xs];
  const r = prng(seed);
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(r() * (i + 1));
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}

/** dnsperf's input: one `NAME A` line per query. */
export function queryFile(names: readonly string[]): string {
  return names.map((n) => `${n} A\n`).join('');
}

/** The three cases' names for `services` Services in `namespaces` namespaces. */
export function caseNames(services: number, namespaces: number): Record<CaseName, string[]> {
  const all = Array.from({ length: services }, (_, i) => fqdn(serviceAt(i, namespaces)));
  return {
    cluster: shuffled(all, 1),
    external: shuffled(Array.from({ length: EXTERNAL_NAMES }, (_, k) => externalName(k)), 2),
    nxdomain: shuffled(Array.from({ length: services }, (_, i) => `nx-${i}.${namespaceName(i % namespaces)}.svc.${CLUSTER_DOMAIN}`), 3),
  };
}

/** dnsmasq's --addn-hosts file: `IP NAME` per record. */
export function hostsFile(records: ReadonlyMap<string, string>): string {
  let s = '# bench:dns: the same Service records nodenet dns serves from the API\n';
  for (const [name, ip] of records) s += `${ip} ${name}\n`;
  return s;
}
