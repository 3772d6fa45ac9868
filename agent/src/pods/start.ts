/**
 * pods/start: the embedded kubelet put together for the agent (loaded by a
 * dynamic import from node/compose.ts: it brings client-node): the Kubelet
 * on the node's process runtime and the agent's own CNI handler, its Events
 * through the shared recorder (reconcile/event-recorder.ts) over the same
 * HTTP calls as its status, fed by a watch of
 * the Pods bound to this node (watch/cluster-watch.ts's boundPods), the
 * watches of what they read (object-watch.ts: their ConfigMaps and Secrets,
 * the Services), and its log server on the node's primary IP. The node's
 * allocatable resources (what the downward API reads for limits) are its
 * CPUs, memory and the run directory's filesystem. Limits are enforced in
 * the machine's cgroups (cgroups.ts: detected here, under
 * `nodenet/<node name>-<hash of the run directory>`).
 *
 * Order: the Services' watch, adopt the records (the Pods that survived the
 * agent), then the Pods' watch (once synced, the kubelet reconciles adopted
 * and bound Pods), then the log server. stop() undoes it and leaves every
 * Pod running.
 */
import { cpus, totalmem } from 'node:os';
import { statfsSync } from 'node:fs';
import type { KubeConfig } from '@kubernetes/client-node';
import type { CniHandler } from '../cniserver/handler.js';
import { nodenetNetConf } from '../cnitypes/nodenet-netconf.js';
import { ErrorCode, NodenetError } from '../../../lib/errors/errors.js';
import { F } from '../../../lib/log/fields.js';
import type { Logger } from '../../../lib/log/log.js';
import type { Clock } from '../../../lib/reconcile/clock.js';
import { ApiEventRecorder } from '../../../lib/reconcile/event-recorder.js';
import { boundPods, ClusterWatch } from '../watch/cluster-watch.js';
import { Kubelet } from './kubelet.js';
import { kubeletApi } from './kubelet-api.js';
import { ObjectWatches } from './object-watch.js';
import type { NodeAllocatable } from './quantity.js';
import { startKubeletServer, type KubeletServer } from './kubelet-server.js';
import { ProcessPodRuntime } from './runtime.js';
import { nodeDirName, placementRecord, PodCgroups } from './cgroups.js';

export interface StartKubeletOptions {
  readonly kubeconfig: KubeConfig;
  readonly nodeName: string;
  readonly hostIP: string;
  readonly kubeletPort: number;
  /** The Node's status.allocatable (config/capacity.ts); absent: the machine's CPUs, memory and filesystem. */
  readonly allocatable?: Readonly<Record<string, string>>;
  readonly runDir: string;
  readonly pauseBin: string;
  readonly bridge: string;
  readonly cni: CniHandler;
  readonly clock: Clock;
  readonly log: Logger;
  /** The kubelet's --cluster-dns (config's clusterDNS): ClusterFirst Pods' nameservers. */
  readonly clusterDNS?: readonly string[];
  /** The kubelet's --resolv-conf: the node's resolv.conf for Pods ('' none; default /etc/resolv.conf). */
  readonly resolvConf?: string;
  /** The kubelet's --cluster-domain (default cluster.local). */
  readonly clusterDomain?: string;
}

export interface RunningKubelet {
  readonly kubelet: Kubelet;
  readonly server: KubeletServer;
  stop(): Promise<void>;
}

export async function startKubelet(o: StartKubeletOptions): Promise<RunningKubelet> {
  const token = o.kubeconfig.getCurrentUser()?.token;
  if (!token) throw new NodenetError(ErrorCode.InvalidConfig, 'runPods: the kubeconfig has no token, which the kubelet\'s log server needs (the control plane authenticates to it with the node\'s token)');
  const api = kubeletApi(o.kubeconfig);
  const events = new ApiEventRecorder({ sink: api, component: 'kubelet', host: o.nodeName, clock: o.clock, log: o.log.child({ [F.subsys]: 'kubelet/events' }) });
  const objects = new ObjectWatches({ kubeconfig: o.kubeconfig, clock: o.clock, log: o.log.child({ [F.subsys]: 'kubelet/objects' }) });
  await objects.start();
  const kubelet = new Kubelet({
    objects,
    node: o.allocatable ? { ...nodeAllocatable(o.runDir), ...o.allocatable } : nodeAllocatable(o.runDir),
    nodeName: o.nodeName,
    hostIP: o.hostIP,
    runtime: new ProcessPodRuntime({ runDir: o.runDir, pauseBin: o.pauseBin, cgroups: PodCgroups.detect({ node: nodeDirName(o.nodeName, o.runDir), record: placementRecord(o.runDir) }), ...(o.resolvConf !== undefined ? { resolvConf: o.resolvConf } : {}) }),
    cni: o.cni,
    // The node's bridge, the pod CIDR's host-local IPAM, no ipMasq (the overlay masquerades).
    cniConfig: nodenetNetConf({ bridge: o.bridge, ipMasq: false }),
    api,
    events,
    clock: o.clock,
    log: o.log,
    ...(o.clusterDNS ? { clusterDNS: o.clusterDNS } : {}),
    ...(o.clusterDomain ? { clusterDomain: o.clusterDomain } : {}),
  });
  await kubelet.start();
  const watch = new ClusterWatch({
    kubeconfig: o.kubeconfig,
    log: o.log,
    clock: o.clock,
    sources: [boundPods(o.nodeName, {
      add: (p) => kubelet.onPod(p as unknown as Record<string, unknown>),
      update: (_prev, p) => kubelet.onPod(p as unknown as Record<string, unknown>),
      delete: (p) => kubelet.onPodDeleted(p as unknown as Record<string, unknown>),
    }, () => kubelet.onSynced())],
  });
  let server: KubeletServer;
  try {
    await watch.start();
    server = await startKubeletServer({ kubelet, host: o.hostIP, port: o.kubeletPort, token, log: kubelet.log });
  } catch (e) {
    watch.stop();
    kubelet.stop();
    objects.stop();
    await events.stop();
    throw new NodenetError(ErrorCode.InvalidConfig, `the kubelet cannot start: ${e instanceof Error ? e.message : String(e)}`, { cause: e });
  }
  kubelet.log.info({ address: `${o.hostIP}:${server.address.port}` }, 'kubelet serving');
  return {
    kubelet,
    server,
    async stop() {
      watch.stop();
      kubelet.stop();
      objects.stop();
      await server.close();
      await events.idle();
      await events.stop();
    },
  };
}

/** The node's CPUs, memory and the run directory's filesystem, as quantities. */
function nodeAllocatable(runDir: string): NodeAllocatable & Readonly<Record<string, string>> {
  let storage = 0n;
  try {
    const st = statfsSync(runDir, { bigint: true });
    storage = st.blocks * st.bsize;
  } catch { /* none known: 0 */ }
  return { cpu: String(cpus().length || 1), memory: String(totalmem()), 'ephemeral-storage': String(storage) };
}
