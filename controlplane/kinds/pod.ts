/**
 * controlplane/kinds/pod: core/v1 Pods as kube-apiserver treats them:
 * SetDefaults_Pod, ValidatePodCreate and ValidatePodUpdate (the spec's rules
 * are podspec.ts'), the QoS class, and the DefaultTolerationSeconds
 * admission. Pure.
 *
 * Upstream's rules beyond the spec's (x: here, -: left out):
 *   x a Pod's images without surrounding whitespace (a template's may have some)
 *   x create: no ephemeral containers, no nodeName while scheduling gates remain
 *   x update: containers may not be added or removed; only images, activeDeadlineSeconds (not raised,
 *     not removed), tolerations (additions; tolerationSeconds), scheduling gates (removals) and
 *     terminationGracePeriodSeconds (negative to 1) change; nodenet also lets spec.nodeName be set once
 *     (the binding path validates here too)
 *   - the diff upstream appends to the "pod updates may not change fields" message; gated Pods'
 *     nodeSelector/affinity additions
 */
import { fieldErr, type FieldError } from '../api/errors.js';
import { arr, blank, ensure, inclusiveRange, isSet, MAX_INT32, type O, obj, quantityNanos, semanticEqual, str } from './common.js';
import { defaultPodSpec, validatePodSpec } from './podspec.js';
import { specChanged, type Strategy } from './strategy.js';

/** SetDefaults_Pod on top of the spec defaults: requests default to the limits; a hostNetwork Pod's hostPorts to its containerPorts. */
export function defaultPod(o: O): void {
  const spec = ensure(o, 'spec');
  defaultPodSpec(spec);
  for (const c of [...arr(spec['containers']), ...arr(spec['initContainers'])]) {
    const res = obj(obj(c)?.['resources']);
    const limits = obj(res?.['limits']);
    if (!res || !limits) continue;
    const req = ensure(res, 'requests');
    for (const [k, v] of Object.entries(limits)) req[k] ??= v;
  }
  if (spec['hostNetwork'] === true) {
    for (const c of [...arr(spec['containers']), ...arr(spec['initContainers'])]) {
      for (const p of arr(obj(c)?.['ports'])) {
        const port = obj(p);
        if (port && !port['hostPort']) port['hostPort'] = port['containerPort'];
      }
    }
  }
}

/** validateContainersOnlyForPod: a Pod's images (not a template's) may not carry surrounding whitespace. */
function podOnlyErrors(spec: O): FieldError[] {
  const errs: FieldError[] = [];
  for (const list of ['containers', 'initContainers']) {
    arr(spec[list]).forEach((c, i) => {
      const image = str(obj(c)?.['image']);
      if (image.trim() !== image) errs.push(fieldErr.invalid(`spec.${list}[${i}].image`, image, 'must not have leading or trailing whitespace'));
    });
  }
  return errs;
}

const UPDATABLE = '`spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)';

/** ValidatePodCreate, or ValidatePodUpdate when `old` is set. */
export function validatePod(o: O, old: O | null): FieldError[] {
  const spec = obj(o['spec']) ?? {};
  const errs = [...validatePodSpec('spec', spec, true), ...podOnlyErrors(spec)];
  if (!old) {
    if (arr(spec['ephemeralContainers']).length > 0) errs.push(fieldErr.forbidden('spec.ephemeralContainers', 'cannot be set on create'));
    if (!blank(spec['nodeName']) && arr(spec['schedulingGates']).length > 0) errs.push(fieldErr.forbidden('spec.nodeName', 'cannot be set until all schedulingGates have been cleared'));
    return errs;
  }
  return [...errs, ...podUpdateErrors(spec, obj(old['spec']) ?? {})];
}

/** The update rules of ValidatePodUpdate, after the spec's own. */
function podUpdateErrors(spec: O, was: O): FieldError[] {
  const errs: FieldError[] = [];
  for (const list of ['containers', 'initContainers']) {
    if (arr(spec[list]).length !== arr(was[list]).length) return [fieldErr.forbidden(`spec.${list}`, 'pod updates may not add or remove containers')];
  }
  const ads = spec['activeDeadlineSeconds'];
  const oldAds = was['activeDeadlineSeconds'];
  if (isSet(ads)) {
    if (typeof ads !== 'number' || ads < 0 || ads > MAX_INT32) return [...errs, fieldErr.invalid('spec.activeDeadlineSeconds', ads, inclusiveRange(0, MAX_INT32))];
    if (typeof oldAds === 'number' && oldAds < ads) return [...errs, fieldErr.invalid('spec.activeDeadlineSeconds', ads, 'must be less than or equal to previous value')];
  } else if (isSet(oldAds)) errs.push(fieldErr.invalid('spec.activeDeadlineSeconds', null, 'must not update from a positive integer to nil value'));
  // validateOnlyAddedTolerations: every old toleration is still there (its tolerationSeconds may change).
  const now = arr(spec['tolerations']).map((t) => obj(t) ?? {});
  for (const t of arr(was['tolerations']).map((x) => obj(x) ?? {})) {
    if (!now.some((n) => semanticEqual({ ...n, tolerationSeconds: null }, { ...t, tolerationSeconds: null }))) {
      errs.push(fieldErr.forbidden('spec.tolerations', 'existing toleration can not be modified except its tolerationSeconds'));
      break;
    }
  }
  // validateOnlyDeletedSchedulingGates
  const oldGates = new Set(arr(was['schedulingGates']).map((g) => str(obj(g)?.['name'])));
  arr(spec['schedulingGates']).forEach((g, i) => {
    const name = str(obj(g)?.['name']);
    if (!oldGates.has(name)) errs.push(fieldErr.forbidden(`spec.schedulingGates[${i}].name`, `only deletion is allowed, but found new scheduling gate '${name}'`));
  });
  // The rest of the spec may not change: munge what may, then compare.
  const munged = structuredClone(spec);
  for (const list of ['containers', 'initContainers']) {
    arr(munged[list]).forEach((c, i) => {
      const ct = obj(c);
      if (ct) ct['image'] = obj(arr(was[list])[i])?.['image'];
    });
  }
  for (const k of ['activeDeadlineSeconds', 'schedulingGates', 'tolerations']) {
    if (was[k] === undefined) delete munged[k];
    else munged[k] = was[k];
  }
  const oldGrace = was['terminationGracePeriodSeconds'];
  if (typeof oldGrace === 'number' && oldGrace < 0 && munged['terminationGracePeriodSeconds'] === 1) munged['terminationGracePeriodSeconds'] = oldGrace;
  // nodenet's binding path validates as an update: the node may be set once.
  if (blank(was['nodeName'])) {
    if (was['nodeName'] === undefined) delete munged['nodeName'];
    else munged['nodeName'] = was['nodeName'];
  }
  if (!semanticEqual(munged, was)) errs.push(fieldErr.forbidden('spec', `pod updates may not change fields other than ${UPDATABLE}`));
  return errs;
}

