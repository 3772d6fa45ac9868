/**
 * dns/records: the record layer of `nodenet dns` (issue 30), pure.
 *
 * What it answers is the Kubernetes DNS-Based Service Discovery specification (kubernetes/dns
 * docs/specification.md; the TXT record says schema 1.1.0, whose change from 1.0.1 is the _ready_
 * definition over EndpointSlices), with CoreDNS's plugin/kubernetes as the reference for what the
 * spec leaves open:
 * - §2.2 `dns-version.<zone>` TXT "1.1.0";
 * - §2.3 ClusterIP Services: A at `<svc>.<ns>.svc.<zone>`, SRV at `_<port>._<proto>.<svc>...` for
 *   named ports (one target, the Service name, its A in additionals), PTR for the ClusterIP;
 * - §2.4 headless Services: A per _ready_ endpoint (NXDOMAIN when none), A at
 *   `<hostname>.<svc>...`, SRV per ready endpoint x named port, PTR per ready endpoint IP. An endpoint
 *   without `hostname` gets CoreDNS's generated one, its IP with dashes (`10-244-1-5`). Ready: the
 *   EndpointSlice condition `ready` is not false, or the Service has `publishNotReadyAddresses`.
 *   PTRs are made for the ready endpoints of every Service (as CoreDNS does), not headless ones only;
 * - §2.5 ExternalName: CNAME `<svc>.<ns>.svc.<zone>` -> externalName, whatever the qtype (the
 *   server chases or forwards the target; that is not this layer's job);
 * - §2.6 Pod A `a-b-c-d.<ns>.pod.<zone>`: as CoreDNS `pods insecure`, the IP is read off the name
 *   without checking a Pod has it; the namespace must exist (else NXDOMAIN).
 * NXDOMAIN vs NODATA (NOERROR, no answers): a name that holds records of another type, an empty
 * non-terminal (`_tcp.<svc>...`), the zone apex, `svc.<zone>`, `pod.<zone>`, and `<ns>.svc.<zone>` /
 * `<ns>.pod.<zone>` of an existing namespace are NODATA (CoreDNS findServices/findPods on an empty
 * name); any other name in the zone is NXDOMAIN. A namespace exists when a Namespace object, or any
 * Service, EndpointSlice or Pod, names it. `answer` returns undefined for a name it is not
 * authoritative for: outside the zone, and reverse names it has no PTR for (CoreDNS's usual
 * `fallthrough in-addr.arpa`), for the server to forward.
 * Limits: IPv4 only (AAAA is NODATA for existing names; IPv6 ClusterIPs, IPv6 slices and `ip6.arpa`
 * are ignored). SRV on a bare Service name (no `_port._proto`) is NODATA (CoreDNS lists all ports).
 * TTL 5 s, CoreDNS's default. Names are compared case-insensitively and written lowercase, without
 * the trailing dot. The index is immutable: the watcher builds a new one on each change.
 *
 * Wire format, for the next step: `dns-packet` 5.x (mafintosh; ~60 M weekly downloads, one dependency,
 * @types/dns-packet for types) encodes/decodes every RR type we need, EDNS0 OPT with its options,
 * and has streamEncode/streamDecode for TCP's 2-byte length framing; its last release (5.6.1) is
 * from 2023, but the format is stable and issues are still answered. `@leichtgewicht/dns-packet` 6.x is
 * the same code as ESM on Uint8Array with its own types, but with five small utf8-* dependencies and a
 * thousandth of the users; `dns2` is a whole server/client (we need only the codec). Recommendation:
 * `dns-packet` + `@types/dns-packet`, UDP/TCP sockets, truncation and EDNS0 size handled by us.
 */
import { arr, obj, objs, str, type O } from '../../../lib/json/loose.js';

export type RrType = 'A' | 'SRV' | 'PTR' | 'CNAME' | 'TXT';
export interface SrvData { priority: number; weight: number; port: number; target: string }
export interface Rr { name: string; type: RrType; ttl: number; data: string | SrvData }
export interface Answer { rcode: 'NOERROR' | 'NXDOMAIN'; answers: Rr[]; additionals?: Rr[] }
export interface DnsObjects { services: unknown[]; endpointSlices: unknown[]; pods?: unknown[]; namespaces?: unknown[] }
export interface DnsIndexOptions { domain?: string; ttl?: number }
export interface DnsIndex {
  readonly domain: string;
  /** The answer for one question; undefined when the name is not ours (forward it). */
  answer(qname: string, qtype: string): Answer | undefined;
}

