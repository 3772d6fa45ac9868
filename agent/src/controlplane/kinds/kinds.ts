/**
 * controlplane/kinds: what each served kind does on create and update, as
 * kube-apiserver's registry strategies do it: defaults (pkg/apis/<group>/
 * <version>/defaults.go), validation (pkg/apis/<group>/validation) in its
 * field-error words, the name rule, and which status a new object starts
 * with. Pure: objects in, objects and field errors out.
 *
 * This file is the registry and the rules every kind shares (metadata,
 * names); each kind with more to it has its module: service.ts,
 * endpointslice.ts, pod.ts (Pods and pod templates), apps.ts (Deployments,
 * ReplicaSets), node.ts, on the shared field rules of common.ts. Each
 * module's header lists upstream's rules for its kind that a client can
 * reach by create, update or patch, and which of them are left out.
 */
import { deepEqual } from '../../reconcile/deep-equal.js';
import { fieldErr, type FieldError } from '../api/errors.js';
import { labelKeyProblem, labelValueProblem } from '../api/selectors.js';
import type { KObject } from '../store/types.js';
import { defaultDeployment, defaultReplicaSet, validateDeployment, validateReplicaSet } from './apps.js';
import { arr, ensure, nameProblems, obj, type NameRule, type O } from './common.js';
import { defaultEndpointSlice, validateEndpointSlice } from './endpointslice.js';
import { defaultNode, validateNode } from './node.js';
import { defaultPod, defaultTolerationSeconds, podGracePeriod, podQOS, validatePod } from './pod.js';
import { defaultService, prepareServiceUpdate, validateService } from './service.js';

export type { NameRule } from './common.js';
export { nameProblems, quantityNanos } from './common.js';
export { DEFAULT_TOLERATION_SECONDS, defaultTolerationSeconds, podQOS } from './pod.js';

export interface Strategy {
  readonly nameRule: NameRule;
  /** Fills defaults in place (the object is the caller's fresh copy). Runs on create and on every update. */
  defaults(o: O): void;
  /** Field errors of the object (old set on update). */
  validate(o: O, old: O | null): FieldError[];
  /** The status a new object starts with (its submitted status is dropped, as kube-apiserver's PrepareForCreate does). */
  initialStatus?(o: O): O | undefined;
  /** Create-only preparation, before defaults (PrepareForCreate beyond the status). */
  prepareForCreate?(o: O): void;
  /** Update-only preparation, before defaults: what the update keeps from the stored object (PrepareForUpdate). */
  prepareForUpdate?(o: O, old: O): void;
  /**
   * Whether an update moves metadata.generation on (PrepareForUpdate). Absent: the kind has no
   * generation at all (Services, Namespaces, Nodes, Events and Leases do not, in kube-apiserver).
   */
  bumpsGeneration?(o: O, old: O): boolean;
  /** An update of a missing object creates it (Events and Leases: AllowCreateOnUpdate). */
  readonly allowCreateOnUpdate?: boolean;
  /**
   * CheckGracefulDelete: the seconds a deletion waits (with a deletionTimestamp) before the object goes; 0 or absent:
   * at once. `nodeExists` tells whether a Node of that name is stored.
   */
  gracePeriod?(o: Readonly<O>, asked: number | undefined, nodeExists: (name: string) => boolean): number;
}

/** The name rule's first problem with a name, or null. */
export function nameProblem(rule: NameRule, name: string): string | null {
  return nameProblems(rule, name)[0] ?? null;
}