/** qos.ComputePodQOS over the (defaulted) containers and init containers: BestEffort, Burstable or Guaranteed. */
export function podQOS(spec: O): 'BestEffort' | 'Burstable' | 'Guaranteed' {
  const requests = new Map<string, bigint>();
  const limits = new Map<string, bigint>();
  let guaranteed = true;
  for (const c of [...arr(spec['containers']), ...arr(spec['initContainers'])]) {
    const res = obj(obj(c)?.['resources']) ?? {};
    for (const [name, q] of Object.entries(obj(res['requests']) ?? {})) {
      const n = quantityNanos(q);
      if ((name === 'cpu' || name === 'memory') && n !== null && n > 0n) requests.set(name, (requests.get(name) ?? 0n) + n);
    }
    const found = new Set<string>();
    for (const [name, q] of Object.entries(obj(res['limits']) ?? {})) {
      const n = quantityNanos(q);
      if ((name === 'cpu' || name === 'memory') && n !== null && n > 0n) {
        found.add(name);
        limits.set(name, (limits.get(name) ?? 0n) + n);
      }
    }
    if (!found.has('cpu') || !found.has('memory')) guaranteed = false;
  }
  if (requests.size === 0 && limits.size === 0) return 'BestEffort';
  if (guaranteed) for (const [name, r] of requests) if (limits.get(name) !== r) guaranteed = false;
  return guaranteed && requests.size === limits.size ? 'Guaranteed' : 'Burstable';
}

/** Seconds a new Pod tolerates its Node being not-ready or unreachable before the node lifecycle controller evicts it. */
export const DEFAULT_TOLERATION_SECONDS = 300;

/**
 * kube-apiserver's DefaultTolerationSeconds admission: a new Pod that does not already tolerate the
 * not-ready or unreachable NoExecute taint (a toleration with that key or none, that effect or none)
 * gets `{key, operator: Exists, effect: NoExecute, tolerationSeconds: 300}` for it.
 */
export function defaultTolerationSeconds(spec: O): void {
  const have = arr(spec['tolerations']).map(obj);
  const add: O[] = [];
  for (const key of ['node.kubernetes.io/not-ready', 'node.kubernetes.io/unreachable']) {
    const covered = have.some((t) => !!t && (t['key'] === key || !t['key']) && (t['effect'] === 'NoExecute' || !t['effect']));
    if (!covered) add.push({ key, operator: 'Exists', effect: 'NoExecute', tolerationSeconds: DEFAULT_TOLERATION_SECONDS });
  }
  if (add.length) spec['tolerations'] = [...arr(spec['tolerations']), ...add];
}

/**
 * How long a Pod's deletion waits for its kubelet, as kube-apiserver's pod strategy decides (CheckGracefulDelete):
 * the request's gracePeriodSeconds (negative: 1), else the Pod's terminationGracePeriodSeconds (default 30); 0 for a
 * Pod bound to no node or already finished. nodenet adds: 0 for a Pod bound to a Node that does not exist (no
 * kubelet will ever finish it; upstream the pod garbage collector force-deletes those).
 */
export function podGracePeriod(pod: Readonly<O>, asked: number | undefined, nodeExists: (name: string) => boolean): number {
  const spec = obj(pod['spec']) ?? {};
  const phase = obj(pod['status'])?.['phase'];
  const node = str(spec['nodeName']);
  if (!node || phase === 'Succeeded' || phase === 'Failed') return 0;
  if (!nodeExists(node)) return 0;
  if (asked !== undefined) return asked < 0 ? 1 : asked;
  const own = spec['terminationGracePeriodSeconds'];
  return typeof own === 'number' && own >= 0 ? own : 30;
}

/** The Pod's strategy. */
export const podStrategy: Strategy = {
  nameRule: 'subdomain',
  defaults: defaultPod,
  validate: validatePod,
  initialStatus: (o) => ({ phase: 'Pending', qosClass: podQOS(obj(o['spec']) ?? {}) }),
  bumpsGeneration: specChanged,
  gracePeriod: podGracePeriod,
};
