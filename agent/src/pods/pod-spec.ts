/**
 * pods/pod-spec: what the embedded kubelet makes of a Pod's spec (pure).
 *
 * nodenet has no images and no container runtime: a container is a process
 * started from the node's own filesystem. So:
 * - `image` must be the marker `nodenet/host` (optionally `:latest`); any
 *   other image is not an error of the spec but of the node, as a kubelet
 *   with imagePullPolicy Never reports it: the container waits with reason
 *   ErrImageNeverPull (imageProblem below);
 * - `command` is required (no image entrypoint exists), `args` follow it;
 * - `env` (value; valueFrom fieldRef, resourceFieldRef, configMapKeyRef,
 *   secretKeyRef), `envFrom` (configMapRef, secretRef, prefix), `workingDir`,
 *   `ports` (no hostPort), httpGet / tcpSocket / exec probes, and the
 *   volumes the kubelet projects (emptyDir, configMap, secret, downwardAPI,
 *   projected with configMap, secret, downwardAPI and serviceAccountToken
 *   sources) with each container's volumeMounts (readOnly, subPath,
 *   subPathExpr), `hostAliases`, `hostname` and `subdomain`, `dnsPolicy`
 *   and `dnsConfig` are honoured (env.ts resolves the environment,
 *   volumes.ts the volumes' files, mount-plan.ts the mounts, resolv-conf.ts
 *   the Pod's resolv.conf); `resources.limits.cpu` and `.memory` are
 *   enforced with cgroups where the node can (cgroup-config.ts, cgroups.ts;
 *   where it cannot, the Pod runs and a LimitsNotEnforced Event says so).
 * Since the API server does not validate volumes yet, the checks the kubelet
 * relies on are made here: volume names, one source each, relative item
 * paths without `..`, modes, an absolute mountPath naming a volume; and
 * those of dnsPolicy and dnsConfig (the API server's validatePodDNSConfig:
 * a known policy, None with nameservers, at most 3 nameservers that are IP
 * addresses, at most 32 search paths that are DNS subdomains and 2048
 * characters, named options), since a bad one would make a broken file.
 * Anything else nodenet cannot honour (other volume types, init containers,
 * host namespaces, security contexts, limits other than cpu and memory, lifecycle hooks, tty, mount
 * propagation, ...) makes the whole Pod rejected: planPod returns every
 * offending field, the kubelet records a Warning Event naming them and fails
 * the Pod (UnsupportedPodSpec). Scheduling-only fields (nodeSelector,
 * affinity, tolerations, priority, requests), imagePullSecrets (nothing is
 * ever pulled) and the API server's defaults (terminationMessagePath,
 * imagePullPolicy) are accepted and have no effect.
 */

export const HOST_IMAGE = 'nodenet/host';

import { obj } from '../../../lib/json/loose.js';
import { isIP } from 'node:net';
import { isResourceField, quantityNanos, type ResourceField } from './quantity.js';
import { DNS_POLICIES, isDnsPolicy, MAX_NAMESERVERS, MAX_SEARCH_CHARS, MAX_SEARCH_PATHS, type DnsOption, type DnsPolicy, type PodDnsConfig } from './resolv-conf.js';

type O = Record<string, unknown>;
const arr = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);
const str = (v: unknown): string => (typeof v === 'string' ? v : '');
const isSet = (v: unknown): boolean => v !== undefined && v !== null && !(Array.isArray(v) && v.length === 0) && !(obj(v) && Object.keys(v as O).length === 0) && v !== false && v !== '';

export interface Problem {
  /** The JSON path of the field, `spec.containers[0].volumeMounts`. */
  readonly field: string;
  readonly message: string;
}

/** The fieldRef paths env may read (podFieldSelectorRuntimeValue), besides metadata.labels['k'] and metadata.annotations['k']. */
export const ENV_FIELD_REFS = ['metadata.name', 'metadata.namespace', 'metadata.uid', 'spec.nodeName', 'spec.serviceAccountName', 'status.hostIP', 'status.hostIPs', 'status.podIP', 'status.podIPs'] as const;
/** The fieldRef paths a downwardAPI volume item may read, besides the subscripted ones. */
export const VOLUME_FIELD_REFS = ['metadata.name', 'metadata.namespace', 'metadata.uid', 'metadata.labels', 'metadata.annotations'] as const;
const SUBSCRIPT = /^metadata\.(labels|annotations)\['([^']*)'\]$/;

/** The values the kubelet knows when a container starts, by fieldRef path (ENV_FIELD_REFS). */
export type FieldValues = Readonly<Record<(typeof ENV_FIELD_REFS)[number], string>>;

export interface KeyRef {
  readonly name: string;
  readonly key: string;
  readonly optional: boolean;
}

export interface ResourceRef {
  /** The container whose resources are read ('' : this one). */
  readonly containerName: string;
  readonly resource: ResourceField;
  readonly divisor: string | null;
}

export type EnvSource =
  | { readonly name: string; readonly value: string }
  | { readonly name: string; readonly fieldRef: string }
  | { readonly name: string; readonly resourceFieldRef: ResourceRef }
  | { readonly name: string; readonly configMapKeyRef: KeyRef }
  | { readonly name: string; readonly secretKeyRef: KeyRef };

