/**
 * bench/apiserver/failover: how long the HA control plane takes to carry
 * on after each kind of failure, measured on a real HA lab (root: 3 etcd
 * members and 2 API servers in namespaces of their own, HAProxy in front;
 * agent/src/lab/ha.ts), with the lab's own fault tools, `rounds` times each:
 *
 * - the etcd leader killed under a closed loop of creates (1 client,
 *   through HAProxy) → the first create sent after the kill that is
 *   acknowledged (the election, and the API servers' clients moving on);
 * - an API server killed under a watch through HAProxy (found on that
 *   server through HAProxy's connections) → the first event on the watch
 *   opened again from its last resourceVersion, as an informer does at
 *   once; a create every 20 ms gives it something to deliver;
 * - the controller manager's leader killed → the first reconcile by the
 *   new leader: a Deployment scaled right after the kill, its ReplicaSet's
 *   spec.replicas seen changed (the lease's 15 s, the 2 s retry, then the
 *   controllers' start).
 * Each killed part is started again before the next round. The client runs
 * here, reaching HAProxy through the lab's loopback relay; every time is
 * performance.now() in this process.
 */
import { readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Lab } from '../../agent/src/lab/lab.js';
import { apiServerDataDir, etcdLeader, haAct, leaseHolder } from '../../agent/src/lab/ha.js';
import { newLab, runner } from '../../agent/src/testing/lab.js';
import { ApiClient, openWatch } from '../lib/http-client.js';
import { summarize } from '../lib/stats.js';
import type { FailoverFigures } from './report.js';

/** The p50 of bench/lib's one percentile definition (nearest rank); null when there is no round. */
const median = (xs: readonly number[]) => (xs.length ? summarize(xs).p50 : null);

const svc = (name: string) => ({ apiVersion: 'v1', kind: 'Service', metadata: { name, labels: { bench: 'failover' } }, spec: { ports: [{ port: 80 }] } });

