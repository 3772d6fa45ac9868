/**
 * pods/object-watch: objects.ts's PodObjects on an API server, as the
 * kubelet's watch-based configmap and secret managers keep them: one
 * informer per object the node's Pods refer to (a list and watch of
 * `/api/v1/namespaces/<ns>/<configmaps|secrets>` pinned by
 * `fieldSelector=metadata.name=<name>`, what the Node authorizer allows a
 * node), counted by the Pods that refer to it and stopped when the last goes;
 * and one informer of every Service (the environment's Service variables).
 * Each is watch/informer.ts's dependable Informer (restart with backoff, a
 * 410 relists). A read waits for the object's first list, up to 5 s (upstream
 * polls for 1 s), then fails in upstream's words: `failed to sync configmaps
 * cache: timed out waiting for the condition`.
 */
import { ListWatch, Watch, type KubeConfig, type KubernetesObject } from '@kubernetes/client-node';
import { F } from '../../../lib/log/fields.js';
import type { Logger } from '../../../lib/log/log.js';
import type { Clock } from '../../../lib/reconcile/clock.js';
import { ClusterWatch, listRaw } from '../watch/cluster-watch.js';
import { Informer, type ListWatchLike } from '../watch/informer.js';
import type { ObjectKind, PodObjects } from './objects.js';

type O = Record<string, unknown>;

interface Watched {
  readonly informer: Informer;
  synced: boolean;
  object: O | null;
  readonly waiters: (() => void)[];
}

const RESOURCE: Readonly<Record<ObjectKind, string>> = { configMap: 'configmaps', secret: 'secrets' };

export class ObjectWatches implements PodObjects {
  private readonly byPod = new Map<string, Set<string>>();
  private readonly watches = new Map<string, Watched>();
  private readonly listeners: ((kind: ObjectKind | 'service', namespace: string, name: string) => void)[] = [];
  private readonly svc: ClusterWatch;
  private servicesSynced = false;
  private readonly serviceWaiters: (() => void)[] = [];
  private readonly watch: Watch;
  private stopped = false;

  constructor(private readonly o: { readonly kubeconfig: KubeConfig; readonly clock: Clock; readonly log: Logger; readonly syncTimeoutMs?: number }) {
    this.watch = new Watch(o.kubeconfig);
    const changed = (x: KubernetesObject) => this.announce('service', x.metadata?.namespace ?? '', x.metadata?.name ?? '');
    this.svc = new ClusterWatch({
      kubeconfig: o.kubeconfig, log: o.log, clock: o.clock,
      sources: [{ kind: 'services', name: 'services@kubelet', handler: { add: changed, update: (_p, c) => changed(c), delete: changed } }],
      onSynced: () => {
        this.servicesSynced = true;
        for (const w of this.serviceWaiters.splice(0)) w();
      },
    });
  }

  /** Starts the Services' watch (the objects' start as Pods register them). */
  async start(): Promise<void> {
    await this.svc.start();
  }

  stop(): void {
    this.stopped = true;
    this.svc.stop();
    for (const w of this.watches.values()) void w.informer.stop();
    this.watches.clear();
  }

  register(uid: string, namespace: string, refs: { readonly configMaps: Iterable<string>; readonly secrets: Iterable<string> }): void {
    const keys = new Set([...[...refs.configMaps].map((n) => key('configMap', namespace, n)), ...[...refs.secrets].map((n) => key('secret', namespace, n))]);
    const before = this.byPod.get(uid) ?? new Set<string>();
    this.byPod.set(uid, keys);
    for (const k of keys) if (!this.watches.has(k)) this.startWatch(k);
    for (const k of before) if (!keys.has(k)) this.release(k);
  }

  unregister(uid: string): void {
    const before = this.byPod.get(uid);
    this.byPod.delete(uid);
    for (const k of before ?? []) this.release(k);
  }