export interface EnvFromSource {
  readonly prefix: string;
  readonly kind: 'configMap' | 'secret';
  readonly name: string;
  readonly optional: boolean;
}

export interface KeyToPath {
  readonly key: string;
  readonly path: string;
  readonly mode: number | null;
}

export interface DownwardItem {
  readonly path: string;
  readonly fieldRef: string | null;
  readonly resourceFieldRef: ResourceRef | null;
  readonly mode: number | null;
}

export type ProjectedSource =
  | { readonly kind: 'configMap'; readonly name: string; readonly items: readonly KeyToPath[]; readonly optional: boolean }
  | { readonly kind: 'secret'; readonly name: string; readonly items: readonly KeyToPath[]; readonly optional: boolean }
  | { readonly kind: 'downwardAPI'; readonly items: readonly DownwardItem[] }
  | { readonly kind: 'serviceAccountToken'; readonly audience: string; readonly expirationSeconds: number; readonly path: string };

export type VolumeSource =
  | { readonly kind: 'emptyDir'; readonly medium: '' | 'Memory'; readonly sizeLimit: string | null }
  | { readonly kind: 'configMap'; readonly name: string; readonly items: readonly KeyToPath[]; readonly defaultMode: number; readonly optional: boolean }
  | { readonly kind: 'secret'; readonly name: string; readonly items: readonly KeyToPath[]; readonly defaultMode: number; readonly optional: boolean }
  | { readonly kind: 'downwardAPI'; readonly items: readonly DownwardItem[]; readonly defaultMode: number }
  | { readonly kind: 'projected'; readonly sources: readonly ProjectedSource[]; readonly defaultMode: number };

export interface VolumePlan {
  readonly name: string;
  readonly source: VolumeSource;
}

export interface VolumeMountPlan {
  readonly name: string;
  /** Absolute and normalised. */
  readonly mountPath: string;
  readonly readOnly: boolean;
  /** '' when none. */
  readonly subPath: string;
  /** '' when none; expanded with the container's environment at its start. */
  readonly subPathExpr: string;
}

export type ProbeAction =
  | { readonly kind: 'exec'; readonly command: readonly string[] }
  | { readonly kind: 'httpGet'; readonly scheme: 'HTTP' | 'HTTPS'; readonly host: string; readonly port: number; readonly path: string; readonly headers: readonly { name: string; value: string }[] }
  | { readonly kind: 'tcpSocket'; readonly host: string; readonly port: number };

export interface ProbeSpec {
  readonly action: ProbeAction;
  readonly initialDelaySeconds: number;
  readonly periodSeconds: number;
  readonly timeoutSeconds: number;
  readonly successThreshold: number;
  readonly failureThreshold: number;
  /** The probe's own terminationGracePeriodSeconds (liveness and startup), else the Pod's. */
  readonly terminationGracePeriodSeconds: number | null;
}

export interface ContainerPlan {
  readonly name: string;
  readonly image: string;
  readonly command: readonly string[];
  readonly args: readonly string[];
  readonly env: readonly EnvSource[];
  readonly envFrom: readonly EnvFromSource[];
  readonly volumeMounts: readonly VolumeMountPlan[];
  /** spec.resources as written (requests and limits, for resourceFieldRef). */
  readonly resources: { readonly requests: Readonly<Record<string, unknown>>; readonly limits: Readonly<Record<string, unknown>> };
  readonly workingDir: string | null;
  readonly readiness: ProbeSpec | null;
  readonly liveness: ProbeSpec | null;
  readonly startup: ProbeSpec | null;
}

export type RestartPolicy = 'Always' | 'OnFailure' | 'Never';

export interface PodPlan {
  readonly restartPolicy: RestartPolicy;
  readonly terminationGracePeriodSeconds: number;
  readonly hostname: string | null;
  /** spec.subdomain ('' when none): the Pod's FQDN in /etc/hosts. */
  readonly subdomain: string;
  readonly serviceAccountName: string;
  /** spec.enableServiceLinks (true when absent, the API server's default). */
  readonly enableServiceLinks: boolean;
  readonly hostAliases: readonly { readonly ip: string; readonly hostnames: readonly string[] }[];
  readonly volumes: readonly VolumePlan[];
  readonly containers: readonly ContainerPlan[];
  /** spec.dnsPolicy (ClusterFirst when absent, the API server's default) and spec.dnsConfig (null when absent): resolv-conf.ts's input. */
  readonly dns: { readonly policy: DnsPolicy; readonly config: PodDnsConfig | null };
}

export type PlanResult = { readonly ok: true; readonly plan: PodPlan } | { readonly ok: false; readonly problems: readonly Problem[] };

/** Pod spec fields that are accepted: honoured, or only the scheduler's / the API server's defaults. */
const POD_FIELDS_OK = new Set([
  'containers', 'restartPolicy', 'terminationGracePeriodSeconds', 'nodeName', 'schedulerName', 'dnsPolicy', 'enableServiceLinks',
  'tolerations', 'nodeSelector', 'affinity', 'priority', 'priorityClassName', 'preemptionPolicy', 'schedulingGates',
  'topologySpreadConstraints', 'hostname', 'subdomain', 'serviceAccountName', 'serviceAccount', 'securityContext', 'shareProcessNamespace',
  'hostNetwork', 'hostPID', 'hostIPC', 'automountServiceAccountToken', 'overhead', 'volumes', 'hostAliases', 'imagePullSecrets', 'dnsConfig',
]);

