/**
 * watch/kube-source: the proxy's Services and EndpointSlices from a
 * Kubernetes API server (nodenet's own control plane, or a real cluster's
 * kube-apiserver), through the informer wrapper, delivered to the same
 * handlers the manifest directory feeds.
 *
 * Connection: a kubeconfig file (`--kubeconfig PATH`: the embedded control
 * plane writes one per node), or `--kubeconfig in-cluster` for a Pod's
 * service account (its token and CA, KUBERNETES_SERVICE_HOST and _PORT),
 * as client-go's in-cluster config.
 *
 * Nothing is applied before both lists arrived (SyncGroup); the Service and
 * EndpointSlice handlers each hear synced once, after both.
 */
import { KubeConfig } from '@kubernetes/client-node';
import { ErrorCode, NodenetError } from '../../../lib/errors/errors.js';
import type { Logger } from '../../../lib/log/log.js';
import type { EndpointSliceHandler, ServiceHandler } from '../proxy/handlers.js';
import type { Clock } from '../../../lib/reconcile/clock.js';
import type { BackoffOptions } from './informer.js';
import { ClusterWatch } from './cluster-watch.js';

export const IN_CLUSTER = 'in-cluster';

/**
 * kube-proxy's informers' label selector: Services served by another proxy
 * or labelled headless, and their EndpointSlices (the slice controller copies
 * the labels), are never listed. proxy/model drops them too, for sources that
 * cannot filter (the manifest directory).
 */
export const PROXY_LABEL_SELECTOR = '!service.kubernetes.io/service-proxy-name,!service.kubernetes.io/headless';

/** A KubeConfig from a file, or from the Pod's service account. @throws InvalidConfig naming the problem */
export function loadKubeConfig(source: string): KubeConfig {
  const kc = new KubeConfig();
  try {
    if (source === IN_CLUSTER) {
      if (!process.env['KUBERNETES_SERVICE_HOST']) throw new Error('KUBERNETES_SERVICE_HOST is not set: not running in a Pod');
      kc.loadFromCluster();
    } else kc.loadFromFile(source);
  } catch (e) {
    throw new NodenetError(ErrorCode.InvalidConfig, `kubeconfig ${source}: ${e instanceof Error ? e.message : String(e)}`, { cause: e });
  }
  if (!kc.getCurrentCluster()) throw new NodenetError(ErrorCode.InvalidConfig, `kubeconfig ${source}: no current cluster`);
  return kc;
}

export interface KubeSourceOptions {
  readonly kubeconfig: KubeConfig;
  readonly services: ServiceHandler;
  readonly slices: EndpointSliceHandler;
  readonly log: Logger;
  readonly clock: Clock;
  /** Called once both sources synced (the status file). */
  readonly onSynced?: () => void;
  readonly backoff?: BackoffOptions;
  readonly silenceMs?: number;
}

export class KubeSource {
  private readonly watch: ClusterWatch;

  constructor(o: KubeSourceOptions) {
    this.watch = new ClusterWatch({
      kubeconfig: o.kubeconfig,
      log: o.log,
      clock: o.clock,
      ...(o.backoff ? { backoff: o.backoff } : {}),
      ...(o.silenceMs ? { silenceMs: o.silenceMs } : {}),
      sources: [
        {
          kind: 'services',
          labelSelector: PROXY_LABEL_SELECTOR,
          handler: { add: (x) => o.services.onServiceAdd(x), update: (p, c) => o.services.onServiceUpdate(p, c), delete: (x) => o.services.onServiceDelete(x) },
          synced: () => o.services.onServicesSynced(),
        },
        {
          kind: 'endpointslices',
          labelSelector: PROXY_LABEL_SELECTOR,
          handler: { add: (x) => o.slices.onEndpointSliceAdd(x), update: (p, c) => o.slices.onEndpointSliceUpdate(p, c), delete: (x) => o.slices.onEndpointSliceDelete(x) },
          synced: () => o.slices.onEndpointSlicesSynced(),
        },
      ],
      ...(o.onSynced ? { onSynced: o.onSynced } : {}),
    });
  }

  /** Starts both informers; resolves once each delivered its first list or is retrying. */
  start(): Promise<void> {
    return this.watch.start();
  }

  /** The sources whose last list or watch failed, with why (the proxy status file). */
  errors(): Iterable<readonly [string, string]> {
    return this.watch.errors();
  }

  stop(): void {
    this.watch.stop();
  }
}
