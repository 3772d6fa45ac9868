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
 * - `env` (value, and valueFrom.fieldRef for metadata.name, metadata.namespace,
 *   metadata.uid, spec.nodeName, status.podIP, status.hostIP), `workingDir`,
 *   `ports` (no hostPort), and httpGet / tcpSocket / exec probes are honoured,
 *   with $(VAR) expansion in env values, command and args as the kubelet does.
 * Anything else nodenet cannot honour (volumes, init containers, host
 * namespaces, security contexts, limits, lifecycle hooks, envFrom, tty, ...)
 * makes the whole Pod rejected: planPod returns every offending field, the
 * kubelet records a Warning Event naming them and fails the Pod
 * (UnsupportedPodSpec). Scheduling-only fields (nodeSelector, affinity,
 * tolerations, priority, requests) and the API server's defaults
 * (dnsPolicy, terminationMessagePath, imagePullPolicy, enableServiceLinks)
 * are accepted and have no effect here.
 */

export const HOST_IMAGE = 'nodenet/host';

import { obj } from '../../../lib/json/loose.js';

type O = Record<string, unknown>;
const arr = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);
const str = (v: unknown): string => (typeof v === 'string' ? v : '');
const isSet = (v: unknown): boolean => v !== undefined && v !== null && !(Array.isArray(v) && v.length === 0) && !(obj(v) && Object.keys(v as O).length === 0) && v !== false && v !== '';

export interface Problem {
  /** The JSON path of the field, `spec.containers[0].volumeMounts`. */
  readonly field: string;
  readonly message: string;
}

export type FieldRefPath = 'metadata.name' | 'metadata.namespace' | 'metadata.uid' | 'spec.nodeName' | 'status.podIP' | 'status.hostIP';
const FIELD_REFS: readonly FieldRefPath[] = ['metadata.name', 'metadata.namespace', 'metadata.uid', 'spec.nodeName', 'status.podIP', 'status.hostIP'];

export type EnvSource = { readonly name: string; readonly value: string } | { readonly name: string; readonly fieldRef: FieldRefPath };

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
  readonly containers: readonly ContainerPlan[];
}

export type PlanResult = { readonly ok: true; readonly plan: PodPlan } | { readonly ok: false; readonly problems: readonly Problem[] };

/** Pod spec fields that are accepted: honoured, or only the scheduler's / the API server's defaults. */
const POD_FIELDS_OK = new Set([
  'containers', 'restartPolicy', 'terminationGracePeriodSeconds', 'nodeName', 'schedulerName', 'dnsPolicy', 'enableServiceLinks',
  'tolerations', 'nodeSelector', 'affinity', 'priority', 'priorityClassName', 'preemptionPolicy', 'schedulingGates',
  'topologySpreadConstraints', 'hostname', 'subdomain', 'serviceAccountName', 'serviceAccount', 'securityContext', 'shareProcessNamespace',
  'hostNetwork', 'hostPID', 'hostIPC', 'automountServiceAccountToken', 'overhead',
]);

/** Container fields that are accepted (the rest is rejected when set). */
const CONTAINER_FIELDS_OK = new Set([
  'name', 'image', 'command', 'args', 'env', 'workingDir', 'ports', 'readinessProbe', 'livenessProbe', 'startupProbe',
  'terminationMessagePath', 'terminationMessagePolicy', 'imagePullPolicy', 'resources', 'securityContext',
]);