/** Container fields that are accepted (the rest is rejected when set). */
const CONTAINER_FIELDS_OK = new Set([
  'name', 'image', 'command', 'args', 'env', 'workingDir', 'ports', 'readinessProbe', 'livenessProbe', 'startupProbe',
  'terminationMessagePath', 'terminationMessagePolicy', 'imagePullPolicy', 'resources', 'securityContext', 'envFrom', 'volumeMounts',
]);

const WHY: Readonly<Record<string, string>> = {
  volumeDevices: 'nodenet attaches no devices',
  initContainers: 'nodenet does not run init containers',
  ephemeralContainers: 'nodenet does not run ephemeral containers',
  runtimeClassName: 'nodenet has one runtime: processes on the node',
  lifecycle: 'nodenet runs no lifecycle hooks',
  stdin: 'nodenet attaches no stdin',
  stdinOnce: 'nodenet attaches no stdin',
  tty: 'nodenet allocates no tty',
  resizePolicy: 'nodenet applies no resources',
  restartPolicy: 'nodenet does not run sidecar containers',
  activeDeadlineSeconds: 'nodenet does not enforce deadlines',
  readinessGates: 'nodenet evaluates no readiness gates',
  hostUsers: 'nodenet does not create user namespaces',
  resourceClaims: 'nodenet allocates no resources',
  setHostnameAsFQDN: 'nodenet sets the pod name as hostname only',
  os: 'nodenet runs Linux processes only',
  resources: 'nodenet applies no resources',
};

function why(key: string): string {
  return WHY[key] ?? 'nodenet cannot honour it';
}

/** Accepts `nodenet/host` and `nodenet/host:latest`. */
export function isHostImage(image: string): boolean {
  return image === HOST_IMAGE || image === `${HOST_IMAGE}:latest`;
}

/** The waiting state of a container whose image is not the node's filesystem, or null. */
export function imageProblem(image: string): { reason: 'ErrImageNeverPull'; message: string } | null {
  if (isHostImage(image)) return null;
  return { reason: 'ErrImageNeverPull', message: `Container image ${JSON.stringify(image)} is not present: nodenet cannot pull images; use image ${HOST_IMAGE} (a process from the node's filesystem)` };
}

function int(v: unknown, def: number, min: number): number {
  return typeof v === 'number' && Number.isInteger(v) && v >= min ? v : def;
}

/** A probe's or port's target: a number or the name of one of the container's ports. */
function portOf(v: unknown, ports: readonly unknown[], field: string, problems: Problem[]): number {
  if (typeof v === 'number' && Number.isInteger(v) && v > 0 && v < 65536) return v;
  if (typeof v === 'string' && /^\d+$/.test(v)) return Number(v);
  if (typeof v === 'string') {
    const p = ports.map(obj).find((x) => x?.['name'] === v);
    const n = p?.['containerPort'];
    if (typeof n === 'number') return n;
    problems.push({ field, message: `no port of the container is named ${JSON.stringify(v)}` });
    return 0;
  }
  problems.push({ field, message: 'a port number or name is required' });
  return 0;
}

function probeOf(v: unknown, field: string, ports: readonly unknown[], problems: Problem[], kind: 'readiness' | 'liveness' | 'startup'): ProbeSpec | null {
  const p = obj(v);
  if (!p) return null;
  const handlers = ['exec', 'httpGet', 'tcpSocket', 'grpc'].filter((k) => p[k] !== undefined && p[k] !== null);
  let action: ProbeAction | null = null;
  if (handlers.length !== 1) problems.push({ field, message: 'exactly one of exec, httpGet, tcpSocket must be given' });
  else if (handlers[0] === 'grpc') problems.push({ field: `${field}.grpc`, message: 'nodenet runs exec, httpGet and tcpSocket probes, not grpc' });
  else if (handlers[0] === 'exec') {
    const cmd = arr(obj(p['exec'])?.['command']).map(String);
    if (!cmd.length) problems.push({ field: `${field}.exec.command`, message: 'a command is required' });
    action = { kind: 'exec', command: cmd };
  } else if (handlers[0] === 'httpGet') {
    const h = obj(p['httpGet'])!;
    const scheme = str(h['scheme']) || 'HTTP';
    if (scheme !== 'HTTP' && scheme !== 'HTTPS') problems.push({ field: `${field}.httpGet.scheme`, message: 'HTTP or HTTPS' });
    const headers = arr(h['httpHeaders']).map(obj).filter((x): x is O => !!x).map((x) => ({ name: str(x['name']), value: str(x['value']) }));
    action = { kind: 'httpGet', scheme: scheme === 'HTTPS' ? 'HTTPS' : 'HTTP', host: str(h['host']), port: portOf(h['port'], ports, `${field}.httpGet.port`, problems), path: str(h['path']) || '/', headers };
  } else {
    const s = obj(p['tcpSocket'])!;
    action = { kind: 'tcpSocket', host: str(s['host']), port: portOf(s['port'], ports, `${field}.tcpSocket.port`, problems) };
  }
  if (!action) return null;
  // Kubernetes' defaults: period 10 s, timeout 1 s, thresholds 1 and 3; liveness and startup need successThreshold 1.
  const successThreshold = int(p['successThreshold'], 1, 1);
  if (kind !== 'readiness' && successThreshold !== 1) problems.push({ field: `${field}.successThreshold`, message: 'must be 1' });
  const tgps = p['terminationGracePeriodSeconds'];
  return {
    action,
    initialDelaySeconds: int(p['initialDelaySeconds'], 0, 0),
    periodSeconds: int(p['periodSeconds'], 10, 1),
    timeoutSeconds: int(p['timeoutSeconds'], 1, 1),
    successThreshold,
    failureThreshold: int(p['failureThreshold'], 3, 1),
    terminationGracePeriodSeconds: typeof tgps === 'number' && tgps >= 0 ? tgps : null,
  };
}

