/**
 * controlplane/admission: the admission chain, as kube-apiserver runs it (k8s.io/apiserver/pkg/admission): after
 * authentication and authorization, a write's object goes through every enabled plugin's mutating half, in the
 * plugins' fixed order, then the kind's validation, then every plugin's validating half, then the store. A plugin
 * refuses by throwing (a 403 Forbidden in upstream's words, or what the plugin says); nothing is written then.
 *
 * The plugins nodenet has, in kube-apiserver's order (pkg/kubeapiserver/options/plugins.go AllOrderedPlugins):
 *   NamespaceLifecycle, LimitRanger, ServiceAccount, NodeRestriction, Priority, DefaultTolerationSeconds, ResourceQuota
 * All are on by default (NodeRestriction as kubeadm turns it on). `--enable-admission-plugins` and
 * `--disable-admission-plugins` name them; a name nodenet does not have is refused at start, never ignored. The
 * order never follows the flags: it is the one above, as upstream's.
 *
 * The chain applies to every write the API server takes: clients' and the controllers' (which write with their own
 * identities), so a controller cannot store what a user could not.
 */
import { ErrorCode, NodenetError } from '../../lib/errors/errors.js';
import type { User } from '../auth/authz.js';
import type { Resource } from '../api/resources.js';

export type Operation = 'CREATE' | 'UPDATE' | 'DELETE';

export interface AdmissionRequest {
  readonly operation: Operation;
  readonly resource: Resource;
  /** '' for the main resource; 'status', 'binding', ... */
  readonly subresource: string;
  readonly namespace: string;
  readonly name: string;
  readonly user: User;
  readonly dryRun: boolean;
}

type O = Record<string, unknown>;

export interface AdmissionPlugin {
  readonly name: string;
  /** Mutating: may change `o` in place (create and update). */
  admit?(a: AdmissionRequest, o: O, old: Readonly<O> | null): void | Promise<void>;
  /** Validating: throws to refuse. `o` is null on a delete, `old` on a create. */
  validate?(a: AdmissionRequest, o: Readonly<O> | null, old: Readonly<O> | null): void | Promise<void>;
}

/** Every plugin nodenet has, in the order kube-apiserver runs them. */
export const PLUGIN_ORDER = ['NamespaceLifecycle', 'LimitRanger', 'ServiceAccount', 'NodeRestriction', 'Priority', 'DefaultTolerationSeconds', 'ResourceQuota'] as const;
export type PluginName = (typeof PLUGIN_ORDER)[number];

/**
 * The plugins to run: every plugin on by default, plus `enable`, minus `disable` (kube-apiserver's flags).
 * @throws InvalidConfig naming a plugin nodenet does not have, or one both enabled and disabled
 */
export function enabledPlugins(enable: readonly string[] = [], disable: readonly string[] = []): PluginName[] {
  const known = new Set<string>(PLUGIN_ORDER);
  for (const [flag, names] of [['--enable-admission-plugins', enable], ['--disable-admission-plugins', disable]] as const) {
    for (const n of names) {
      if (!known.has(n)) throw new NodenetError(ErrorCode.InvalidConfig, `${flag}: unknown admission plugin ${JSON.stringify(n)}; nodenet has ${PLUGIN_ORDER.join(', ')}`);
    }
  }
  const both = enable.filter((n) => disable.includes(n));
  if (both.length) throw new NodenetError(ErrorCode.InvalidConfig, `${both.join(', ')} cannot be both enabled and disabled`);
  return PLUGIN_ORDER.filter((n) => !disable.includes(n));
}

export class Admission {
  constructor(readonly plugins: readonly AdmissionPlugin[]) {}

  /** The chain of the named plugins, in PLUGIN_ORDER whatever the order of `names`. */
  static of(all: Readonly<Record<PluginName, AdmissionPlugin>>, names: readonly PluginName[]): Admission {
    return new Admission(PLUGIN_ORDER.filter((n) => names.includes(n)).map((n) => all[n]));
  }

  get names(): string[] {
    return this.plugins.map((p) => p.name);
  }

  async admit(a: AdmissionRequest, o: O, old: Readonly<O> | null): Promise<void> {
    for (const p of this.plugins) if (p.admit) await p.admit(a, o, old);
  }

  async validate(a: AdmissionRequest, o: Readonly<O> | null, old: Readonly<O> | null): Promise<void> {
    for (const p of this.plugins) if (p.validate) await p.validate(a, o, old);
  }
}