const WHY: Readonly<Record<string, string>> = {
  volumes: 'nodenet runs processes on the node\'s filesystem and mounts no volumes',
  volumeMounts: 'nodenet runs processes on the node\'s filesystem and mounts no volumes',
  volumeDevices: 'nodenet attaches no devices',
  initContainers: 'nodenet does not run init containers',
  ephemeralContainers: 'nodenet does not run ephemeral containers',
  hostAliases: 'nodenet writes no /etc/hosts for a Pod (the node\'s is used)',
  dnsConfig: 'nodenet writes no resolv.conf for a Pod (the node\'s is used)',
  imagePullSecrets: 'nodenet pulls no images',
  runtimeClassName: 'nodenet has one runtime: processes on the node',
  lifecycle: 'nodenet runs no lifecycle hooks',
  envFrom: 'nodenet has no ConfigMaps or Secrets to read',
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

function containerOf(c: O, i: number, problems: Problem[]): ContainerPlan {
  const field = `spec.containers[${i}]`;
  for (const [k, v] of Object.entries(c)) {
    if (CONTAINER_FIELDS_OK.has(k) || !isSet(v)) continue;
    problems.push({ field: `${field}.${k}`, message: why(k) });
  }
  securityContextProblems(c['securityContext'], `${field}.securityContext`, problems);
  const res = obj(c['resources']) ?? {};
  for (const k of ['limits', 'claims']) if (isSet(res[k])) problems.push({ field: `${field}.resources.${k}`, message: 'nodenet applies no resource limits (requests only count for scheduling)' });
  const ports = arr(c['ports']);
  ports.forEach((p, j) => {
    const po = obj(p) ?? {};
    if (isSet(po['hostPort'])) problems.push({ field: `${field}.ports[${j}].hostPort`, message: 'nodenet maps no host ports' });
    if (isSet(po['hostIP'])) problems.push({ field: `${field}.ports[${j}].hostIP`, message: 'nodenet maps no host ports' });
  });
  const command = arr(c['command']).map(String);
  if (!command.length) problems.push({ field: `${field}.command`, message: `a command is required: nodenet images have no entrypoint (image ${HOST_IMAGE} is the node's filesystem)` });
  const env: EnvSource[] = [];
  arr(c['env']).forEach((e, j) => {
    const eo = obj(e) ?? {};
    const name = str(eo['name']);
    const ef = `${field}.env[${j}]`;
    if (!name) problems.push({ field: `${ef}.name`, message: 'a name is required' });
    const from = obj(eo['valueFrom']);
    if (!from) {
      env.push({ name, value: str(eo['value']) });
      return;
    }
    const ref = obj(from['fieldRef']);
    const path = str(ref?.['fieldPath']);
    const other = Object.keys(from).filter((k) => k !== 'fieldRef' && isSet(from[k]));
    if (other.length) problems.push({ field: `${ef}.valueFrom.${other[0]}`, message: 'nodenet resolves only fieldRef (metadata.name, metadata.namespace, metadata.uid, spec.nodeName, status.podIP, status.hostIP)' });
    else if (!(FIELD_REFS as readonly string[]).includes(path)) problems.push({ field: `${ef}.valueFrom.fieldRef.fieldPath`, message: `nodenet resolves ${FIELD_REFS.join(', ')}, not ${JSON.stringify(path)}` });
    else env.push({ name, fieldRef: path as FieldRefPath });
  });
  return {
    name: str(c['name']),
    image: str(c['image']),
    command,
    args: arr(c['args']).map(String),
    env,
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
  const sa = str(spec['serviceAccountName']) || str(spec['serviceAccount']);
  if (sa && sa !== 'default') problems.push({ field: 'spec.serviceAccountName', message: 'nodenet has no service accounts' });
  const containers = arr(spec['containers']).map((c, i) => containerOf(obj(c) ?? {}, i, problems));
  if (!containers.length) problems.push({ field: 'spec.containers', message: 'at least one container is required' });
  if (problems.length) return { ok: false, problems };
  const rp = str(spec['restartPolicy']);
  return {
    ok: true,
    plan: {
      restartPolicy: rp === 'OnFailure' || rp === 'Never' ? rp : 'Always',
      terminationGracePeriodSeconds: int(spec['terminationGracePeriodSeconds'], 30, 0),
      hostname: str(spec['hostname']) || null,
      containers,
    },
  };
}

/** One line for an Event or a status message: every problem, by field. */
export function describeProblems(problems: readonly Problem[]): string {
  return `nodenet cannot run this Pod: ${problems.map((p) => `${p.field}: ${p.message}`).join('; ')}`;
}

export type FieldValues = Readonly<Record<FieldRefPath, string>>;

/**
 * $(VAR) expansion as the kubelet's (third_party/forked/golang/expansion): $(NAME) becomes the
 * variable when it is defined, stays as written when it is not; $$ is a literal $.
 */
export function expand(s: string, vars: ReadonlyMap<string, string>): string {
  let out = '';
  for (let i = 0; i < s.length; i++) {
    const ch = s[i]!;
    if (ch !== '$' || i + 1 >= s.length) {
      out += ch;
      continue;
    }
    const next = s[i + 1]!;
    if (next === '$') {
      out += '$';
      i++;
    } else if (next === '(') {
      const close = s.indexOf(')', i + 2);
      if (close < 0) {
        out += s.slice(i);
        break;
      }
      const name = s.slice(i + 2, close);
      out += vars.has(name) ? vars.get(name)! : `$(${name})`;
      i = close;
    } else out += ch;
  }
  return out;
}

/** The PATH a container gets (images set their own; the node's filesystem has the usual one). */
export const DEFAULT_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

/** A container's environment and argv, with fieldRefs resolved and $(VAR) expanded, in the kubelet's order. */
export function resolveContainer(c: ContainerPlan, fields: FieldValues, hostname: string): { env: Record<string, string>; argv: string[] } {
  const vars = new Map<string, string>();
  for (const e of c.env) vars.set(e.name, 'value' in e ? expand(e.value, vars) : fields[e.fieldRef]);
  const env: Record<string, string> = { PATH: DEFAULT_PATH, HOSTNAME: hostname };
  for (const [k, v] of vars) env[k] = v;
  const argv = [...c.command, ...c.args].map((a) => expand(a, vars));
  return { env, argv };
}