export const SCHEMA_VERSION = '1.1.0';
export const DEFAULT_DOMAIN = 'cluster.local';
export const DEFAULT_TTL = 5;
const SERVICE_NAME_LABEL = 'kubernetes.io/service-name';

const norm = (name: string): string => name.toLowerCase().replace(/\.+$/, '');
const IPV4 = /^(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}$/;
const isIPv4 = (s: string): boolean => IPV4.test(s);
const reverseName = (ip: string): string => `${ip.split('.').reverse().join('.')}.in-addr.arpa`;
/** CoreDNS's endpointHostname when the endpoint has none: the IP, dots as dashes. */
const generatedHostname = (ip: string): string => ip.replace(/\./g, '-');

interface Port { name: string; proto: string; port: number }
interface ReadyEndpoint { ip: string; hostname: string }

function servicePorts(spec: O): Port[] {
  return objs(spec['ports']).flatMap((p) => {
    const name = str(p['name']).toLowerCase();
    const port = p['port'];
    if (name === '' || typeof port !== 'number') return [];
    return [{ name, proto: (str(p['protocol']) || 'TCP').toLowerCase(), port }];
  });
}

/** Ready IPv4 endpoints per `ns/name`, from the slices that name their Service, deduplicated by IP. */
function readyEndpoints(slices: unknown[], tolerateUnready: (key: string) => boolean): Map<string, ReadyEndpoint[]> {
  const out = new Map<string, Map<string, ReadyEndpoint>>();
  for (const raw of slices) {
    const slice = obj(raw);
    const meta = obj(slice?.['metadata']);
    if (!slice || !meta || str(slice['addressType']) !== 'IPv4') continue;
    const svc = str(obj(meta['labels'])?.[SERVICE_NAME_LABEL]);
    const ns = str(meta['namespace']);
    if (svc === '' || ns === '') continue;
    const key = `${ns}/${svc}`.toLowerCase();
    for (const ep of objs(slice['endpoints'])) {
      const ready = obj(ep['conditions'])?.['ready'] !== false;
      if (!ready && !tolerateUnready(key)) continue;
      const hostname = str(ep['hostname']).toLowerCase();
      for (const a of arr(ep['addresses'])) {
        const ip = str(a);
        if (!isIPv4(ip)) continue;
        let m = out.get(key);
        if (!m) out.set(key, (m = new Map()));
        if (!m.has(ip)) m.set(ip, { ip, hostname: hostname || generatedHostname(ip) });
      }
    }
  }
  return new Map([...out].map(([k, m]) => [k, [...m.values()]]));
}

