/**
 * watch/cluster-watch: the agent's list+watch sources on a Kubernetes API
 * server, each an Informer (watch/informer.ts) on client-node's ListWatch,
 * synced together (SyncGroup): no source reports synced before every
 * source delivered its first list.
 *
 * The kinds the agent watches, and with which selectors, as kube-proxy and
 * the kubelet do:
 * - `services` (kube-proxy: all, minus those another proxy serves),
 * - `endpointslices` (all),
 * - `nodes`: all of them (the overlay's peers), or this node's own
 *   (`metadata.name=<node>`: its pod CIDR, its conditions),
 * - `pods` bound to this node (`spec.nodeName=<node>`: the kubelet's).
 * A selector goes on the list and on the watch alike; the server turns an
 * object that stops matching into a DELETED (kube-apiserver does the same),
 * so the handlers never see an object outside the selector.
 */
import { request as httpRequest, type RequestOptions } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { ListWatch, Watch, type KubeConfig, type KubernetesObject } from '@kubernetes/client-node';
import { F } from '../../../lib/log/fields.js';
import type { Logger } from '../../../lib/log/log.js';
import type { Clock } from '../../../lib/reconcile/clock.js';
import { Informer, SyncGroup, type BackoffOptions, type ListWatchLike, type SourceHandler } from './informer.js';

export type WatchKind = 'services' | 'endpointslices' | 'nodes' | 'pods' | 'namespaces';

export interface WatchSource {
  readonly kind: WatchKind;
  /** For the log and errors(); defaults to the kind. */
  readonly name?: string;
  readonly labelSelector?: string;
  readonly fieldSelector?: string;
  readonly handler: Omit<SourceHandler, 'synced'>;
  /** Called once, when every source of the watch delivered its first list. */
  readonly synced?: () => void;
}

export interface ClusterWatchOptions {
  readonly kubeconfig: KubeConfig;
  readonly sources: readonly WatchSource[];
  readonly log: Logger;
  readonly clock: Clock;
  /** Called once after every source's synced. */
  readonly onSynced?: () => void;
  readonly backoff?: BackoffOptions;
  readonly silenceMs?: number;
}

/** The collection path of a kind, across namespaces. */
export const WATCH_PATHS: Readonly<Record<WatchKind, string>> = {
  services: '/api/v1/services',
  endpointslices: '/apis/discovery.k8s.io/v1/endpointslices',
  nodes: '/api/v1/nodes',
  pods: '/api/v1/pods',
  namespaces: '/api/v1/namespaces',
};

/** This node's own Node object. */
export const ownNode = (nodeName: string, handler: WatchSource['handler'], synced?: () => void): WatchSource => ({
  kind: 'nodes', name: `nodes/${nodeName}`, fieldSelector: `metadata.name=${nodeName}`, handler, ...(synced ? { synced } : {}),
});

/** The Pods the scheduler bound to this node. */
export const boundPods = (nodeName: string, handler: WatchSource['handler'], synced?: () => void): WatchSource => ({
  kind: 'pods', name: `pods@${nodeName}`, fieldSelector: `spec.nodeName=${nodeName}`, handler, ...(synced ? { synced } : {}),
});

interface RawList {
  readonly items: KubernetesObject[];
  readonly metadata?: { resourceVersion?: string };
}

/**
 * One list request, decoded with JSON.parse only. client-node's typed list
 * calls run every item through its ObjectSerializer (about 1.3 s for 10,000
 * Services and 10,000 EndpointSlices here, three times the fetch and parse);
 * the watch hands the handlers plain objects anyway, so the list does too.
 * The kubeconfig's CA, client certificate and token apply as client-node
 * applies them. A status other than 200 is an error with `code` (and the
 * server's Status message).
 */
