/**
 * bench/apiserver/etcd-floor: etcd alone, the floor under nodenet's writes
 * on etcd, measured in the same run against the same members. Effectful.
 *
 * Raw requests through nodenet's own EtcdClient (grpc-js, one channel to
 * the member list, pick_first: the first member, as the API server's client
 * uses), from closed loops of 1 and N clients:
 * - a serializable read (one member answers from its store: gRPC and the
 *   client alone) and a linearizable one (ReadIndex: the leader hears from
 *   a quorum first, so the difference is one raft round trip);
 * - a put of one key (what etcd's own benchmark times);
 * - nodenet's write of a Service: one Txn of two creates-if-absent (the
 *   Service and its IPAddress), values of about the sizes nodenet stores.
 * Around each case, the members' CPU time and their own metrics (WAL
 * fsyncs, raft entries: etcd-metrics.ts). The keys live under
 * /nn-bench-floor/, outside the control plane's /registry, and are deleted
 * at the end.
 */
import { randomUUID } from 'node:crypto';
import type { EtcdCluster } from '../../controlplane/testing/etcd.js';
import { prefixEnd } from '../../controlplane/store/etcd/client.js';
import { Compare_CompareResult, Compare_CompareTarget, type RequestOp } from '../../proto/etcd/rpc.js';
import { closedLoop, type Outcome } from '../lib/http-client.js';
import { summarize } from '../lib/stats.js';
import { thousands } from '../lib/report.js';
import { costOf, parseEtcdMetrics, sumMembers, type EtcdCounters } from './etcd-metrics.js';
import type { EtcdFloor, FloorCase, FloorOp } from './report.js';

const PREFIX = '/nn-bench-floor/';

/** A Service about as nodenet stores it (defaults, a ClusterIP, managedFields), without its resourceVersion. */
function serviceValue(i: number): Buffer {
  const ip = `10.96.${(i >> 8) & 255}.${i & 255}`;
  return Buffer.from(JSON.stringify({
    apiVersion: 'v1', kind: 'Service',
    metadata: {
      name: `floor-${i}`, namespace: 'default', uid: randomUUID(), creationTimestamp: '2026-12-05T10:00:00Z',
      managedFields: [{ manager: 'node', operation: 'Update', apiVersion: 'v1', time: '2026-12-05T10:00:00Z', fieldsType: 'FieldsV1', fieldsV1: {} }],
    },
    spec: {
      ports: [{ port: 80, protocol: 'TCP', targetPort: 80 }], clusterIP: ip, clusterIPs: [ip], type: 'ClusterIP', sessionAffinity: 'None',
      ipFamilies: ['IPv4'], ipFamilyPolicy: 'SingleStack', internalTrafficPolicy: 'Cluster',
    },
    status: { loadBalancer: {} },
  }));
}

/** Its IPAddress, as the allocator writes it. */
function ipAddressValue(i: number): Buffer {
  const ip = `10.96.${(i >> 8) & 255}.${i & 255}`;
  return Buffer.from(JSON.stringify({
    apiVersion: 'networking.k8s.io/v1', kind: 'IPAddress',
    metadata: { name: ip, uid: randomUUID(), creationTimestamp: '2026-12-05T10:00:00Z', labels: { 'ipaddress.kubernetes.io/ip-family': 'IPv4', 'ipaddress.kubernetes.io/managed-by': 'ipallocator.k8s.io' } },
    spec: { parentRef: { group: '', resource: 'services', namespace: 'default', name: `floor-${i}` } },
  }));
}

const put = (key: Buffer, value: Buffer): RequestOp => ({ request: { $case: 'requestPut', requestPut: { key, value, lease: 0n, prevKv: false, ignoreValue: false, ignoreLease: false } } });
const absent = (key: Buffer) => ({ result: Compare_CompareResult.EQUAL, target: Compare_CompareTarget.CREATE, key, targetUnion: { $case: 'createRevision' as const, createRevision: 0n }, rangeEnd: Buffer.alloc(0) });

export interface FloorOptions {
  readonly cluster: EtcdCluster;
  /** Requests per case. */
  readonly requests: number;
  readonly concurrency: readonly number[];
  /** The etcd members' CPU time so far (ms), together. */
  readonly etcdCpuMs: () => number;
  readonly say: (s: string) => void;
}

