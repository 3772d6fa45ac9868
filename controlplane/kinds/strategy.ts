/**
 * controlplane/kinds/strategy: what a kind's registry strategy is (kube-apiserver's rest.RESTCreateStrategy and
 * RESTUpdateStrategy, in small), and the rules several kinds' strategies share. Each kind's strategy lives in its
 * module; kinds.ts is the registry of them. Pure.
 */
import { deepEqual } from '../../lib/reconcile/deep-equal.js';
import type { FieldError } from '../api/errors.js';
import { obj, type NameRule, type O } from './common.js';

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

/** Whether anything but metadata and status differs (the spec, for kinds whose spec is not one field). */
export const specChanged = (o: O, old: O): boolean => {
  const strip = (x: O) => {
    const c: O = { ...x };
    delete c['metadata'];
    delete c['status'];
    return c;
  };
  return !deepEqual(strip(o), strip(old));
};
/** Maps compared as Go's apiequality.Semantic does: nil and empty are the same. */
export const sameMap = (a: unknown, b: unknown): boolean => deepEqual(obj(a) ?? {}, obj(b) ?? {});

export const plain = (nameRule: NameRule, initialStatus?: (o: O) => O | undefined): Strategy => ({
  nameRule,
  defaults() {},
  validate: () => [],
  ...(initialStatus ? { initialStatus } : {}),
});