function securityContextProblems(sc: unknown, field: string, problems: Problem[]): void {
  const o = obj(sc);
  if (!o) return;
  for (const [k, v] of Object.entries(o)) {
    if (!isSet(v)) continue;
    // What the node's processes already are (root, not privileged beyond it) is fine to ask for.
    if (k === 'runAsNonRoot' && v === false) continue;
    if (k === 'allowPrivilegeEscalation' && v === true) continue;
    problems.push({ field: `${field}.${k}`, message: 'nodenet runs a container as the agent\'s own user with the agent\'s capabilities and cannot apply security contexts' });
  }
}

function containerOf(c: O, i: number, volumes: ReadonlySet<string>, problems: Problem[]): ContainerPlan {
  const field = `spec.containers[${i}]`;
  for (const [k, v] of Object.entries(c)) {
    if (CONTAINER_FIELDS_OK.has(k) || !isSet(v)) continue;
    problems.push({ field: `${field}.${k}`, message: why(k) });
  }
  securityContextProblems(c['securityContext'], `${field}.securityContext`, problems);
  const res = obj(c['resources']) ?? {};
  if (isSet(res['claims'])) problems.push({ field: `${field}.resources.claims`, message: 'nodenet allocates no resource claims' });
  // Limits on cpu and memory are enforced with cgroups; no other (ephemeral-storage, hugepages, extended resources).
  for (const [k, v] of Object.entries(obj(res['limits']) ?? {})) {
    if (!isSet(v)) continue;
    if (k === 'cpu' || k === 'memory') {
      if (quantityNanos(v) === null) problems.push({ field: `${field}.resources.limits.${k}`, message: `${JSON.stringify(v)} is not a quantity` });
      continue;
    }
    problems.push({ field: `${field}.resources.limits.${k}`, message: 'nodenet enforces limits on cpu and memory only' });
  }
  const ports = arr(c['ports']);
  ports.forEach((p, j) => {
    const po = obj(p) ?? {};
    if (isSet(po['hostPort'])) problems.push({ field: `${field}.ports[${j}].hostPort`, message: 'nodenet maps no host ports' });
    if (isSet(po['hostIP'])) problems.push({ field: `${field}.ports[${j}].hostIP`, message: 'nodenet maps no host ports' });
  });
  const command = arr(c['command']).map(String);
  if (!command.length) problems.push({ field: `${field}.command`, message: `a command is required: nodenet images have no entrypoint (image ${HOST_IMAGE} is the node's filesystem)` });
  const env = arr(c['env']).flatMap((e, j) => envOf(obj(e) ?? {}, `${field}.env[${j}]`, problems));
  const envFrom = arr(c['envFrom']).flatMap((e, j) => envFromOf(obj(e) ?? {}, `${field}.envFrom[${j}]`, problems));
  const seen = new Set<string>();
  const mounts = arr(c['volumeMounts']).flatMap((m, j) => {
    const got = mountOf(obj(m) ?? {}, `${field}.volumeMounts[${j}]`, volumes, problems);
    for (const x of got) {
      if (seen.has(x.mountPath)) problems.push({ field: `${field}.volumeMounts[${j}].mountPath`, message: `${JSON.stringify(x.mountPath)}: must be unique` });
      seen.add(x.mountPath);
    }
    return got;
  });
  return {
    name: str(c['name']),
    image: str(c['image']),
    command,
    args: arr(c['args']).map(String),
    env,
    envFrom,
    volumeMounts: mounts,
    resources: { requests: obj(res['requests']) ?? {}, limits: obj(res['limits']) ?? {} },
    workingDir: str(c['workingDir']) || null,
    readiness: probeOf(c['readinessProbe'], `${field}.readinessProbe`, ports, problems, 'readiness'),
    liveness: probeOf(c['livenessProbe'], `${field}.livenessProbe`, ports, problems, 'liveness'),
    startup: probeOf(c['startupProbe'], `${field}.startupProbe`, ports, problems, 'startup'),
  };
}