export async function measureFailover(o: { readonly rounds: number; readonly say: (s: string) => void }): Promise<FailoverFigures> {
  const lab: Lab = await newLab('bfo');
  try {
    const cp = await lab.startControlPlane({ nodes: [], ha: { etcdMembers: 3, apiServers: 2 }, args: ['--log-level', 'warn'] });
    const ha = cp.haLab();
    const { url } = await cp.localAccess();
    const dir = apiServerDataDir(ha.runRoot, 1);
    const target = { server: new URL(url), caPem: readFileSync(`${dir}/pki/ca.crt`, 'utf8'), token: (JSON.parse(readFileSync(`${dir}/tokens.json`, 'utf8')) as { admin: string }).admin };
    // A fresh connection per request: a kept-alive one to a killed server would only measure its own failure.
    const client = new ApiClient(target, { maxSockets: 4, keepAlive: false });
    let n = 0;
    const create = async (): Promise<boolean> => {
      try {
        return (await client.send('POST', '/api/v1/namespaces/default/services', svc(`f${n++}`))).status === 201;
      } catch {
        return false;
      }
    };
    const etcdMs: number[] = [];
    const apiMs: number[] = [];
    const cmMs: number[] = [];
    for (let r = 1; r <= o.rounds; r++) {
      // ---- the etcd leader ----
      let stop = false;
      let killedAt = Infinity;
      let firstAck = Infinity;
      const writer = (async () => {
        while (!stop) {
          const sent = performance.now();
          if ((await create()) && sent >= killedAt && firstAck === Infinity) firstAck = performance.now();
        }
      })();
      await sleep(1000);
      const leader = await etcdLeader(ha);
      killedAt = performance.now();
      await haAct(ha, 'kill', { kind: 'etcd', index: leader });
      const deadline = performance.now() + 30_000;
      while (firstAck === Infinity && performance.now() < deadline) await sleep(20);
      stop = true;
      await writer;
      if (firstAck !== Infinity) etcdMs.push(firstAck - killedAt);
      o.say(`round ${r}: etcd leader (member ${leader}) killed → first acknowledged write ${firstAck === Infinity ? 'none in 30 s' : `${Math.round(firstAck - killedAt)} ms`}`);
      await haAct(ha, 'start', { kind: 'etcd', index: leader });

      // ---- an API server, under a watch ----
      const list = JSON.parse((await client.send('GET', '/api/v1/namespaces/default/services?labelSelector=bench%3Dfailover&limit=1')).body.toString('utf8')) as { metadata: { resourceVersion: string } };
      let lastRv = list.metadata.resourceVersion;
      let firstAfter = Infinity;
      let killed2 = Infinity;
      const onLine = (line: string, at: number) => {
        const e = JSON.parse(line) as { type: string; object: { metadata?: { resourceVersion?: string } } };
        if (e.type === 'ERROR') throw new Error(`failover bench: the watch got ${line}`);
        lastRv = e.object.metadata?.resourceVersion ?? lastRv;
        if (at > killed2 && firstAfter === Infinity) firstAfter = at;
      };
      const path = () => `/api/v1/namespaces/default/services?watch=1&labelSelector=bench%3Dfailover&resourceVersion=${lastRv}`;
      let w = openWatch(client, path(), onLine, () => {});
      let victim = 0;
      for (let i = 0; i < 50 && !victim; i++) {
        await sleep(100);
        const ss = await runner.run(['ip', 'netns', 'exec', lab.ul, 'ss', '-Htn', 'state', 'established'], { allowFailure: true });
        victim = Number(/192\.168\.77\.24(\d):6443/.exec(ss.stdout)?.[1] ?? 0);
      }
      let writing = true;
      const ticker = (async () => {
        while (writing) {
          await create();
          await sleep(20);
        }
      })();
      await sleep(300);
      killed2 = performance.now();
      await haAct(ha, 'kill', { kind: 'api-server', index: victim });
      // The stream ends when HAProxy sees its server gone; the client opens it again at once from the last resourceVersion.
      const d2 = performance.now() + 30_000;
      while (firstAfter === Infinity && performance.now() < d2) {
        const ended = await Promise.race([w.ended.then(() => true), sleep(50).then(() => false)]);
        if (ended && firstAfter === Infinity) w = openWatch(client, path(), onLine, () => {});
      }
      writing = false;
      await ticker;
      w.close();
      if (firstAfter !== Infinity) apiMs.push(firstAfter - killed2);
      o.say(`round ${r}: API server ${victim} killed under a watch → the watch resumed on the other, first event ${firstAfter === Infinity ? 'none in 30 s' : `${Math.round(firstAfter - killed2)} ms`}`);
      await haAct(ha, 'start', { kind: 'api-server', index: victim });

      // ---- the controller manager's leader ----
      const dep = `web${r}`;
      await client.send('POST', '/apis/apps/v1/namespaces/default/deployments', {
        apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: dep },
        spec: { replicas: 1, selector: { matchLabels: { app: dep } }, template: { metadata: { labels: { app: dep } }, spec: { containers: [{ name: 'c', image: 'nodenet/host', command: ['sleep', '1'] }] } } },
      });
      const rsReplicas = async (): Promise<number | null> => {
        try {
          const l = JSON.parse((await client.send('GET', `/apis/apps/v1/namespaces/default/replicasets?labelSelector=app%3D${dep}`)).body.toString('utf8')) as { items?: { spec: { replicas: number } }[] };
          return l.items?.[0]?.spec.replicas ?? null;
        } catch {
          return null;
        }
      };
      for (let i = 0; i < 100 && (await rsReplicas()) !== 1; i++) await sleep(100);
      // The holder's identity must be a running server's: after the round's API server kill the lease may still name
      // the killed replica (restarted with a new identity) until it expires and a live one takes it.
      let holder = await leaseHolder(ha, 'kube-controller-manager');
      for (let i = 0; i < 150 && holder.server === 0; i++) {
        await sleep(200);
        holder = await leaseHolder(ha, 'kube-controller-manager');
      }
      if (holder.server === 0) throw new Error(`failover bench: no running API server holds the kube-controller-manager lease (holder ${JSON.stringify(holder.holder)})`);
      const killed3 = performance.now();
      await haAct(ha, 'kill', { kind: 'api-server', index: holder.server });
      for (let i = 0; i < 50; i++) {
        const s = await client.send('PUT', `/apis/apps/v1/namespaces/default/deployments/${dep}/scale`, { apiVersion: 'autoscaling/v1', kind: 'Scale', metadata: { name: dep, namespace: 'default' }, spec: { replicas: 2 } }).catch(() => null);
        if (s?.status === 200) break;
        await sleep(100);
      }
      let reconciled = Infinity;
      const d3 = performance.now() + 60_000;
      while (performance.now() < d3) {
        if ((await rsReplicas()) === 2) {
          reconciled = performance.now();
          break;
        }
        await sleep(50);
      }
      if (reconciled !== Infinity) cmMs.push(reconciled - killed3);
      o.say(`round ${r}: the controller manager's leader (API server ${holder.server}) killed → first reconcile by the new leader ${reconciled === Infinity ? 'none in 60 s' : `${Math.round(reconciled - killed3)} ms`}`);
      await haAct(ha, 'start', { kind: 'api-server', index: holder.server });
    }
    return {
      etcdLeaderKilledToWriteMs: median(etcdMs),
      apiServerKilledToWatchMs: median(apiMs),
      controllerLeaderKilledToReconcileMs: median(cmMs),
      samples: { etcdLeader: etcdMs, apiServer: apiMs, controllerLeader: cmMs },
    };
  } finally {
    await lab.destroy();
  }
}
