/**
 * pods/objects: what the kubelet reads besides its Pods: the ConfigMaps and
 * Secrets its Pods refer to, and the Services (for their environment). The
 * interface is the kubelet's configmap and secret managers with the Watch
 * strategy (the default): a Pod registers what it refers to, each object is
 * watched on its own (a list and watch pinned by `fieldSelector=
 * metadata.name=<name>`, which is all the Node authorizer lets a node do),
 * and reads come from what the watch delivered, once it has listed (a read
 * before that waits, then fails as upstream's: `failed to sync configmap
 * cache: timed out waiting for the condition`). object-watch.ts is the one
 * on the API server; kubelet-api.fake.ts keeps the same contract in memory.
 */

type O = Record<string, unknown>;

export type ObjectKind = 'configMap' | 'secret';

export interface PodObjects {
  /** Watches what the Pod `uid` refers to (its previous set is replaced); the others' watches stay. */
  register(uid: string, namespace: string, refs: { readonly configMaps: Iterable<string>; readonly secrets: Iterable<string> }): void;
  /** The Pod is gone: what only it referred to is no longer watched. */
  unregister(uid: string): void;
  /** The object as last delivered, or null when it does not exist. @throws Error when it could not be listed in time, or is not registered */
  get(kind: ObjectKind, namespace: string, name: string): Promise<O | null>;
  /** Every Service, once listed. @throws Error when they could not be listed in time */
  services(): Promise<O[]>;
  /** Called after a watched object or a Service changed. */
  onChange(fn: (kind: ObjectKind | 'service', namespace: string, name: string) => void): void;
}