/** What nodenet will run for a Pod, or every field it cannot honour. */
export function planPod(pod: unknown): PlanResult {
  const spec = obj(obj(pod)?.['spec']) ?? {};
  const problems: Problem[] = [];
  for (const [k, v] of Object.entries(spec)) {
    if (POD_FIELDS_OK.has(k) || !isSet(v)) continue;
    problems.push({ field: `spec.${k}`, message: why(k) });
  }
  for (const k of ['hostNetwork', 'hostPID', 'hostIPC']) if (spec[k] === true) problems.push({ field: `spec.${k}`, message: 'nodenet gives every Pod its own namespaces' });
  securityContextProblems(spec['securityContext'], 'spec.securityContext', problems);
  const indexed = arr(spec['volumes']).map((v, i) => ({ i, v: volumeOf(obj(v) ?? {}, `spec.volumes[${i}]`, problems)[0] }));
  const names = new Set<string>();
  for (const { i, v } of indexed) {
    const name = str(obj(arr(spec['volumes'])[i])?.['name']);
    if (names.has(name)) problems.push({ field: `spec.volumes[${i}].name`, message: `${JSON.stringify(name)}: must be unique` });
    names.add(name);
    void v;
  }
  const volumes = indexed.flatMap((x) => (x.v ? [x.v] : []));
  const hostAliases = arr(spec['hostAliases']).map((h) => ({ ip: str(obj(h)?.['ip']), hostnames: arr(obj(h)?.['hostnames']).map(String) }));
  hostAliases.forEach((h, i) => {
    if (!/^[0-9a-fA-F.:]+$/.test(h.ip)) problems.push({ field: `spec.hostAliases[${i}].ip`, message: 'an IP address is required' });
    if (h.hostnames.some((n) => !/^[A-Za-z0-9.-]+$/.test(n))) problems.push({ field: `spec.hostAliases[${i}].hostnames`, message: 'each must be a DNS subdomain' });
  });
  const dns = dnsOf(spec, problems);
  const containers = arr(spec['containers']).map((c, i) => containerOf(obj(c) ?? {}, i, names, problems));
  if (!containers.length) problems.push({ field: 'spec.containers', message: 'at least one container is required' });
  const containerNames = new Set(containers.map((c) => c.name));
  const refs: { field: string; ref: ResourceRef }[] = [];
  containers.forEach((c, i) => c.env.forEach((e, j) => { if ('resourceFieldRef' in e) refs.push({ field: `spec.containers[${i}].env[${j}].valueFrom.resourceFieldRef.containerName`, ref: e.resourceFieldRef }); }));
  for (const { i, v } of indexed) {
    if (!v || (v.source.kind !== 'downwardAPI' && v.source.kind !== 'projected')) continue;
    const items = v.source.kind === 'downwardAPI' ? v.source.items : v.source.sources.flatMap((s) => (s.kind === 'downwardAPI' ? s.items : []));
    for (const it of items) if (it.resourceFieldRef) refs.push({ field: `spec.volumes[${i}]`, ref: it.resourceFieldRef });
    if (items.some((it) => it.resourceFieldRef && !it.resourceFieldRef.containerName)) problems.push({ field: `spec.volumes[${i}]`, message: 'a resourceFieldRef in a volume must name its container (containerName)' });
  }
  for (const r of refs) if (r.ref.containerName && !containerNames.has(r.ref.containerName)) problems.push({ field: r.field, message: `no container is named ${JSON.stringify(r.ref.containerName)}` });
  if (problems.length) return { ok: false, problems };
  const rp = str(spec['restartPolicy']);
  return {
    ok: true,
    plan: {
      restartPolicy: rp === 'OnFailure' || rp === 'Never' ? rp : 'Always',
      terminationGracePeriodSeconds: int(spec['terminationGracePeriodSeconds'], 30, 0),
      hostname: str(spec['hostname']) || null,
      subdomain: str(spec['subdomain']),
      serviceAccountName: str(spec['serviceAccountName']) || str(spec['serviceAccount']) || 'default',
      enableServiceLinks: spec['enableServiceLinks'] !== false,
      hostAliases,
      volumes,
      containers,
      dns,
    },
  };
}

// --- DNS ------------------------------------------------------------------------------------------------