/** metadata rules every kind shares: labels and annotations. */
export function validateMeta(meta: O): FieldError[] {
  const errs: FieldError[] = [];
  for (const [k, v] of Object.entries(obj(meta['labels']) ?? {})) {
    const kp = labelKeyProblem(k);
    if (kp) errs.push(fieldErr.invalid('metadata.labels', k, kp));
    if (typeof v !== 'string') errs.push(fieldErr.invalid(`metadata.labels`, v, 'must be a string'));
    else {
      const vp = labelValueProblem(v);
      if (vp) errs.push(fieldErr.invalid('metadata.labels', v, vp));
    }
  }
  let size = 0;
  for (const [k, v] of Object.entries(obj(meta['annotations']) ?? {})) {
    const kp = labelKeyProblem(k.toLowerCase());
    if (kp) errs.push(fieldErr.invalid('metadata.annotations', k, kp));
    size += k.length + (typeof v === 'string' ? v.length : 0);
  }
  if (size > 256 * 1024) errs.push(fieldErr.tooLong('metadata.annotations', 256 * 1024));
  // ValidateFinalizers: qualified names, and not both of the garbage collector's policies.
  const finalizers = arr(meta['finalizers']);
  finalizers.forEach((f, i) => {
    const p = typeof f === 'string' ? labelKeyProblem(f) : 'must be a string';
    if (p) errs.push(fieldErr.invalid(`metadata.finalizers[${i}]`, f, p));
  });
  if (finalizers.includes('orphan') && finalizers.includes('foregroundDeletion')) {
    errs.push(fieldErr.invalid('metadata.finalizers', finalizers, 'finalizer orphan and foregroundDeletion cannot be both set'));
  }
  return errs;
}

/** Whether anything but metadata and status differs (the spec, for kinds whose spec is not one field). */
const specChanged = (o: O, old: O): boolean => {
  const strip = (x: O) => {
    const c: O = { ...x };
    delete c['metadata'];
    delete c['status'];
    return c;
  };
  return !deepEqual(strip(o), strip(old));
};
/** Maps compared as Go's apiequality.Semantic does: nil and empty are the same. */
const sameMap = (a: unknown, b: unknown): boolean => deepEqual(obj(a) ?? {}, obj(b) ?? {});

const service: Strategy = {
  nameRule: 'dns1035',
  defaults: defaultService,
  validate: validateService,
  initialStatus: () => ({ loadBalancer: {} }),
  prepareForUpdate: prepareServiceUpdate,
};

const pod: Strategy = {
  nameRule: 'subdomain',
  defaults: defaultPod,
  validate: validatePod,
  initialStatus: (o) => ({ phase: 'Pending', qosClass: podQOS(obj(o['spec']) ?? {}) }),
  prepareForCreate: (o) => defaultTolerationSeconds(ensure(o, 'spec')),
  bumpsGeneration: specChanged,
  gracePeriod: podGracePeriod,
};

const deployment: Strategy = {
  nameRule: 'subdomain',
  defaults: defaultDeployment,
  validate: validateDeployment,
  initialStatus: () => ({}),
  // Annotations too: the Deployment controller copies them to the ReplicaSets.
  bumpsGeneration: (o, old) => specChanged(o, old) || !sameMap(obj(o['metadata'])?.['annotations'], obj(old['metadata'])?.['annotations']),
};

const replicaSet: Strategy = {
  nameRule: 'subdomain',
  defaults: defaultReplicaSet,
  validate: validateReplicaSet,
  initialStatus: () => ({ replicas: 0 }),
  bumpsGeneration: specChanged,
};

const endpointSlice: Strategy = {
  nameRule: 'subdomain',
  defaults: defaultEndpointSlice,
  validate: validateEndpointSlice,
  // Anything but metadata, or the labels (the EndpointSlice controllers compare generations).
  bumpsGeneration: (o, old) => specChanged(o, old) || !sameMap(obj(o['metadata'])?.['labels'], obj(old['metadata'])?.['labels']),
};

const plain = (nameRule: NameRule, initialStatus?: (o: O) => O | undefined): Strategy => ({
  nameRule,
  defaults() {},
  validate: () => [],
  ...(initialStatus ? { initialStatus } : {}),
});