async function counters(cluster: EtcdCluster): Promise<EtcdCounters> {
  const texts = await Promise.all(Array.from({ length: cluster.size }, async (_, i) => {
    const r = await fetch(`${cluster.endpoint(i)}/metrics`);
    if (!r.ok) throw new Error(`GET ${cluster.endpoint(i)}/metrics: HTTP ${r.status}`);
    return r.text();
  }));
  return sumMembers(texts.map(parseEtcdMetrics));
}

const ownCpuMs = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};

export async function measureFloor(o: FloorOptions): Promise<EtcdFloor> {
  const client = o.cluster.client();
  try {
    const st = await client.status();
    const leaderMember = await o.cluster.leader();
    const cases: FloorCase[] = [];
    const one = async (op: FloorOp, clients: number): Promise<void> => {
      const base = `${PREFIX}${op}-${clients}/`;
      const readKey = Buffer.from(`${PREFIX}read`);
      const request = async (i: number): Promise<Outcome> => {
        const t0 = performance.now();
        if (op === 'range-serializable' || op === 'range-linearizable') {
          await client.range({ key: readKey, serializable: op === 'range-serializable' });
        } else if (op === 'put') {
          await client.txn({ success: [put(Buffer.from(`${base}${i}`), serviceValue(i))] });
        } else {
          const k1 = Buffer.from(`${base}svc-${i}`);
          const k2 = Buffer.from(`${base}ip-${i}`);
          const r = await client.txn({ compare: [absent(k1), absent(k2)], success: [put(k1, serviceValue(i)), put(k2, ipAddressValue(i))] });
          if (!r.succeeded) return { ok: false, latencyMs: performance.now() - t0, error: 'a key already existed' };
        }
        return { ok: true, latencyMs: performance.now() - t0 };
      };
      // Warm-up: the channel, the JIT.
      await closedLoop(Math.min(200, o.requests), clients, (i) => request(o.requests + i));
      const writes = op === 'put' || op === 'txn-create-2';
      const m0 = writes ? await counters(o.cluster) : null;
      const cpu0 = { etcd: o.etcdCpuMs(), client: ownCpuMs() };
      const r = await closedLoop(o.requests, clients, request);
      const cpu = { etcd: o.etcdCpuMs() - cpu0.etcd, client: ownCpuMs() - cpu0.client };
      const m1 = writes ? await counters(o.cluster) : null;
      const ok = r.outcomes.filter((x) => x.ok);
      const bad = r.outcomes.filter((x) => !x.ok);
      const c: FloorCase = {
        op, clients, requests: r.outcomes.length, errors: bad.length, firstError: bad[0]?.error ?? null, wallMs: r.wallMs, perSec: ok.length / (r.wallMs / 1000),
        latencyMs: summarize(ok.map((x) => x.latencyMs)), etcdCpuMsPerOp: cpu.etcd / r.outcomes.length, clientCpuMsPerOp: cpu.client / r.outcomes.length,
        cost: m0 && m1 ? costOf(m0, m1, r.outcomes.length) : null,
      };
      o.say(`etcd alone: ${op}, ${clients} client${clients === 1 ? '' : 's'}: ${thousands(c.perSec)}/s, p50 ${c.latencyMs.p50.toFixed(2)} ms, p99 ${c.latencyMs.p99.toFixed(2)} ms` +
        `${c.cost ? `, ${c.cost.proposalsPerOp.toFixed(2)} raft entries and ${c.cost.walFsyncsPerOp.toFixed(2)} WAL fsyncs per write (mean ${c.cost.walFsyncMeanMs.toFixed(2)} ms)` : ''}` +
        `${c.errors ? `, errors ${c.errors} (${c.firstError ?? '?'})` : ''}`);
      cases.push(c);
    };
    await client.txn({ success: [put(Buffer.from(`${PREFIX}read`), serviceValue(0))] });
    await one('range-serializable', 1);
    await one('range-linearizable', 1);
    for (const op of ['put', 'txn-create-2'] as const) for (const n of o.concurrency) await one(op, n);
    // What the floor wrote goes: the control plane's store starts empty (it lives under /registry anyway).
    const from = Buffer.from(PREFIX);
    await client.txn({ success: [{ request: { $case: 'requestDeleteRange', requestDeleteRange: { key: from, rangeEnd: prefixEnd(from), prevKv: false } } }] }, 60_000);
    return {
      version: st.version, members: o.cluster.size, clientMember: 0, leaderMember,
      valueBytes: [serviceValue(1).length, ipAddressValue(1).length], cases,
    };
  } finally {
    client.close();
  }
}