const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/** spec.dnsPolicy and spec.dnsConfig, checked as the API server's validatePodDNSConfig checks them. */
function dnsOf(spec: O, problems: Problem[]): PodPlan['dns'] {
  const raw = spec['dnsPolicy'];
  const p = raw === undefined || raw === null || raw === '' ? 'ClusterFirst' : str(raw);
  const policy: DnsPolicy = isDnsPolicy(p) ? p : 'ClusterFirst';
  if (!isDnsPolicy(p)) problems.push({ field: 'spec.dnsPolicy', message: `Unsupported value: ${JSON.stringify(raw)}: supported values: ${DNS_POLICIES.map((x) => JSON.stringify(x)).join(', ')}` });
  const c = spec['dnsConfig'];
  if (c === undefined || c === null) {
    if (policy === 'None') problems.push({ field: 'spec.dnsConfig', message: 'must provide `dnsConfig` when `dnsPolicy` is None' });
    return { policy, config: null };
  }
  const o = obj(c);
  if (!o) {
    problems.push({ field: 'spec.dnsConfig', message: 'must be an object' });
    return { policy, config: null };
  }
  const strings = (k: string): string[] => {
    const v = o[k];
    if (v === undefined || v === null) return [];
    if (!Array.isArray(v) || !v.every((x) => typeof x === 'string')) {
      problems.push({ field: `spec.dnsConfig.${k}`, message: 'must be a list of strings' });
      return [];
    }
    return v as string[];
  };
  const nameservers = strings('nameservers');
  if (policy === 'None' && nameservers.length === 0 && !problems.some((x) => x.field === 'spec.dnsConfig.nameservers')) problems.push({ field: 'spec.dnsConfig.nameservers', message: 'must provide at least one DNS nameserver when `dnsPolicy` is None' });
  if (nameservers.length > MAX_NAMESERVERS) problems.push({ field: 'spec.dnsConfig.nameservers', message: `must not have more than ${MAX_NAMESERVERS} nameservers` });
  nameservers.forEach((ns, i) => {
    if (!isIP(ns)) problems.push({ field: `spec.dnsConfig.nameservers[${i}]`, message: `${JSON.stringify(ns)}: must be a valid IP address` });
  });
  const searches = strings('searches');
  if (searches.length > MAX_SEARCH_PATHS) problems.push({ field: 'spec.dnsConfig.searches', message: `must not have more than ${MAX_SEARCH_PATHS} search paths` });
  if (searches.join(' ').length > MAX_SEARCH_CHARS) problems.push({ field: 'spec.dnsConfig.searches', message: `must not have more than ${MAX_SEARCH_CHARS} characters (including spaces) in the search list` });
  searches.forEach((s, i) => {
    // A trailing dot (an absolute name) is allowed, as the API server allows it.
    const name = s.endsWith('.') ? s.slice(0, -1) : s;
    if (name.length > 253 || !DNS_SUBDOMAIN.test(name)) problems.push({ field: `spec.dnsConfig.searches[${i}]`, message: `${JSON.stringify(s)}: must be a lowercase RFC 1123 subdomain (at most 253 characters)` });
  });
  const rawOptions = o['options'] ?? [];
  if (!Array.isArray(rawOptions)) problems.push({ field: 'spec.dnsConfig.options', message: 'must be a list of {name, value}' });
  const options: DnsOption[] = arr(rawOptions).map((x, i) => {
    const op = obj(x) ?? {};
    const name = str(op['name']);
    const value = op['value'];
    if (!name) problems.push({ field: `spec.dnsConfig.options[${i}].name`, message: 'Required value' });
    if (value !== undefined && value !== null && typeof value !== 'string') problems.push({ field: `spec.dnsConfig.options[${i}].value`, message: 'must be a string' });
    return { name, value: typeof value === 'string' ? value : null };
  });
  for (const k of Object.keys(o)) if (!['nameservers', 'searches', 'options'].includes(k)) problems.push({ field: `spec.dnsConfig.${k}`, message: 'unknown field' });
  return { policy, config: { nameservers, searches, options } };
}

// --- env ------------------------------------------------------------------------------------------------

function keyRefOf(v: unknown, field: string, problems: Problem[], needKey: boolean): KeyRef {
  const r = obj(v) ?? {};
  const ref = { name: str(r['name']), key: str(r['key']), optional: r['optional'] === true };
  if (!ref.name) problems.push({ field: `${field}.name`, message: 'a name is required' });
  if (needKey && !ref.key) problems.push({ field: `${field}.key`, message: 'a key is required' });
  return ref;
}

function resourceRefOf(v: O, field: string, problems: Problem[]): ResourceRef | null {
  const resource = str(v['resource']);
  if (!isResourceField(resource)) {
    problems.push({ field: `${field}.resource`, message: `nodenet reads limits.cpu, limits.memory, limits.ephemeral-storage, requests.cpu, requests.memory, requests.ephemeral-storage, not ${JSON.stringify(resource)}` });
    return null;
  }
  const d = v['divisor'];
  return { containerName: str(v['containerName']), resource, divisor: typeof d === 'string' || typeof d === 'number' ? String(d) : null };
}

function fieldRefOf(v: O, field: string, allowed: readonly string[], problems: Problem[]): string | null {
  const path = str(v['fieldPath']);
  const api = str(v['apiVersion']);
  if (api && api !== 'v1') {
    problems.push({ field: `${field}.apiVersion`, message: `only v1 is supported, not ${JSON.stringify(api)}` });
    return null;
  }
  if (allowed.includes(path) || SUBSCRIPT.test(path)) return path;
  problems.push({ field: `${field}.fieldPath`, message: `nodenet resolves ${allowed.join(', ')}, metadata.labels['<key>'], metadata.annotations['<key>'], not ${JSON.stringify(path)}` });
  return null;
}

function envOf(e: O, field: string, problems: Problem[]): EnvSource[] {
  const name = str(e['name']);
  if (!name) problems.push({ field: `${field}.name`, message: 'a name is required' });
  const from = obj(e['valueFrom']);
  if (!from) return [{ name, value: str(e['value']) }];
  const set = Object.keys(from).filter((k) => isSet(from[k]));
  if (set.length !== 1) {
    problems.push({ field: `${field}.valueFrom`, message: 'exactly one of fieldRef, resourceFieldRef, configMapKeyRef, secretKeyRef must be given' });
    return [];
  }
  const k = set[0]!;
  const f = `${field}.valueFrom.${k}`;
  switch (k) {
    case 'fieldRef': {
      const path = fieldRefOf(obj(from[k]) ?? {}, f, ENV_FIELD_REFS, problems);
      return path ? [{ name, fieldRef: path }] : [];
    }
    case 'resourceFieldRef': {
      const ref = resourceRefOf(obj(from[k]) ?? {}, f, problems);
      return ref ? [{ name, resourceFieldRef: ref }] : [];
    }
    case 'configMapKeyRef': return [{ name, configMapKeyRef: keyRefOf(from[k], f, problems, true) }];
    case 'secretKeyRef': return [{ name, secretKeyRef: keyRefOf(from[k], f, problems, true) }];
    default:
      problems.push({ field: f, message: 'nodenet resolves fieldRef, resourceFieldRef, configMapKeyRef and secretKeyRef' });
      return [];
  }
}