  async get(kind: ObjectKind, namespace: string, name: string): Promise<O | null> {
    const w = this.watches.get(key(kind, namespace, name));
    if (!w) throw new Error(`${RESOURCE[kind]} ${namespace}/${name}: no Pod of this node refers to it`);
    if (!(await this.waitFor(() => w.synced, w.waiters))) throw new Error(`failed to sync ${RESOURCE[kind]} cache: timed out waiting for the condition`);
    return w.object;
  }

  async services(): Promise<O[]> {
    if (!(await this.waitFor(() => this.servicesSynced, this.serviceWaiters))) throw new Error('services have not yet been read at least once, cannot construct envvars');
    return this.svc.list('services@kubelet') as unknown as O[];
  }

  onChange(fn: (kind: ObjectKind | 'service', namespace: string, name: string) => void): void {
    this.listeners.push(fn);
  }

  /** What is watched: `configMap ns/name`, `secret ns/name` (status, tests). */
  watched(): string[] {
    return [...this.watches.keys()].sort();
  }

  private waitFor(done: () => boolean, waiters: (() => void)[]): Promise<boolean> {
    if (done()) return Promise.resolve(true);
    return new Promise((resolve) => {
      const timer = this.o.clock.setTimeout(() => resolve(done()), this.o.syncTimeoutMs ?? 5000);
      waiters.push(() => {
        this.o.clock.clearTimeout(timer);
        resolve(true);
      });
    });
  }

  private startWatch(k: string): void {
    if (this.stopped) return;
    const [kind, ns, name] = parse(k);
    const path = `/api/v1/namespaces/${encodeURIComponent(ns)}/${RESOURCE[kind]}`;
    const fieldSelector = `metadata.name=${name}`;
    const lw = new ListWatch<KubernetesObject>(path, this.watch, () => listRaw(this.o.kubeconfig, path, { fieldSelector }) as never, false, undefined, fieldSelector);
    const set = (o: O | null) => {
      const w = this.watches.get(k);
      if (!w) return;
      w.object = o;
      if (w.synced) this.announce(kind, ns, name);
    };
    const informer = new Informer({
      name: `${RESOURCE[kind]}/${ns}/${name}`,
      listWatch: lw as unknown as ListWatchLike,
      clock: this.o.clock,
      log: this.o.log,
      handler: {
        add: (o) => set(o as unknown as O),
        update: (_p, o) => set(o as unknown as O),
        delete: () => set(null),
        synced: () => {
          const w = this.watches.get(k);
          if (!w) return;
          w.synced = true;
          for (const f of w.waiters.splice(0)) f();
          this.announce(kind, ns, name);
        },
      },
    });
    this.watches.set(k, { informer, synced: false, object: null, waiters: [] });
    this.o.log.debug({ [F.subsys]: 'kubelet', object: k }, 'watching');
    void informer.start().catch((e: unknown) => this.o.log.warn({ [F.subsys]: 'kubelet', object: k, [F.err]: e instanceof Error ? e.message : String(e) }, 'object watch failed to start'));
  }

  private release(k: string): void {
    for (const keys of this.byPod.values()) if (keys.has(k)) return;
    const w = this.watches.get(k);
    this.watches.delete(k);
    if (w) void w.informer.stop();
  }

  private announce(kind: ObjectKind | 'service', namespace: string, name: string): void {
    for (const fn of this.listeners) {
      try {
        fn(kind, namespace, name);
      } catch (e) {
        this.o.log.warn({ [F.subsys]: 'kubelet', [F.err]: e instanceof Error ? e.message : String(e) }, 'object change handler failed');
      }
    }
  }
}

const key = (kind: ObjectKind, ns: string, name: string) => `${kind} ${ns}/${name}`;
function parse(k: string): [ObjectKind, string, string] {
  const [kind, rest] = k.split(' ') as [ObjectKind, string];
  const i = rest.indexOf('/');
  return [kind, rest.slice(0, i), rest.slice(i + 1)];
}
