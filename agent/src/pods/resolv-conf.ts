/**
 * pods/resolv-conf: a Pod's /etc/resolv.conf, by its dnsPolicy and dnsConfig,
 * as the kubelet forms it (pkg/kubelet/network/dns/dns.go) and a CRI runtime
 * writes it (search, then nameservers, then options). Pure: the kubelet
 * (kubelet.ts) hands in the node's resolv.conf text and writes the result.
 *
 * - ClusterFirst (the API server's default): the cluster DNS servers only (the
 *   cluster DNS forwards the rest itself), search `<ns>.svc.<domain>
 *   svc.<domain> <domain>` then the node's search domains, `options ndots:5`.
 *   With no cluster DNS configured the kubelet falls back to Default and
 *   says so (MissingClusterDNS). On a hostNetwork Pod ClusterFirst means
 *   Default; ClusterFirstWithHostNet is ClusterFirst whatever the network.
 * - Default: the node's nameservers, search and options.
 * - None: nothing but the Pod's dnsConfig.
 * Every policy then appends the Pod's dnsConfig (nameservers and searches
 * deduplicated, options merged by name, the Pod's value winning), and the
 * result is cut to what resolvers accept: 3 nameservers, 32 search paths of
 * at most 253 characters and 2048 characters in all (the kubelet's
 * ExpandedDNSConfig limits, GA since 1.28), each cut a DNSConfigForming
 * Warning. The node's file is read as the kubelet reads it (the last
 * `search` line wins, a trailing dot dropped; the last `options` line wins),
 * and `domain NAME` as the resolver does: a one-name search list.
 */

export const DNS_POLICIES = ['ClusterFirst', 'ClusterFirstWithHostNet', 'Default', 'None'] as const;
export type DnsPolicy = (typeof DNS_POLICIES)[number];

export function isDnsPolicy(s: string): s is DnsPolicy {
  return (DNS_POLICIES as readonly string[]).includes(s);
}

/** Resolvers' limits, as the API server validates dnsConfig and the kubelet cuts the composed file. */
export const MAX_NAMESERVERS = 3;
export const MAX_SEARCH_PATHS = 32;
export const MAX_SEARCH_CHARS = 2048;
/** A longer search path makes some resolvers abort (glibc 2.28): the kubelet leaves it out. */
export const MAX_SEARCH_PATH_LENGTH = 253;
/** The kubelet's options for a ClusterFirst Pod. */
const CLUSTER_FIRST_OPTIONS = ['ndots:5'] as const;

export interface DnsOption {
  readonly name: string;
  /** null: an option without value (`rotate`). */
  readonly value: string | null;
}

/** spec.dnsConfig, validated (pod-spec.ts). */
export interface PodDnsConfig {
  readonly nameservers: readonly string[];
  readonly searches: readonly string[];
  readonly options: readonly DnsOption[];
}

/** What a resolv.conf says: options as written (`ndots:5`, `rotate`). */
export interface ResolvConf {
  readonly nameservers: readonly string[];
  readonly searches: readonly string[];
  readonly options: readonly string[];
}

/** A node's resolv.conf, read as the kubelet reads it (see the header). Never throws: what is not understood is skipped. */
export function parseResolvConf(text: string): ResolvConf {
  const nameservers: string[] = [];
  let searches: string[] = [];
  let options: string[] = [];
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (line.startsWith('#') || line.startsWith(';')) continue;
    const [key, ...rest] = line.split(/\s+/);
    switch (key) {
      case 'nameserver':
        if (rest[0]) nameservers.push(rest[0]);
        break;
      case 'search':
        // The same domain with and without its trailing dot counts once against the limits.
        searches = rest.map((s) => (s.length > 1 && s.endsWith('.') ? s.slice(0, -1) : s));
        break;
      case 'domain':
        if (rest[0]) searches = [rest[0].length > 1 && rest[0].endsWith('.') ? rest[0].slice(0, -1) : rest[0]];
        break;
      case 'options':
        options = rest;
        break;
    }
  }
  return { nameservers, searches, options };
}

/** The file a CRI runtime writes: search, nameservers, options; a section only when it has something. */
export function renderResolvConf(c: ResolvConf): string {
  let out = '';
  if (c.searches.length) out += `search ${c.searches.join(' ')}\n`;
  for (const ns of c.nameservers) out += `nameserver ${ns}\n`;
  if (c.options.length) out += `options ${c.options.join(' ')}\n`;
  return out;
}

