/**
 * controlplane/kinds/priorityclass: PriorityClasses (scheduling.k8s.io/v1) as kube-apiserver's registry treats them:
 * SetDefaults_PriorityClass, ValidatePriorityClass and ValidatePriorityClassUpdate, in upstream's words. That only
 * one may be the global default is the Priority admission plugin's rule (admission/priority.ts), as upstream. Pure.
 *
 *   x preemptionPolicy defaulted to PreemptLowerPriority; PreemptLowerPriority or Never
 *   x a name with the `system-` prefix is one of the two built-in classes, with their value and not global default
 *   x a user class's value at most 1,000,000,000 (HighestUserDefinablePriority)
 *   x value and preemptionPolicy immutable
 */
import { fieldErr, type FieldError } from '../api/errors.js';
import { str, type O } from './common.js';
import type { Strategy } from './strategy.js';

export const HIGHEST_USER_DEFINABLE_PRIORITY = 1_000_000_000;
export const SYSTEM_CRITICAL_PRIORITY = 2 * HIGHEST_USER_DEFINABLE_PRIORITY;
export const SYSTEM_PRIORITY_CLASSES: readonly { name: string; value: number; description: string }[] = [
  { name: 'system-node-critical', value: SYSTEM_CRITICAL_PRIORITY + 1000, description: 'Used for system critical pods that must not be moved from their current node.' },
  { name: 'system-cluster-critical', value: SYSTEM_CRITICAL_PRIORITY, description: 'Used for system critical pods that must run in the cluster, but can be moved to another node if necessary.' },
];
const POLICIES = ['Never', 'PreemptLowerPriority'];

export function defaultPriorityClass(o: O): void {
  o['preemptionPolicy'] ??= 'PreemptLowerPriority';
}

export function validatePriorityClass(o: O, old: O | null): FieldError[] {
  const errs: FieldError[] = [];
  const name = str(o['metadata'] && (o['metadata'] as O)['name']) ?? '';
  const value = o['value'];
  if (typeof value !== 'number' || !Number.isInteger(value) || value < -2147483648 || value > 2147483647) {
    errs.push(fieldErr.invalid('value', value ?? null, 'must be a 32-bit integer'));
    return errs;
  }
  if (name.startsWith('system-')) {
    const known = SYSTEM_PRIORITY_CLASSES.find((c) => c.name === name);
    let why: string | null = null;
    if (!known) why = `${name} is not a known system priority class`;
    else if (known.value !== value) why = `value of ${name} PriorityClass must be ${known.value}`;
    else if (o['globalDefault'] === true) why = `globalDefault must be false for ${name}`;
    if (why) errs.push(fieldErr.forbidden('metadata.name', `priority class names with 'system-' prefix are reserved for system use only. error: ${why}`));
  } else if (value > HIGHEST_USER_DEFINABLE_PRIORITY) {
    errs.push(fieldErr.forbidden('value', `maximum allowed value of a user defined priority is ${HIGHEST_USER_DEFINABLE_PRIORITY}`));
  }
  const policy = o['preemptionPolicy'];
  if (policy !== undefined && !POLICIES.includes(String(policy))) errs.push(fieldErr.notSupported('preemptionPolicy', policy, POLICIES));
  if (old) {
    if (old['value'] !== value) errs.push(fieldErr.forbidden('value', 'may not be changed in an update.'));
    if ((old['preemptionPolicy'] ?? 'PreemptLowerPriority') !== (policy ?? 'PreemptLowerPriority')) errs.push(fieldErr.invalid('preemptionPolicy', policy ?? null, 'field is immutable'));
  }
  return errs;
}

export const priorityClassStrategy: Strategy = {
  nameRule: 'subdomain',
  defaults: defaultPriorityClass,
  validate: validatePriorityClass,
};