function envFromOf(e: O, field: string, problems: Problem[]): EnvFromSource[] {
  const prefix = str(e['prefix']);
  const cm = obj(e['configMapRef']);
  const sec = obj(e['secretRef']);
  if (!cm === !sec) {
    problems.push({ field, message: 'exactly one of configMapRef, secretRef must be given' });
    return [];
  }
  const ref = keyRefOf(cm ?? sec, `${field}.${cm ? 'configMapRef' : 'secretRef'}`, problems, false);
  return [{ prefix, kind: cm ? 'configMap' : 'secret', name: ref.name, optional: ref.optional }];
}

// --- volumes --------------------------------------------------------------------------------------------

const VOLUME_KINDS = ['emptyDir', 'configMap', 'secret', 'downwardAPI', 'projected'];
const DNS_LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;

/** A relative path inside a volume, as the kubelet's AtomicWriter accepts it: not absolute, no `..` element, not starting with `..`. */
export function volumePathProblem(p: string): string | null {
  if (!p) return 'must not be empty';
  if (p.startsWith('/')) return 'must be a relative path';
  if (p.length > 4096) return 'must be at most 4096 characters';
  const items = p.split('/');
  if (items.includes('..')) return 'must not contain \'..\'';
  if (items.some((x) => x.length > 255)) return 'file names must be at most 255 characters';
  if (items[0]!.startsWith('..')) return 'must not start with \'..\'';
  return null;
}

function modeOf(v: unknown, field: string, problems: Problem[]): number | null {
  if (v === undefined || v === null) return null;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 0 || v > 0o777) {
    problems.push({ field, message: 'must be a number between 0 and 0777 (octal), both inclusive' });
    return null;
  }
  return v;
}

function itemsOf(v: unknown, field: string, problems: Problem[]): KeyToPath[] {
  return arr(v).map((x, i) => {
    const it = obj(x) ?? {};
    const key = str(it['key']);
    const path = str(it['path']);
    if (!key) problems.push({ field: `${field}[${i}].key`, message: 'a key is required' });
    const bad = volumePathProblem(path);
    if (bad) problems.push({ field: `${field}[${i}].path`, message: bad });
    return { key, path, mode: modeOf(it['mode'], `${field}[${i}].mode`, problems) };
  });
}

function downwardItemsOf(v: unknown, field: string, problems: Problem[]): DownwardItem[] {
  return arr(v).map((x, i) => {
    const it = obj(x) ?? {};
    const f = `${field}[${i}]`;
    const path = str(it['path']);
    const bad = volumePathProblem(path);
    if (bad) problems.push({ field: `${f}.path`, message: bad });
    const fr = obj(it['fieldRef']);
    const rr = obj(it['resourceFieldRef']);
    if (!fr === !rr) problems.push({ field: f, message: 'exactly one of fieldRef, resourceFieldRef must be given' });
    return {
      path,
      fieldRef: fr ? fieldRefOf(fr, `${f}.fieldRef`, VOLUME_FIELD_REFS, problems) : null,
      resourceFieldRef: rr ? resourceRefOf(rr, `${f}.resourceFieldRef`, problems) : null,
      mode: modeOf(it['mode'], `${f}.mode`, problems),
    };
  });
}

const DEFAULT_MODE = 0o644;

function volumeOf(v: O, field: string, problems: Problem[]): VolumePlan[] {
  const name = str(v['name']);
  if (!DNS_LABEL.test(name)) problems.push({ field: `${field}.name`, message: `${JSON.stringify(name)}: a volume name must be a DNS-1123 label` });
  const kinds = Object.keys(v).filter((k) => k !== 'name' && v[k] !== undefined && v[k] !== null);
  if (kinds.length !== 1) {
    problems.push({ field, message: 'exactly one volume source must be given' });
    return [];
  }
  const kind = kinds[0]!;
  const f = `${field}.${kind}`;
  if (!VOLUME_KINDS.includes(kind)) {
    problems.push({ field: f, message: `nodenet projects emptyDir, configMap, secret, downwardAPI and projected volumes, not ${kind}` });
    return [];
  }
  const s = obj(v[kind]) ?? {};
  const defaultMode = modeOf(s['defaultMode'], `${f}.defaultMode`, problems) ?? DEFAULT_MODE;
  switch (kind) {
    case 'emptyDir': {
      const medium = str(s['medium']);
      if (medium !== '' && medium !== 'Memory') problems.push({ field: `${f}.medium`, message: `nodenet makes emptyDir on the node's disk or in memory (Memory), not ${JSON.stringify(medium)}` });
      const size = s['sizeLimit'];
      return [{ name, source: { kind: 'emptyDir', medium: medium === 'Memory' ? 'Memory' : '', sizeLimit: typeof size === 'string' || typeof size === 'number' ? String(size) : null } }];
    }
    case 'configMap': {
      const cm = str(s['name']);
      if (!cm) problems.push({ field: `${f}.name`, message: 'a name is required' });
      return [{ name, source: { kind: 'configMap', name: cm, items: itemsOf(s['items'], `${f}.items`, problems), defaultMode, optional: s['optional'] === true } }];
    }
    case 'secret': {
      const sec = str(s['secretName']);
      if (!sec) problems.push({ field: `${f}.secretName`, message: 'a name is required' });
      return [{ name, source: { kind: 'secret', name: sec, items: itemsOf(s['items'], `${f}.items`, problems), defaultMode, optional: s['optional'] === true } }];
    }
    case 'downwardAPI':
      return [{ name, source: { kind: 'downwardAPI', items: downwardItemsOf(s['items'], `${f}.items`, problems), defaultMode } }];
    default: {
      const sources = arr(s['sources']).flatMap((x, i) => projectedOf(obj(x) ?? {}, `${f}.sources[${i}]`, problems));
      return [{ name, source: { kind: 'projected', sources, defaultMode } }];
    }
  }
}