export interface PodDnsInput {
  /** spec.dnsPolicy; '' is the API server's default, ClusterFirst. */
  readonly policy: DnsPolicy | '';
  readonly config: PodDnsConfig | null;
  readonly hostNetwork: boolean;
  /** The kubelet's --cluster-dns. */
  readonly clusterDNS: readonly string[];
  /** The kubelet's --cluster-domain; '' adds no cluster search paths. */
  readonly clusterDomain: string;
  readonly pod: { readonly namespace: string; readonly name: string; readonly uid: string };
  /** The node's resolv.conf (parseResolvConf). */
  readonly node: ResolvConf;
}

export interface DnsEvent {
  readonly reason: 'MissingClusterDNS' | 'DNSConfigForming';
  readonly message: string;
}

export interface PodDns {
  readonly conf: ResolvConf;
  /** Warnings for the Pod, as the kubelet records them. */
  readonly events: readonly DnsEvent[];
}

const unique = (xs: readonly string[]): string[] => [...new Set(xs)];

/** Options merged by name, a later one replacing an earlier one in place; `name:value` or a bare name. */
function mergeOptions(base: readonly string[], extra: readonly DnsOption[]): string[] {
  const m = new Map<string, string | null>();
  for (const op of base) {
    const i = op.indexOf(':');
    if (i === -1) m.set(op, null);
    else m.set(op.slice(0, i), op.slice(i + 1));
  }
  for (const op of extra) m.set(op.name, op.value);
  return [...m].map(([k, v]) => (v ? `${k}:${v}` : k));
}

/** The search list cut to the limits; a Warning when anything was left out. */
function fitSearches(all: readonly string[], events: DnsEvent[]): string[] {
  let cut = all.length > MAX_SEARCH_PATHS;
  let s = all.slice(0, MAX_SEARCH_PATHS);
  const kept = s.filter((x) => x.length <= MAX_SEARCH_PATH_LENGTH);
  if (kept.length !== s.length) cut = true;
  s = kept;
  // The line's length counts the spaces between paths; drop from the end until it fits.
  while (s.length && s.join(' ').length > MAX_SEARCH_CHARS) {
    s.pop();
    cut = true;
  }
  if (cut) events.push({ reason: 'DNSConfigForming', message: `Search Line limits were exceeded, some search paths have been omitted, the applied search line is: ${s.join(' ')}` });
  return s;
}

function fitNameservers(all: readonly string[], events: DnsEvent[]): string[] {
  if (all.length <= MAX_NAMESERVERS) return [...all];
  const s = all.slice(0, MAX_NAMESERVERS);
  events.push({ reason: 'DNSConfigForming', message: `Nameserver limits were exceeded, some nameservers have been omitted, the applied nameserver line is: ${s.join(' ')}` });
  return s;
}

/** Which base a policy starts from: the cluster's, the node's or nothing. */
function baseOf(policy: DnsPolicy | '', hostNetwork: boolean): 'cluster' | 'node' | 'none' {
  switch (policy) {
    case 'None': return 'none';
    case 'Default': return 'node';
    case 'ClusterFirstWithHostNet': return 'cluster';
    default: return hostNetwork ? 'node' : 'cluster';
  }
}

/** The Pod's resolv.conf and the Warnings forming it gave. */
export function podDns(i: PodDnsInput): PodDns {
  const events: DnsEvent[] = [];
  let base = baseOf(i.policy, i.hostNetwork);
  let conf: ResolvConf = { nameservers: [], searches: [], options: [] };
  if (base === 'cluster' && i.clusterDNS.length === 0) {
    const why = 'kubelet does not have ClusterDNS IP configured and cannot create Pod using "ClusterFirst" policy. Falling back to "Default" policy.';
    events.push({ reason: 'MissingClusterDNS', message: `pod: "${i.pod.name}_${i.pod.namespace}(${i.pod.uid})". ${why}` });
    base = 'node';
  }
  if (base === 'node') conf = i.node;
  if (base === 'cluster') {
    const d = i.clusterDomain;
    conf = {
      nameservers: [...i.clusterDNS],
      searches: d ? unique([`${i.pod.namespace}.svc.${d}`, `svc.${d}`, d, ...i.node.searches]) : [...i.node.searches],
      options: [...CLUSTER_FIRST_OPTIONS],
    };
  }
  if (i.config) {
    conf = {
      nameservers: unique([...conf.nameservers, ...i.config.nameservers]),
      searches: unique([...conf.searches, ...i.config.searches]),
      options: mergeOptions(conf.options, i.config.options),
    };
  }
  const nameservers = fitNameservers(conf.nameservers, events);
  const searches = fitSearches(conf.searches, events);
  return { conf: { nameservers, searches, options: [...conf.options] }, events };
}
