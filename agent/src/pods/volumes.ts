/**
 * pods/volumes: the files the kubelet projects into a Pod (pure).
 *
 * - The payload of each configMap, secret, downwardAPI and projected volume,
 *   as the kubelet's volume plugins compute it (configmap.MakePayload,
 *   secret.MakePayload, downwardapi.CollectData, projected's collectData):
 *   every key (a ConfigMap's data and binaryData, a Secret's decoded data)
 *   at its own name, or only the items asked for at their paths (a missing
 *   key fails unless optional); each file with its item's mode, else the
 *   volume's defaultMode (0644); downward API values as
 *   fieldpath.ExtractFieldPathAsString gives them (labels and annotations as
 *   sorted `key="value"` lines, Go's %q quoting); a serviceAccountToken
 *   source's token at its path. A missing object fails the volume
 *   (`configmap "x" not found`) unless optional, which makes it empty;
 *   projected sources' errors are joined as utilerrors.NewAggregate does.
 *   The AtomicWriter (atomic-writer.ts) writes the payload.
 * - The Pod's /etc/hosts (managedHostsFileContent): the kubelet's header,
 *   localhost lines, the Pod's IP with its hostname (and FQDN with a
 *   subdomain), then the hostAliases.
 * The objects and tokens are looked up by functions: null for an object that
 * does not exist, a throw for a read that failed (the message is kept).
 */
import { obj, str } from '../../../lib/json/loose.js';
import { objectData, subscriptValue } from './env.js';
import type { DownwardItem, KeyToPath, PodPlan, VolumePlan } from './pod-spec.js';
import { resourceFieldValue, type NodeAllocatable } from './quantity.js';

type O = Record<string, unknown>;

export interface FileProjection {
  readonly data: Buffer;
  readonly mode: number;
}

export type Payload = Map<string, FileProjection>;

export interface TokenSpec {
  readonly audience: string;
  readonly expirationSeconds: number;
}

export interface VolumeContext {
  readonly pod: O;
  readonly plan: PodPlan;
  readonly node: NodeAllocatable;
  readonly configMap: (name: string) => O | null;
  readonly secret: (name: string) => O | null;
  /** The token for a serviceAccountToken source (throws when it could not be had). */
  readonly token: (t: TokenSpec) => string;
}

export type PayloadResult = { readonly ok: true; readonly payload: Payload } | { readonly ok: false; readonly message: string };

const clean = (p: string) => p.split('/').filter((x) => x !== '' && x !== '.').join('/');

/** Go's strconv.Quote, for fieldpath.FormatMap. */
export function goQuote(s: string): string {
  let out = '"';
  for (const ch of s) {
    const c = ch.codePointAt(0)!;
    if (ch === '"' || ch === '\\') out += `\\${ch}`;
    else if (c === 7) out += '\\a';
    else if (c === 8) out += '\\b';
    else if (c === 12) out += '\\f';
    else if (c === 10) out += '\\n';
    else if (c === 13) out += '\\r';
    else if (c === 9) out += '\\t';
    else if (c === 11) out += '\\v';
    else if (c < 0x20 || c === 0x7f) out += `\\x${c.toString(16).padStart(2, '0')}`;
    else if (c >= 0x80 && c < 0xa0) out += `\\u${c.toString(16).padStart(4, '0')}`;
    else out += ch;
  }
  return `${out}"`;
}

/** fieldpath.FormatMap: `key="value"` lines, keys sorted, no trailing newline. */
export function formatMap(m: Readonly<Record<string, unknown>>): string {
  return Object.keys(m).sort().map((k) => `${k}=${goQuote(str(m[k]))}`).join('\n');
}

/** fieldpath.ExtractFieldPathAsString for what a downwardAPI volume may read. */
function volumeFieldValue(pod: O, path: string): string {
  const m = obj(pod['metadata']) ?? {};
  const sub = subscriptValue(pod, path);
  if (sub !== null) return sub;
  switch (path) {
    case 'metadata.name': return str(m['name']);
    case 'metadata.namespace': return str(m['namespace']);
    case 'metadata.uid': return str(m['uid']);
    case 'metadata.labels': return formatMap(obj(m['labels']) ?? {});
    case 'metadata.annotations': return formatMap(obj(m['annotations']) ?? {});
    default: throw new Error(`unsupported fieldPath: ${path}`);
  }
}

/** configmap.MakePayload / secret.MakePayload. */
function keysPayload(o: O, kind: 'configMap' | 'secret', items: readonly KeyToPath[], defaultMode: number, optional: boolean): Payload {
  const data = objectData(o, kind);
  const out: Payload = new Map();
  if (!items.length) {
    for (const [k, v] of data) out.set(k, { data: v, mode: defaultMode });
    return out;
  }
  for (const it of items) {
    const v = data.get(it.key);
    if (v === undefined) {
      if (optional) continue;
      throw new Error(kind === 'configMap' ? `configmap references non-existent config key: ${it.key}` : `references non-existent secret key: ${it.key}`);
    }
    out.set(clean(it.path), { data: v, mode: it.mode ?? defaultMode });
  }
  return out;
}

/** downwardapi.CollectData. */
function downwardPayload(items: readonly DownwardItem[], ctx: VolumeContext, defaultMode: number): Payload {
  const out: Payload = new Map();
  const errs: string[] = [];
  for (const it of items) {
    let value = '';
    try {
      if (it.fieldRef) value = volumeFieldValue(ctx.pod, it.fieldRef);
      else if (it.resourceFieldRef) {
        const r = it.resourceFieldRef;
        const c = ctx.plan.containers.find((x) => x.name === r.containerName);
        if (!c) throw new Error(`container ${r.containerName} not found`);
        value = resourceFieldValue(r.resource, c.resources, r.divisor, ctx.node);
      }
    } catch (e) {
      errs.push(e instanceof Error ? e.message : String(e));
    }
    out.set(clean(it.path), { data: Buffer.from(value, 'utf8'), mode: it.mode ?? defaultMode });
  }
  if (errs.length) throw new Error(aggregate(errs));
  return out;
}