export function buildDnsIndex(objects: DnsObjects, options: DnsIndexOptions = {}): DnsIndex {
  const domain = norm(options.domain ?? DEFAULT_DOMAIN);
  const ttl = options.ttl ?? DEFAULT_TTL;
  const records = new Map<string, Rr[]>();
  const namespaces = new Set<string>();
  const add = (rr: Rr): void => {
    const list = records.get(rr.name);
    if (!list) records.set(rr.name, [rr]);
    else if (!list.some((x) => x.type === rr.type && JSON.stringify(x.data) === JSON.stringify(rr.data))) list.push(rr);
  };
  const nsOf = (v: unknown): string => str(obj(obj(v)?.['metadata'])?.['namespace']).toLowerCase();
  for (const n of objects.namespaces ?? []) {
    const name = str(obj(obj(n)?.['metadata'])?.['name']).toLowerCase();
    if (name) namespaces.add(name);
  }
  for (const o of [...objects.services, ...objects.endpointSlices, ...(objects.pods ?? [])]) {
    const ns = nsOf(o);
    if (ns) namespaces.add(ns);
  }

  const services = objects.services.flatMap((raw) => {
    const meta = obj(obj(raw)?.['metadata']);
    const spec = obj(obj(raw)?.['spec']);
    const name = str(meta?.['name']).toLowerCase();
    const ns = str(meta?.['namespace']).toLowerCase();
    return meta && spec && name && ns ? [{ name, ns, spec }] : [];
  });
  const tolerant = new Set(services.filter((s) => s.spec['publishNotReadyAddresses'] === true).map((s) => `${s.ns}/${s.name}`));
  const endpoints = readyEndpoints(objects.endpointSlices, (k) => tolerant.has(k));

  add({ name: `dns-version.${domain}`, type: 'TXT', ttl, data: SCHEMA_VERSION });
  for (const { name, ns, spec } of services) {
    const fqdn = `${name}.${ns}.svc.${domain}`;
    const type = str(spec['type']);
    if (type === 'ExternalName') {
      const target = norm(str(spec['externalName']));
      if (target) add({ name: fqdn, type: 'CNAME', ttl, data: target });
      continue;
    }
    const ports = servicePorts(spec);
    const clusterIP = str(spec['clusterIP']);
    if (clusterIP === 'None') {
      const eps = endpoints.get(`${ns}/${name}`) ?? [];
      const weight = eps.length > 0 ? Math.max(1, Math.floor(100 / eps.length)) : 0;
      for (const ep of eps) {
        const host = `${ep.hostname}.${fqdn}`;
        add({ name: fqdn, type: 'A', ttl, data: ep.ip });
        add({ name: host, type: 'A', ttl, data: ep.ip });
        for (const p of ports) add({ name: `_${p.name}._${p.proto}.${fqdn}`, type: 'SRV', ttl, data: { priority: 0, weight, port: p.port, target: host } });
      }
      continue;
    }
    const ips = [...new Set([...arr(spec['clusterIPs']).map(str), clusterIP])].filter(isIPv4);
    if (ips.length === 0) continue;
    for (const ip of ips) {
      add({ name: fqdn, type: 'A', ttl, data: ip });
      add({ name: reverseName(ip), type: 'PTR', ttl, data: fqdn });
    }
    for (const p of ports) add({ name: `_${p.name}._${p.proto}.${fqdn}`, type: 'SRV', ttl, data: { priority: 0, weight: 100, port: p.port, target: fqdn } });
  }
  // PTR for every ready endpoint of every Service (§2.4.3; CoreDNS serves them for all Services).
  for (const { name, ns, spec } of services) {
    if (str(spec['type']) === 'ExternalName') continue;
    for (const ep of endpoints.get(`${ns}/${name}`) ?? []) add({ name: reverseName(ep.ip), type: 'PTR', ttl, data: `${ep.hostname}.${name}.${ns}.svc.${domain}` });
  }

  // Every proper ancestor (inside the zone) of an owner name: empty non-terminals answer NODATA.
  const nonTerminals = new Set<string>();
  for (const owner of records.keys()) {
    if (!owner.endsWith(`.${domain}`)) continue;
    const labels = owner.slice(0, -domain.length - 1).split('.');
    for (let i = 1; i < labels.length; i++) nonTerminals.add(`${labels.slice(i).join('.')}.${domain}`);
  }

  const answerFrom = (rrs: Rr[], qtype: string): Answer => {
    const cname = rrs.filter((r) => r.type === 'CNAME');
    const answers = cname.length > 0 ? cname : qtype === 'ANY' ? rrs : rrs.filter((r) => r.type === qtype);
    const targets = answers.flatMap((r) => (r.type === 'SRV' && typeof r.data === 'object' ? [r.data.target] : []));
    const additionals = [...new Set(targets)].flatMap((t) => (records.get(t) ?? []).filter((r) => r.type === 'A'));
    return additionals.length > 0 ? { rcode: 'NOERROR', answers, additionals } : { rcode: 'NOERROR', answers };
  };
  const nodata: Answer = { rcode: 'NOERROR', answers: [] };
  const nxdomain: Answer = { rcode: 'NXDOMAIN', answers: [] };

  return {
    domain,
    answer(qname: string, qtypeIn: string): Answer | undefined {
      const name = norm(qname);
      const qtype = qtypeIn.toUpperCase();
      const found = records.get(name);
      if (name.endsWith('.in-addr.arpa') || name === 'in-addr.arpa') return found ? answerFrom(found, qtype) : undefined;
      if (name !== domain && !name.endsWith(`.${domain}`)) return undefined;
      if (found) return answerFrom(found, qtype);
      if (nonTerminals.has(name)) return nodata;
      const labels = name === domain ? [] : name.slice(0, -domain.length - 1).split('.');
      if (labels.length === 0 || (labels.length === 1 && (labels[0] === 'svc' || labels[0] === 'pod'))) return nodata;
      const [first, second, third] = labels;
      // <ns>.svc / <ns>.pod of an existing namespace (CoreDNS: empty service or pod name).
      if (labels.length === 2 && (second === 'svc' || second === 'pod') && namespaces.has(first!)) return nodata;
      // §2.6: <a>-<b>-<c>-<d>.<ns>.pod.<zone>, the IP read off the name (CoreDNS pods insecure).
      if (labels.length === 3 && third === 'pod' && namespaces.has(second!)) {
        const ip = first!.replace(/-/g, '.');
        if (first!.split('-').length === 4 && isIPv4(ip)) return answerFrom([{ name, type: 'A', ttl, data: ip }], qtype);
      }
      return nxdomain;
    },
  };
}
