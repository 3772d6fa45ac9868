/**
 * pods/env: a container's environment as the kubelet's
 * makeEnvironmentVariables builds it (pure).
 *
 * 1. The Service variables (getServiceEnvVarMap, envvars.FromServices): the
 *    `kubernetes` Service of namespace default always, and when
 *    enableServiceLinks is not false every Service of the Pod's namespace
 *    with a ClusterIP (one of the Pod's namespace wins over `kubernetes` of
 *    default): <NAME>_SERVICE_HOST, <NAME>_SERVICE_PORT, _SERVICE_PORT_<PORT
 *    NAME> per named port, and Docker's link variables <NAME>_PORT,
 *    <NAME>_PORT_<port>_<PROTO>, _PROTO, _PORT, _ADDR.
 * 2. envFrom, in order (a later source wins): each key of the ConfigMap or
 *    Secret, prefixed; a name that is no valid variable name is skipped, and
 *    the kubelet's Warning InvalidEnvironmentVariableNames names them. Valid
 *    is 1.32's IsRelaxedEnvVarName (RelaxedEnvironmentVariableValidation, on
 *    by default since 1.32): not empty, printable ASCII but '='. (Before
 *    1.30 it was IsEnvVarName, `[-._a-zA-Z][-._a-zA-Z0-9]*`.) A missing
 *    object fails the start unless optional.
 * 3. env, in order, overriding envFrom: a value with $(VAR) expanded from the
 *    variables so far and the Service variables; valueFrom fieldRef,
 *    resourceFieldRef, configMapKeyRef, secretKeyRef. A missing object or
 *    key fails the start (the kubelet's words: `configmap "x" not found`,
 *    `couldn't find key k in ConfigMap ns/x`) unless optional, in which case
 *    the variable is left out.
 * 4. The remaining Service variables, then command and args expanded with
 *    the whole environment.
 * The objects are looked up by functions that return null for one that does
 * not exist and throw for a read that failed (the failure is the message).
 */
import { obj, str } from '../../../lib/json/loose.js';
import type { ContainerPlan, FieldValues, PodPlan } from './pod-spec.js';
import { resourceFieldValue, type NodeAllocatable } from './quantity.js';

type O = Record<string, unknown>;

/** What env resolution reads, looked up before (kubelet.ts fetches them through the object watches). */
export interface EnvContext {
  readonly pod: O;
  readonly plan: PodPlan;
  readonly fields: FieldValues;
  readonly hostname: string;
  /** Every Service the kubelet knows (all namespaces). */
  readonly services: readonly O[];
  readonly configMap: (name: string) => O | null;
  readonly secret: (name: string) => O | null;
  readonly node: NodeAllocatable;
}

export interface EnvEvent {
  readonly reason: string;
  readonly message: string;
}

export type EnvResult =
  | { readonly ok: true; readonly env: Record<string, string>; readonly argv: string[]; readonly events: readonly EnvEvent[] }
  | { readonly ok: false; readonly message: string; readonly events: readonly EnvEvent[] };

/**
 * $(VAR) expansion as the kubelet's (third_party/forked/golang/expansion): $(NAME) becomes the
 * variable when one of the maps defines it, stays as written when none does; $$ is a literal $.
 */
export function expand(s: string, ...maps: readonly ReadonlyMap<string, string>[]): string {
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
      const m = maps.find((x) => x.has(name));
      out += m ? m.get(name)! : `$(${name})`;
      i = close;
    } else out += ch;
  }
  return out;
}

/** The PATH a container gets (images set their own; the node's filesystem has the usual one). */
export const DEFAULT_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

/** makeEnvVariableName: upper case, `.` and `-` to `_`, a leading digit gets `_`. */
export function envVarName(s: string): string {
  const n = s.replace(/[.-]/g, '_').toUpperCase();
  return /^[0-9]/.test(n) ? `_${n}` : n;
}

/** IsRelaxedEnvVarName (1.32's default): not empty, printable ASCII only, no '='. */
export function isEnvVarName(s: string): boolean {
  return /^[\x20-\x3c\x3e-\x7e]+$/.test(s);
}

const hostPort = (ip: string, port: number) => (ip.includes(':') ? `[${ip}]:${port}` : `${ip}:${port}`);

/** envvars.FromServices for one Service with a ClusterIP. */
function serviceVars(svc: O, out: Map<string, string>): void {
  const spec = obj(svc['spec']) ?? {};
  const ip = str(spec['clusterIP']);
  const ports = (Array.isArray(spec['ports']) ? spec['ports'] : []).map((p) => obj(p) ?? {});
  if (!ip || ip === 'None' || !ports.length) return;
  const prefix = envVarName(str(obj(svc['metadata'])?.['name']));
  const first = Number(ports[0]!['port']);
  out.set(`${prefix}_SERVICE_HOST`, ip);
  out.set(`${prefix}_SERVICE_PORT`, String(first));
  for (const p of ports) {
    const name = str(p['name']);
    if (name) out.set(`${prefix}_SERVICE_PORT_${envVarName(name)}`, String(p['port']));
  }
  ports.forEach((p, i) => {
    const proto = (str(p['protocol']) || 'TCP');
    const port = Number(p['port']);
    const url = `${proto.toLowerCase()}://${hostPort(ip, port)}`;
    if (i === 0) out.set(`${prefix}_PORT`, url);
    const pp = `${prefix}_PORT_${port}_${proto.toUpperCase()}`;
    out.set(pp, url);
    out.set(`${pp}_PROTO`, proto.toLowerCase());
    out.set(`${pp}_PORT`, String(port));
    out.set(`${pp}_ADDR`, ip);
  });
}

