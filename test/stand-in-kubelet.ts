/**
 * A stand-in kubelet for the tests of issue 9 (the next issue brings
 * nodenet's own): it watches the Pods bound to the lab's nodes and, for
 * each, does what a kubelet and its runtime would do, with real pieces:
 * a pod namespace, the node's CNI shim (ADD, and DEL on the way out), a
 * server in the namespace answering "<pod name> <client address>" on TCP
 * 8080 and echoing on 9090, and the Pod's status (IP, Running, Ready)
 * posted through the status subresource. A Pod being deleted has its
 * server stopped, its CNI DEL done and is then removed for good (grace 0),
 * as the kubelet finishes a graceful deletion. A node can be "frozen": its
 * Pods keep running, but nothing more is done for it (a dead agent).
 */
import { spawn } from 'node:child_process';
import { CoreV1Api, PatchStrategy, setHeaderOptions, type KubeConfig, type KubernetesObject, type V1Pod } from '@kubernetes/client-node';
import type { Lab, VNode } from '../agent/src/lab/lab.js';
import { killNetns } from '../agent/src/lab/lab.js';
import { silentLogger } from '../agent/src/log/log.js';
import { realClock } from '../agent/src/reconcile/clock.js';
import { ClusterWatch } from '../agent/src/watch/cluster-watch.js';

export interface RunningPod {
  readonly name: string;
  readonly node: string;
  readonly ns: string;
  readonly ip: string;
  readonly uid: string;
}

export class StandInKubelet {
  readonly running = new Map<string, RunningPod>();
  readonly frozen = new Set<string>();
  private readonly busy = new Set<string>();
  private readonly pending = new Map<string, V1Pod>();
  private readonly core: CoreV1Api;
  private readonly watch: ClusterWatch;
  private seq = 0;
  readonly errors: string[] = [];

  constructor(private readonly lab: Lab, kc: KubeConfig) {
    this.core = kc.makeApiClient(CoreV1Api);
    const on = (o: KubernetesObject) => this.kick(o as V1Pod);
    this.watch = new ClusterWatch({ kubeconfig: kc, log: silentLogger(), clock: realClock, sources: [{ kind: 'pods', handler: { add: on, update: (_p, c) => on(c), delete: (o) => this.gone(o as V1Pod) } }] });
  }

  start(): Promise<void> {
    return this.watch.start();
  }

  private stopped = false;

  stop(): void {
    this.stopped = true;
    this.watch.stop();
  }

  /** Pods running on a node, by name. */
  on(node: string): string[] {
    return [...this.running.values()].filter((p) => p.node === node).map((p) => p.name).sort();
  }

  private nodeOf(name: string): VNode | undefined {
    return this.lab.nodes.find((n) => n.name === name);
  }

  private kick(p: V1Pod): void {
    const key = `${p.metadata!.namespace}/${p.metadata!.name}`;
    this.pending.set(key, p);
    if (this.busy.has(key)) return;
    this.busy.add(key);
    void (async () => {
      let cur = this.pending.get(key);
      try {
        for (; cur; cur = this.pending.get(key)) {
          this.pending.delete(key);
          await this.sync(key, cur);
        }
      } catch (e) {
        // As a kubelet, try again (the API server may be restarting), with the newest object the watch holds.
        this.errors.push(`${key}: ${e instanceof Error ? e.message : String(e)}`);
        this.busy.delete(key);
        setTimeout(() => {
          const latest = this.watch.list('pods').find((o) => `${o.metadata?.namespace}/${o.metadata?.name}` === key);
          if (!this.stopped && latest) this.kick(this.pending.get(key) ?? (latest as V1Pod));
        }, 500);
        return;
      }
      this.busy.delete(key);
    })();
  }

  private gone(p: V1Pod): void {
    const key = `${p.metadata!.namespace}/${p.metadata!.name}`;
    const r = this.running.get(key);
    if (r && !this.frozen.has(r.node)) void this.teardown(key, r).catch((e: unknown) => this.errors.push(String(e)));
  }

  private async sync(key: string, p: V1Pod): Promise<void> {
    const nodeName = p.spec?.nodeName;
    if (!nodeName || this.frozen.has(nodeName)) return;
    const node = this.nodeOf(nodeName);
    if (!node) return;
    const r = this.running.get(key);
    if (p.metadata?.deletionTimestamp) {
      if (r) await this.teardown(key, r);
      await this.core.deleteNamespacedPod({ namespace: p.metadata.namespace!, name: p.metadata.name!, gracePeriodSeconds: 0 }).catch(() => undefined);
      return;
    }
    if (r) {
      // A kubelet's status manager keeps the Pod's status what it observes: when the node lifecycle
      // controller marked it not ready (this node missed its Lease for a while), it is posted ready again.
      const ready = p.status?.conditions?.find((c) => c.type === 'Ready');
      if (ready?.status !== 'True') await this.postRunning(p, node, r.ip);
      return;
    }
    const ns = await this.lab.addNetns(`k${++this.seq}`);
    const add = await node.cni('ADD', { containerId: p.metadata!.uid!, netns: ns.path, ifName: 'eth0' }, node.cniConfig());
    if (add.exitCode !== 0) throw new Error(`CNI ADD: ${add.stdout}${add.stderr}`);
    const ip = (add.json as { ips: { address: string }[] }).ips[0]!.address.split('/')[0]!;
    const name = p.metadata!.name!;
    spawn('ip', ['netns', 'exec', ns.name, 'socat', 'TCP4-LISTEN:8080,reuseaddr,fork', `SYSTEM:echo ${name} $SOCAT_PEERADDR`], { stdio: 'ignore', detached: true }).unref();
    spawn('ip', ['netns', 'exec', ns.name, 'socat', 'TCP4-LISTEN:9090,reuseaddr,fork', 'EXEC:cat'], { stdio: 'ignore', detached: true }).unref();
    this.running.set(key, { name, node: nodeName, ns: ns.name, ip, uid: p.metadata!.uid! });
    await this.postRunning(p, node, ip);
  }

  private async postRunning(p: V1Pod, node: VNode, ip: string): Promise<void> {
    const name = p.metadata!.name!;
    const now = new Date();
    const cond = (type: string) => ({ type, status: 'True', lastTransitionTime: now });
    await this.core.patchNamespacedPodStatus({
      namespace: p.metadata!.namespace!, name,
      body: { status: { phase: 'Running', podIP: ip, podIPs: [{ ip }], hostIP: node.underlayIP.split('/')[0]!, startTime: now, conditions: [cond('PodScheduled'), cond('Initialized'), cond('ContainersReady'), cond('Ready')], containerStatuses: (p.spec?.containers ?? []).map((c) => ({ name: c.name, image: c.image ?? '', imageID: '', ready: true, restartCount: 0, started: true, state: { running: { startedAt: now } } })) } },
    }, setHeaderOptions('Content-Type', PatchStrategy.MergePatch));
  }

  private async teardown(key: string, r: RunningPod): Promise<void> {
    this.running.delete(key);
    const node = this.nodeOf(r.node)!;
    await killNetns(this.lab.sh, r.ns);
    await node.cni('DEL', { containerId: r.uid, ifName: 'eth0' }, node.cniConfig()).catch(() => undefined);
  }
}