/** utilerrors.NewAggregate(...).Error(): one message as is, several in brackets. */
function aggregate(msgs: readonly string[]): string {
  const uniq = [...new Set(msgs)];
  return uniq.length === 1 ? uniq[0]! : `[${uniq.join(', ')}]`;
}

function objectOrEmpty(ctx: VolumeContext, kind: 'configMap' | 'secret', name: string, optional: boolean): O {
  const o = kind === 'configMap' ? ctx.configMap(name) : ctx.secret(name);
  if (o) return o;
  if (optional) return {};
  throw new Error(`${kind === 'configMap' ? 'configmap' : 'secret'} "${name}" not found`);
}

/** The files of a volume (emptyDir has none: it is a directory). */
export function volumePayload(v: VolumePlan, ctx: VolumeContext): PayloadResult {
  const s = v.source;
  try {
    switch (s.kind) {
      case 'emptyDir': return { ok: true, payload: new Map() };
      case 'configMap':
      case 'secret':
        return { ok: true, payload: keysPayload(objectOrEmpty(ctx, s.kind, s.name, s.optional), s.kind, s.items, s.defaultMode, s.optional) };
      case 'downwardAPI':
        return { ok: true, payload: downwardPayload(s.items, ctx, s.defaultMode) };
      case 'projected': {
        const out: Payload = new Map();
        const errs: string[] = [];
        for (const src of s.sources) {
          try {
            let part: Payload;
            if (src.kind === 'configMap' || src.kind === 'secret') part = keysPayload(objectOrEmpty(ctx, src.kind, src.name, src.optional), src.kind, src.items, s.defaultMode, src.optional);
            else if (src.kind === 'downwardAPI') part = downwardPayload(src.items, ctx, s.defaultMode);
            else part = new Map([[clean(src.path), { data: Buffer.from(ctx.token({ audience: src.audience, expirationSeconds: src.expirationSeconds }), 'utf8'), mode: s.defaultMode }]]);
            for (const [k, f] of part) out.set(k, f);
          } catch (e) {
            errs.push(e instanceof Error ? e.message : String(e));
          }
        }
        if (errs.length) return { ok: false, message: aggregate(errs) };
        return { ok: true, payload: out };
      }
    }
  } catch (e) {
    return { ok: false, message: e instanceof Error ? e.message : String(e) };
  }
}

/** The ConfigMaps and Secrets a Pod's volumes and env read (the Node authorizer's graph, for the kubelet's watches). */
export function podObjectRefs(plan: PodPlan): { configMaps: Set<string>; secrets: Set<string> } {
  const configMaps = new Set<string>();
  const secrets = new Set<string>();
  const add = (kind: 'configMap' | 'secret', name: string) => (kind === 'configMap' ? configMaps : secrets).add(name);
  for (const v of plan.volumes) {
    const s = v.source;
    if (s.kind === 'configMap' || s.kind === 'secret') add(s.kind, s.name);
    if (s.kind === 'projected') for (const src of s.sources) if (src.kind === 'configMap' || src.kind === 'secret') add(src.kind, src.name);
  }
  for (const c of plan.containers) {
    for (const e of c.envFrom) add(e.kind, e.name);
    for (const e of c.env) {
      if ('configMapKeyRef' in e) add('configMap', e.configMapKeyRef.name);
      if ('secretKeyRef' in e) add('secret', e.secretKeyRef.name);
    }
  }
  return { configMaps, secrets };
}

/** The serviceAccountToken sources of a Pod's volumes. */
export function podTokenSpecs(plan: PodPlan): TokenSpec[] {
  const out = new Map<string, TokenSpec>();
  for (const v of plan.volumes) {
    if (v.source.kind !== 'projected') continue;
    for (const src of v.source.sources) if (src.kind === 'serviceAccountToken') out.set(`${src.audience}/${src.expirationSeconds}`, { audience: src.audience, expirationSeconds: src.expirationSeconds });
  }
  return [...out.values()];
}

/** The kubelet's --cluster-domain's default (the agent's --cluster-domain replaces it). */
export const CLUSTER_DOMAIN = 'cluster.local';

/** The Pod's /etc/hosts, as managedHostsFileContent writes it. */
export function etcHosts(o: { podIPs: readonly string[]; hostname: string; subdomain: string; namespace: string; hostAliases: PodPlan['hostAliases']; clusterDomain?: string }): string {
  let out = '# Kubernetes-managed hosts file.\n127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\nfe00::0\tip6-localnet\nfe00::0\tip6-mcastprefix\nfe00::1\tip6-allnodes\nfe00::2\tip6-allrouters\n';
  const domain = o.subdomain ? `${o.subdomain}.${o.namespace}.svc.${o.clusterDomain ?? CLUSTER_DOMAIN}` : '';
  for (const ip of o.podIPs) out += domain ? `${ip}\t${o.hostname}.${domain}\t${o.hostname}\n` : `${ip}\t${o.hostname}\n`;
  if (o.hostAliases.length) {
    out += '\n# Entries added by HostAliases.\n';
    for (const h of o.hostAliases) out += `${h.ip}\t${h.hostnames.join('\t')}\n`;
  }
  return out;
}