export async function listRaw(kc: KubeConfig, path: string, q: Readonly<Record<string, string>>, timeoutMs = 60_000): Promise<RawList> {
  const cluster = kc.getCurrentCluster();
  if (!cluster) throw new Error('no current cluster');
  const url = new URL(cluster.server + path);
  for (const [k, v] of Object.entries(q)) url.searchParams.set(k, v);
  const opts: RequestOptions & { headers?: Record<string, string> } = {};
  await kc.applyToHTTPSOptions(opts as never);
  const request = url.protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise<RawList>((resolve, reject) => {
    const req = request(url, { ...opts, method: 'GET', headers: { ...opts.headers, Accept: 'application/json' } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('error', reject);
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        if (res.statusCode !== 200) {
          let message = text.slice(0, 300);
          try {
            message = String((JSON.parse(text) as { message?: unknown }).message ?? message);
          } catch { /* not a Status */ }
          reject(Object.assign(new Error(`list ${path}: ${res.statusCode} ${message}`), { code: res.statusCode, statusCode: res.statusCode }));
          return;
        }
        try {
          resolve(JSON.parse(text) as RawList);
        } catch (e) {
          reject(new Error(`list ${path}: the answer is not JSON: ${e instanceof Error ? e.message : String(e)}`));
        }
      });
    });
    req.setTimeout(timeoutMs, () => req.destroy(new Error(`list ${path}: no answer in ${timeoutMs} ms`)));
    req.on('error', reject);
    req.end();
  });
}

export class ClusterWatch {
  private readonly informers: Informer[] = [];
  private readonly lastError = new Map<string, string>();
  private readonly group = new SyncGroup();
  private startedAt = 0;

  constructor(private readonly o: ClusterWatchOptions) {
    const kc = o.kubeconfig;
    const watch = new Watch(kc);
    const names = new Set<string>();
    o.sources.forEach((s, i) => {
      const name = s.name ?? s.kind;
      if (names.has(name)) throw new Error(`cluster watch: two sources named ${name}`);
      names.add(name);
      const last = i === o.sources.length - 1;
      const handler = this.group.join(name, s.handler, () => {
        s.synced?.();
        if (!last) return;
        const counts = Object.fromEntries(this.informers.map((x) => [x.name, x.list().length]));
        o.log.info({ [F.subsys]: 'watch', [F.count]: Object.values(counts).reduce((a, b) => a + b, 0), sources: counts, [F.durationMs]: Math.round(o.clock.now() - this.startedAt) }, 'initial lists synced');
        o.onSynced?.();
      });
      const q = { ...(s.labelSelector ? { labelSelector: s.labelSelector } : {}), ...(s.fieldSelector ? { fieldSelector: s.fieldSelector } : {}) };
      const lw = new ListWatch<KubernetesObject>(WATCH_PATHS[s.kind], watch, () => listRaw(kc, WATCH_PATHS[s.kind], q) as never, false, s.labelSelector, s.fieldSelector);
      lw.on('error', (e: unknown) => this.lastError.set(name, e instanceof Error ? e.message : String(e)));
      lw.on('connect', () => this.lastError.delete(name));
      this.informers.push(new Informer({
        name,
        listWatch: lw as unknown as ListWatchLike,
        handler,
        clock: o.clock,
        log: o.log,
        ...(o.backoff ? { backoff: o.backoff } : {}),
        ...(o.silenceMs ? { silenceMs: o.silenceMs } : {}),
      }));
    });
  }

  /** Starts every informer; resolves once each delivered its first list or is retrying. */
  async start(): Promise<void> {
    this.startedAt = this.o.clock.now();
    await Promise.all(this.informers.map((i) => i.start()));
  }

  get synced(): boolean {
    return this.group.synced;
  }

  /** The sources whose last list or watch failed, with why. */
  errors(): Iterable<readonly [string, string]> {
    return [...this.lastError].map(([k, v]) => [`watch ${k}`, v] as const);
  }

  /** The objects a source last delivered (by its name). */
  list(name: string): KubernetesObject[] {
    const i = this.informers.find((x) => x.name === name);
    return i ? i.list() : [];
  }

  stop(): void {
    for (const i of this.informers) void i.stop();
  }
}
