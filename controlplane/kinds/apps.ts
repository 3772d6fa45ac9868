/**
 * controlplane/kinds/apps: apps/v1 Deployments and ReplicaSets as
 * kube-apiserver treats them: the apps/v1 defaults, pkg/apis/apps/validation
 * (ValidateDeploymentSpec, ValidateReplicaSetSpec, the template rules of
 * ValidatePodTemplateSpecForReplicaSet) and the registry strategies'
 * apps/v1 selector immutability. Pure.
 *
 * Upstream's rules (x: here, -: left out):
 *   x replicas and minReadySeconds >= 0; revisionHistoryLimit >= 0; progressDeadlineSeconds >= 0 and
 *     greater than minReadySeconds
 *   x selector required, a valid label selector, not empty, matching the template's labels; immutable
 *   x template: labels, annotation keys, the pod spec (pod.ts), restartPolicy Always, no
 *     activeDeadlineSeconds, no ephemeral containers
 *   x strategy type; rollingUpdate forbidden for Recreate; maxUnavailable/maxSurge an int >= 0 or a
 *     percentage, not both 0, maxUnavailable at most 100%
 *   - rollbackTo (gone from apps/v1), status validation (written by the controllers)
 */
import { fieldErr, type FieldError } from '../api/errors.js';
import { labelSelectorRequirements, matchesLabels } from '../api/selectors.js';
import { arr, ensure, isSet, labelSelectorErrors, nonNegative, num, type O, obj, semanticEqual } from './common.js';
import { defaultPodSpec, podTemplateErrors } from './podspec.js';
import { sameMap, specChanged, type Strategy } from './strategy.js';

const PERCENT_TEXT = "a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')";

export function defaultDeployment(o: O): void {
  const spec = ensure(o, 'spec');
  spec['replicas'] ??= 1;
  const strategy = ensure(spec, 'strategy');
  strategy['type'] ??= 'RollingUpdate';
  if (strategy['type'] === 'RollingUpdate') {
    const ru = ensure(strategy, 'rollingUpdate');
    ru['maxUnavailable'] ??= '25%';
    ru['maxSurge'] ??= '25%';
  }
  spec['revisionHistoryLimit'] ??= 10;
  spec['progressDeadlineSeconds'] ??= 600;
  defaultPodSpec(ensure(ensure(spec, 'template'), 'spec'));
}

export function defaultReplicaSet(o: O): void {
  const spec = ensure(o, 'spec');
  spec['replicas'] ??= 1;
  defaultPodSpec(ensure(ensure(spec, 'template'), 'spec'));
}

/** What ValidateDeploymentSpec and ValidateReplicaSetSpec share: the selector and the template. */
function selectorTemplateErrors(spec: O): FieldError[] {
  const errs: FieldError[] = [];
  const sel = obj(spec['selector']);
  const tpl = obj(spec['template']) ?? {};
  const labels = (obj(obj(tpl['metadata'])?.['labels']) ?? {}) as Record<string, string>;
  if (!sel) errs.push(fieldErr.required('spec.selector'));
  else {
    errs.push(...labelSelectorErrors('spec.selector', sel));
    // Upstream says "for deployment" for ReplicaSets too.
    if (Object.keys(obj(sel['matchLabels']) ?? {}).length + arr(sel['matchExpressions']).length === 0) errs.push(fieldErr.invalid('spec.selector', sel, 'empty selector is invalid for deployment'));
  }
  // metav1.LabelSelectorAsSelector: a missing selector selects nothing (so the template's labels do not match it).
  let matches = false;
  if (sel) {
    try {
      matches = matchesLabels(labelSelectorRequirements(sel as Parameters<typeof labelSelectorRequirements>[0]), labels);
    } catch {
      errs.push(fieldErr.invalid('spec.selector', sel, 'invalid label selector'));
      return errs;
    }
  }
  if (!matches) errs.push(fieldErr.invalid('spec.template.metadata.labels', labels, '`selector` does not match template `labels`'));
  errs.push(...podTemplateErrors('spec.template', tpl));
  const tspec = obj(tpl['spec']) ?? {};
  if (tspec['restartPolicy'] !== 'Always') errs.push(fieldErr.notSupported('spec.template.spec.restartPolicy', tspec['restartPolicy'] ?? '', ['Always']));
  if (isSet(tspec['activeDeadlineSeconds'])) errs.push(fieldErr.forbidden('spec.template.spec.activeDeadlineSeconds', 'activeDeadlineSeconds in ReplicaSet is not Supported'));
  return errs;
}

/** ValidatePositiveIntOrPercent. */
function intOrPercentErrors(path: string, v: unknown): FieldError[] {
  if (typeof v === 'string') return /^[0-9]+%$/.test(v) ? [] : [fieldErr.invalid(path, v, PERCENT_TEXT)];
  if (typeof v === 'number') return nonNegative(path, v);
  return isSet(v) ? [fieldErr.invalid(path, v, "must be an integer or percentage (e.g '5%')")] : [];
}