/**
 * core/v1 Events: upstream's legacyValidateEvent only (ValidateEventCreate/Update skip the rest for
 * v1): the name need only be a path segment, and type, reason and the like are free text, unless
 * the event is a "new" one (eventTime set), which must say who reported it and what happened.
 */
const event: Strategy = {
  nameRule: 'path',
  defaults() {},
  validate(o) {
    const errs: FieldError[] = [];
    const ns = String(obj(o['metadata'])?.['namespace'] ?? '');
    const io = obj(o['involvedObject']) ?? {};
    const ioNs = typeof io['namespace'] === 'string' ? io['namespace'] : '';
    const mismatch = () => errs.push(fieldErr.invalid('involvedObject.namespace', ioNs, 'does not match event.namespace'));
    const str = (k: string) => (typeof o[k] === 'string' ? (o[k] as string) : '');
    if (!o['eventTime']) {
      if (ioNs === '' ? ns !== '' && ns !== 'default' : ns !== ioNs) mismatch();
    } else {
      if (ioNs === '' && ns !== 'default' && ns !== 'kube-system') mismatch();
      const rc = str('reportingComponent');
      if (rc === '') errs.push(fieldErr.required('reportingComponent'));
      const rp = labelKeyProblem(rc);
      if (rp) errs.push(fieldErr.invalid('reportingComponent', rc, rp));
      const limit = (k: string, n: number) => {
        if (str(k) === '' && k !== 'message') errs.push(fieldErr.required(k));
        if (str(k).length > n) errs.push(fieldErr.invalid(k, '', `can have at most ${n} characters`));
      };
      limit('reportingInstance', 128);
      limit('action', 128);
      limit('reason', 128);
      limit('message', 1024);
    }
    return errs;
  },
  allowCreateOnUpdate: true,
};

const namespace: Strategy = {
  nameRule: 'label',
  defaults(o) {
    // kube-apiserver labels every namespace with its own name.
    const meta = ensure(o, 'metadata');
    if (typeof meta['name'] === 'string') ensure(meta, 'labels')['kubernetes.io/metadata.name'] = meta['name'];
  },
  validate(o) {
    const errs: FieldError[] = [];
    arr(obj(o['spec'])?.['finalizers']).forEach((f, i) => {
      const p = typeof f === 'string' ? labelKeyProblem(f) : 'must be a string';
      if (p) errs.push(fieldErr.invalid(`spec.finalizers[${i}]`, f, p));
      else if (!String(f).includes('/') && f !== 'kubernetes') errs.push(fieldErr.invalid(`spec.finalizers[${i}]`, f, 'name is neither a standard finalizer name nor is it fully qualified'));
    });
    return errs;
  },
  initialStatus: () => ({ phase: 'Active' }),
  prepareForCreate(o) {
    // A new namespace carries the `kubernetes` finalizer (the namespace controller's).
    const spec = ensure(o, 'spec');
    const f = arr(spec['finalizers']);
    if (!f.includes('kubernetes')) spec['finalizers'] = [...f, 'kubernetes'];
  },
  prepareForUpdate(o, old) {
    // spec.finalizers change only through /finalize.
    const was = obj(old['spec'])?.['finalizers'];
    const spec = ensure(o, 'spec');
    if (was === undefined) delete spec['finalizers'];
    else spec['finalizers'] = structuredClone(was);
  },
};

export const STRATEGIES: Readonly<Record<string, Strategy>> = {
  namespaces: namespace,
  // A kubelet registers its Node with its status (addresses, capacity, nodeInfo): it is kept.
  nodes: { ...plain('subdomain', (o) => obj(o['status'])), defaults: defaultNode, validate: validateNode },
  pods: pod,
  services: service,
  events: event,
  'endpointslices.discovery.k8s.io': endpointSlice,
  'deployments.apps': deployment,
  'replicasets.apps': replicaSet,
  'leases.coordination.k8s.io': { ...plain('subdomain'), allowCreateOnUpdate: true },
};

export type { KObject };