function projectedOf(src: O, field: string, problems: Problem[]): ProjectedSource[] {
  const kinds = Object.keys(src).filter((k) => src[k] !== undefined && src[k] !== null);
  if (kinds.length !== 1) {
    problems.push({ field, message: 'exactly one projection source must be given' });
    return [];
  }
  const kind = kinds[0]!;
  const f = `${field}.${kind}`;
  const s = obj(src[kind]) ?? {};
  switch (kind) {
    case 'configMap':
    case 'secret': {
      const ref = keyRefOf(s, f, problems, false);
      return [{ kind, name: ref.name, items: itemsOf(s['items'], `${f}.items`, problems), optional: ref.optional }];
    }
    case 'downwardAPI':
      return [{ kind, items: downwardItemsOf(s['items'], `${f}.items`, problems) }];
    case 'serviceAccountToken': {
      const path = str(s['path']);
      const bad = volumePathProblem(path);
      if (bad) problems.push({ field: `${f}.path`, message: bad });
      const exp = s['expirationSeconds'] ?? 3600;
      if (typeof exp !== 'number' || !Number.isInteger(exp) || exp < 600 || exp > 2 ** 32) problems.push({ field: `${f}.expirationSeconds`, message: 'may not be less than 10 minutes (600 s)' });
      return [{ kind, audience: str(s['audience']), expirationSeconds: typeof exp === 'number' ? exp : 3600, path }];
    }
    default:
      problems.push({ field: f, message: `nodenet projects configMap, secret, downwardAPI and serviceAccountToken sources, not ${kind}` });
      return [];
  }
}

/** A normalised absolute path ('/a/b'), or null when it is not absolute. Pure. */
export function cleanAbsolute(p: string): string | null {
  if (!p.startsWith('/')) return null;
  const out: string[] = [];
  for (const part of p.split('/')) {
    if (part === '' || part === '.') continue;
    if (part === '..') out.pop();
    else out.push(part);
  }
  return `/${out.join('/')}`;
}

function mountOf(m: O, field: string, volumes: ReadonlySet<string>, problems: Problem[]): VolumeMountPlan[] {
  const name = str(m['name']);
  if (!volumes.has(name)) problems.push({ field: `${field}.name`, message: `${JSON.stringify(name)}: no volume of the Pod has that name` });
  const raw = str(m['mountPath']);
  const mountPath = cleanAbsolute(raw);
  if (!mountPath || mountPath === '/') problems.push({ field: `${field}.mountPath`, message: `${JSON.stringify(raw)}: an absolute path other than / is required` });
  else if (raw.split('/').includes('..')) problems.push({ field: `${field}.mountPath`, message: 'must not contain \'..\'' });
  if (!mountPath || mountPath === '/' || raw.split('/').includes('..')) return [];
  const subPath = str(m['subPath']);
  const subPathExpr = str(m['subPathExpr']);
  if (subPath && subPathExpr) problems.push({ field: `${field}.subPathExpr`, message: 'subPathExpr and subPath are mutually exclusive' });
  for (const [k, v] of [['subPath', subPath], ['subPathExpr', subPathExpr]] as const) {
    if (v && (v.startsWith('/') || v.split('/').includes('..'))) problems.push({ field: `${field}.${k}`, message: 'must be a relative path without \'..\'' });
  }
  const prop = str(m['mountPropagation']);
  if (prop && prop !== 'None') problems.push({ field: `${field}.mountPropagation`, message: `nodenet mounts volumes private to the container (None), not ${prop}` });
  const rro = str(m['recursiveReadOnly']);
  if (rro && rro !== 'Disabled') problems.push({ field: `${field}.recursiveReadOnly`, message: 'nodenet makes readOnly mounts read-only at their top only (Disabled)' });
  return [{ name, mountPath, readOnly: m['readOnly'] === true, subPath, subPathExpr }];
}

/** One line for an Event or a status message: every problem, by field. */
export function describeProblems(problems: readonly Problem[]): string {
  return `nodenet cannot run this Pod: ${problems.map((p) => `${p.field}: ${p.message}`).join('; ')}`;
}
