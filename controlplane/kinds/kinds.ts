/**
 * controlplane/kinds: what each served kind does on create and update, as
 * kube-apiserver's registry strategies do it: defaults (pkg/apis/<group>/
 * <version>/defaults.go), validation (pkg/apis/<group>/validation) in its
 * field-error words, the name rule, and which status a new object starts
 * with. Pure: objects in, objects and field errors out.
 *
 * This file is the registry and the rules every kind shares (metadata,
 * names); each kind's strategy is in its module: service.ts,
 * endpointslice.ts, pod.ts (Pods; pod templates in podspec.ts), apps.ts
 * (Deployments, ReplicaSets), node.ts, event.ts, namespace.ts, on the
 * shared field rules of common.ts and strategy.ts. Each
 * module's header lists upstream's rules for its kind that a client can
 * reach by create, update or patch, and which of them are left out.
 */
import { fieldErr, type FieldError } from '../api/errors.js';
import { labelKeyProblem, labelValueProblem } from '../api/selectors.js';
import type { KObject } from '../store/types.js';
import { deploymentStrategy, replicaSetStrategy } from './apps.js';
import { arr, nameProblems, obj, type NameRule, type O } from './common.js';
import { configMapStrategy, secretStrategy } from './configmap.js';
import { endpointsStrategy } from './endpoints.js';
import { limitRangeStrategy, resourceQuotaStrategy } from './quota.js';
import { endpointSliceStrategy } from './endpointslice.js';
import { eventStrategy } from './event.js';
import { namespaceStrategy } from './namespace.js';
import { nodeStrategy } from './node.js';
import { podStrategy } from './pod.js';
import { priorityClassStrategy } from './priorityclass.js';
import { clusterRoleBindingStrategy, clusterRoleStrategy, roleBindingStrategy, roleStrategy } from './rbac.js';
import { serviceStrategy } from './service.js';
import { serviceAccountStrategy } from './serviceaccount.js';
import { plain, type Strategy } from './strategy.js';

export type { Strategy } from './strategy.js';

export type { NameRule } from './common.js';
export { nameProblems, quantityNanos } from './common.js';
export { DEFAULT_TOLERATION_SECONDS, defaultTolerationSeconds, podQOS } from './pod.js';

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

/** Every served kind's strategy, by group-resource. */
export const STRATEGIES: Readonly<Record<string, Strategy>> = {
  namespaces: namespaceStrategy,
  nodes: nodeStrategy,
  pods: podStrategy,
  services: serviceStrategy,
  events: eventStrategy,
  'endpointslices.discovery.k8s.io': endpointSliceStrategy,
  'deployments.apps': deploymentStrategy,
  'replicasets.apps': replicaSetStrategy,
  // Leases: no rules beyond the name; an update of a missing one creates it (AllowCreateOnUpdate).
  'leases.coordination.k8s.io': { ...plain('subdomain'), allowCreateOnUpdate: true },
  configmaps: configMapStrategy,
  limitranges: limitRangeStrategy,
  resourcequotas: resourceQuotaStrategy,
  secrets: secretStrategy,
  serviceaccounts: serviceAccountStrategy,
  endpoints: endpointsStrategy,
  'roles.rbac.authorization.k8s.io': roleStrategy,
  'clusterroles.rbac.authorization.k8s.io': clusterRoleStrategy,
  'rolebindings.rbac.authorization.k8s.io': roleBindingStrategy,
  'clusterrolebindings.rbac.authorization.k8s.io': clusterRoleBindingStrategy,
  'priorityclasses.scheduling.k8s.io': priorityClassStrategy,
};

export type { KObject };