/** getIntOrPercentValue: a percentage's number, an int, or what strconv.Atoi makes of any other string (0 when it fails). */
function intOrPercentValue(v: unknown): number {
  if (typeof v === 'number') return v;
  if (typeof v !== 'string') return 0;
  const m = /^([0-9]+)%$/.exec(v);
  if (m) return Number(m[1]);
  return /^[+-]?\d+$/.test(v) ? Number(v) : 0;
}

/** ValidateDeploymentStrategy. */
function strategyErrors(strategy: O): FieldError[] {
  const errs: FieldError[] = [];
  const ru = strategy['rollingUpdate'];
  switch (strategy['type']) {
    case 'Recreate':
      if (isSet(ru)) errs.push(fieldErr.forbidden('spec.strategy.rollingUpdate', "may not be specified when strategy `type` is 'Recreate'"));
      break;
    case 'RollingUpdate': {
      const r = obj(ru);
      if (!r) {
        errs.push(fieldErr.required('spec.strategy.rollingUpdate', 'this should be defaulted and never be nil'));
        break;
      }
      const p = 'spec.strategy.rollingUpdate';
      errs.push(...intOrPercentErrors(`${p}.maxUnavailable`, r['maxUnavailable']), ...intOrPercentErrors(`${p}.maxSurge`, r['maxSurge']));
      if (intOrPercentValue(r['maxUnavailable']) === 0 && intOrPercentValue(r['maxSurge']) === 0) errs.push(fieldErr.invalid(`${p}.maxUnavailable`, r['maxUnavailable'] ?? 0, 'may not be 0 when `maxSurge` is 0'));
      const mu = r['maxUnavailable'];
      if (typeof mu === 'string' && /^[0-9]+%$/.test(mu) && intOrPercentValue(mu) > 100) errs.push(fieldErr.invalid(`${p}.maxUnavailable`, mu, 'must not be greater than 100%'));
      break;
    }
    default:
      // Upstream names the whole strategy here, not its type.
      errs.push(fieldErr.notSupported('spec.strategy', strategy, ['Recreate', 'RollingUpdate']));
  }
  return errs;
}

/** ValidateImmutableField of the selector (the apps/v1 strategies' ValidateUpdate). */
function selectorUpdateErrors(spec: O, old: O): FieldError[] {
  const was = obj(old['spec'])?.['selector'];
  return semanticEqual(spec['selector'] ?? null, was ?? null) ? [] : [fieldErr.invalid('spec.selector', spec['selector'] ?? null, 'field is immutable')];
}

/** ValidateDeployment, and ValidateDeploymentUpdate with the selector's immutability when `old` is set. */
export function validateDeployment(o: O, old: O | null): FieldError[] {
  const spec = obj(o['spec']) ?? {};
  const errs = [...nonNegative('spec.replicas', spec['replicas']), ...selectorTemplateErrors(spec)];
  errs.push(...strategyErrors(obj(spec['strategy']) ?? {}));
  errs.push(...nonNegative('spec.minReadySeconds', spec['minReadySeconds']));
  if (isSet(spec['revisionHistoryLimit'])) errs.push(...nonNegative('spec.revisionHistoryLimit', spec['revisionHistoryLimit']));
  const pds = spec['progressDeadlineSeconds'];
  if (isSet(pds)) {
    errs.push(...nonNegative('spec.progressDeadlineSeconds', pds));
    if (num(pds) <= num(spec['minReadySeconds'])) errs.push(fieldErr.invalid('spec.progressDeadlineSeconds', pds, 'must be greater than minReadySeconds'));
  }
  if (old) errs.push(...selectorUpdateErrors(spec, old));
  return errs;
}

/** ValidateReplicaSet(Update). */
export function validateReplicaSet(o: O, old: O | null): FieldError[] {
  const spec = obj(o['spec']) ?? {};
  const errs = [...nonNegative('spec.replicas', spec['replicas']), ...nonNegative('spec.minReadySeconds', spec['minReadySeconds']), ...selectorTemplateErrors(spec)];
  if (old) errs.push(...selectorUpdateErrors(spec, old));
  return errs;
}

/** The Deployment's strategy. */
export const deploymentStrategy: Strategy = {
  nameRule: 'subdomain',
  defaults: defaultDeployment,
  validate: validateDeployment,
  initialStatus: () => ({}),
  // Annotations too: the Deployment controller copies them to the ReplicaSets.
  bumpsGeneration: (o, old) => specChanged(o, old) || !sameMap(obj(o['metadata'])?.['annotations'], obj(old['metadata'])?.['annotations']),
};

/** The ReplicaSet's strategy. */
export const replicaSetStrategy: Strategy = {
  nameRule: 'subdomain',
  defaults: defaultReplicaSet,
  validate: validateReplicaSet,
  initialStatus: () => ({ replicas: 0 }),
  bumpsGeneration: specChanged,
};