/** The Service variables a Pod in `namespace` sees (getServiceEnvVarMap). */
export function serviceEnv(services: readonly O[], namespace: string, enableServiceLinks: boolean): Map<string, string> {
  const chosen = new Map<string, O>();
  for (const svc of services) {
    const m = obj(svc['metadata']) ?? {};
    const name = str(m['name']);
    const ns = str(m['namespace']);
    const ip = str(obj(svc['spec'])?.['clusterIP']);
    if (!ip || ip === 'None') continue;
    if (ns === 'default' && name === 'kubernetes') {
      if (!chosen.has(name)) chosen.set(name, svc);
    } else if (ns === namespace && enableServiceLinks) chosen.set(name, svc);
  }
  const out = new Map<string, string>();
  for (const svc of chosen.values()) serviceVars(svc, out);
  return out;
}

/** A ConfigMap's or Secret's values as strings (a Secret's data and a ConfigMap's binaryData are base64). */
export function objectData(o: O, kind: 'configMap' | 'secret'): Map<string, Buffer> {
  const out = new Map<string, Buffer>();
  const data = obj(o['data']) ?? {};
  for (const [k, v] of Object.entries(data)) out.set(k, kind === 'secret' ? Buffer.from(str(v), 'base64') : Buffer.from(str(v), 'utf8'));
  if (kind === 'configMap') for (const [k, v] of Object.entries(obj(o['binaryData']) ?? {})) if (!out.has(k)) out.set(k, Buffer.from(str(v), 'base64'));
  return out;
}

/** fieldpath.ExtractFieldPathAsString for the subscripted label and annotation paths ('' for a missing key), or null. */
export function subscriptValue(pod: O, path: string): string | null {
  const m = /^metadata\.(labels|annotations)\['([^']*)'\]$/.exec(path);
  if (!m) return null;
  return str(obj(obj(pod['metadata'])?.[m[1]!])?.[m[2]!]);
}

const notFound = (kind: 'configmap' | 'secret', name: string) => `${kind} "${name}" not found`;

/** The environment and argv of a container, or why it cannot start (CreateContainerConfigError). */
export function resolveEnv(c: ContainerPlan, ctx: EnvContext): EnvResult {
  const events: EnvEvent[] = [];
  const ns = str(obj(ctx.pod['metadata'])?.['namespace']) || 'default';
  try {
    const svcEnv = serviceEnv(ctx.services, ns, ctx.plan.enableServiceLinks);
    const tmp = new Map<string, string>();
    const cms = new Map<string, O | null>();
    const secs = new Map<string, O | null>();
    const get = (kind: 'configMap' | 'secret', name: string): O | null => {
      const cache = kind === 'configMap' ? cms : secs;
      if (!cache.has(name)) cache.set(name, kind === 'configMap' ? ctx.configMap(name) : ctx.secret(name));
      return cache.get(name)!;
    };
    for (const ef of c.envFrom) {
      const o = get(ef.kind, ef.name);
      if (!o) {
        if (ef.optional) continue;
        return { ok: false, message: notFound(ef.kind === 'configMap' ? 'configmap' : 'secret', ef.name), events };
      }
      const invalid: string[] = [];
      for (const [k, v] of objectData(o, ef.kind)) {
        const name = ef.prefix + k;
        if (!isEnvVarName(name)) {
          invalid.push(name);
          continue;
        }
        tmp.set(name, v.toString('utf8'));
      }
      if (invalid.length) {
        invalid.sort();
        events.push({ reason: 'InvalidEnvironmentVariableNames', message: `Keys [${invalid.join(', ')}] from the EnvFrom ${ef.kind === 'configMap' ? 'configMap' : 'secret'} ${ns}/${ef.name} were skipped since they are considered invalid environment variable names.` });
      }
    }
    for (const e of c.env) {
      let v: string;
      if ('value' in e) v = e.value === '' ? '' : expand(e.value, tmp, svcEnv);
      else if ('fieldRef' in e) v = subscriptValue(ctx.pod, e.fieldRef) ?? ctx.fields[e.fieldRef as keyof FieldValues] ?? '';
      else if ('resourceFieldRef' in e) {
        const r = e.resourceFieldRef;
        const target = r.containerName ? ctx.plan.containers.find((x) => x.name === r.containerName) : c;
        if (!target) return { ok: false, message: `container ${r.containerName} not found`, events };
        v = resourceFieldValue(r.resource, target.resources, r.divisor, ctx.node);
      } else {
        const isCm = 'configMapKeyRef' in e;
        const ref = isCm ? e.configMapKeyRef : e.secretKeyRef;
        const o = get(isCm ? 'configMap' : 'secret', ref.name);
        if (!o) {
          if (ref.optional) continue;
          return { ok: false, message: notFound(isCm ? 'configmap' : 'secret', ref.name), events };
        }
        const val = objectData(o, isCm ? 'configMap' : 'secret').get(ref.key);
        if (val === undefined) {
          if (ref.optional) continue;
          return { ok: false, message: `couldn't find key ${ref.key} in ${isCm ? 'ConfigMap' : 'Secret'} ${ns}/${ref.name}`, events };
        }
        v = val.toString('utf8');
      }
      tmp.set(e.name, v);
    }
    const env: Record<string, string> = { PATH: DEFAULT_PATH, HOSTNAME: ctx.hostname };
    for (const [k, v] of tmp) env[k] = v;
    for (const [k, v] of svcEnv) if (!tmp.has(k)) env[k] = v;
    const argv = [...c.command, ...c.args].map((a) => expand(a, tmp, svcEnv));
    return { ok: true, env, argv, events };
  } catch (e) {
    return { ok: false, message: e instanceof Error ? e.message : String(e), events };
  }
}
