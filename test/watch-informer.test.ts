/**
 * The agent's informer wrapper on client-node's real ListWatch against the
 * embedded control plane over TLS: the first list, then the watch; the
 * server going away (errors, backoff, no spin) and coming back (resumed
 * from the resourceVersion, nothing missed or repeated); and a 410 after
 * compaction (client-node lists again; the difference arrives as adds,
 * updates and deletes with the previous objects). No root needed.
 */
import t from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api, KubeConfig, ListWatch, Watch, type KubernetesObject, type V1Service } from '@kubernetes/client-node';
import { startControlPlane, type ControlPlane } from '../controlplane/control-plane.js';
import { silentLogger } from '../lib/log/log.js';
import { realClock } from '../lib/reconcile/clock.js';
import { waitFor } from '../agent/src/testing/wait.js';
import { Informer, type ListWatchLike } from '../agent/src/watch/informer.js';

const dir = mkdtempSync(join(tmpdir(), 'nn-watch-inf-'));
// History is kept 2 s: long enough that the watch resumed after the server's restart (a backoff of up to
// 480 ms, and more on a loaded machine) still finds the events since its resourceVersion (with 300 ms, CI
// once saw them compacted, a 410 and a second list); the 410 case below waits for the compaction instead.
let cp: ControlPlane | undefined;
let port = 0;
async function start(): Promise<ControlPlane> {
  cp = await startControlPlane({ dataDir: join(dir, 'data'), host: '127.0.0.1', port, version: '0.1.0', historyMs: 2000, compactEveryMs: 100 });
  port = Number(new URL(cp.url).port);
  return cp;
}
t.teardown(async () => {
  try {
    await cp?.stop();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

const svc = (name: string): V1Service => ({ apiVersion: 'v1', kind: 'Service', metadata: { name }, spec: { ports: [{ port: 80 }] } });

t.test('list, watch, server down and back, 410: the handlers see each change once, with the previous object', async (t) => {
  const c = await start();
  const kc = new KubeConfig();
  kc.loadFromFile(c.kubeconfig);
  const core = kc.makeApiClient(CoreV1Api);
  await core.createNamespacedService({ namespace: 'default', body: svc('a') });
  await core.createNamespacedService({ namespace: 'default', body: svc('b') });

  let lists = 0;
  let lister = core;
  const lw = new ListWatch<KubernetesObject>('/api/v1/namespaces/default/services', new Watch(kc), () => {
    lists++;
    return lister.listNamespacedService({ namespace: 'default' });
  }, false);
  const events: string[] = [];
  let synced = 0;
  const name = (o: KubernetesObject) => o.metadata?.name ?? '?';
  const inf = new Informer({
    name: 'services',
    listWatch: lw as unknown as ListWatchLike,
    clock: realClock,
    log: silentLogger(),
    backoff: { initialMs: 100, maxMs: 400, jitter: 0.2 },
    handler: {
      add: (o) => events.push(`add ${name(o)}`),
      update: (p, o) => events.push(`update ${name(o)} ${p.metadata?.resourceVersion}->${o.metadata?.resourceVersion}`),
      delete: (o) => events.push(`delete ${name(o)}`),
      synced: () => synced++,
    },
  });
  try {
    await inf.start();
    t.equal(synced, 1);
    t.same(events.sort(), ['add a', 'add b', 'add kubernetes']);
    events.length = 0;
    await core.createNamespacedService({ namespace: 'default', body: svc('c') });
    await waitFor(() => events.includes('add c'), 'the watch');

    // The server goes away: errors, restarts with a backoff (capped at 400 ms: a few, not hundreds).
    await c.stop();
    cp = undefined;
    await waitFor(() => inf.restarts.error >= 2, 'restarts while the server is down');
    await new Promise((r) => setTimeout(r, 1000));
    t.ok(inf.restarts.error < 12, `${inf.restarts.error} restarts in about 1.5 s: backed off, no spin`);
    const c2 = await start();
    const kc2 = new KubeConfig();
    kc2.loadFromFile(c2.kubeconfig);
    const core2 = kc2.makeApiClient(CoreV1Api);
    await core2.createNamespacedService({ namespace: 'default', body: svc('d') });
    await core2.patchNamespacedService({ namespace: 'default', name: 'a', body: [{ op: 'add', path: '/metadata/labels', value: { x: 'y' } }] });
    await waitFor(() => events.includes('add d') && events.some((e) => e.startsWith('update a')), 'the resumed watch');
    t.same(events.filter((e) => e.startsWith('add')), ['add c', 'add d'], 'nothing added twice across the restart');
    t.equal(synced, 1, 'synced once');
    t.equal(lists, 1, 'resumed from the resourceVersion, not listed again');
    lister = core2;

    // Stop watching, let the history be compacted past our resourceVersion, then come back: 410, relist.
    const rv = Number(inf.resourceVersion);
    await inf.stop();
    events.length = 0;
    await core2.deleteNamespacedService({ namespace: 'default', name: 'b' });
    await core2.createNamespacedService({ namespace: 'default', body: svc('e') });
    await new Promise((r) => setTimeout(r, 800));
    await core2.createNamespacedService({ namespace: 'default', body: svc('f') }); // moves the revision the compaction keeps
    let compacted = 0;
    await waitFor(() => (void c2.storage.compactedRev().then((r) => (compacted = r)), compacted > rv), `compaction past our resourceVersion ${rv}`, { timeoutMs: 30_000 });
    await inf.start();
    await waitFor(() => events.includes('delete b') && events.includes('add e') && events.includes('add f'), 'the relist after the 410');
    t.same(events.filter((e) => !e.startsWith('update')).sort(), ['add e', 'add f', 'delete b'], 'the relist\'s difference, as adds and deletes');
    t.equal(lists, 2, 'the watch from a compacted revision got a 410, and client-node listed again');
    t.same(inf.list().map(name).sort(), ['a', 'c', 'd', 'e', 'f', 'kubernetes'], 'the cache is the server\'s state');
    t.equal(synced, 1);
  } finally {
    await inf.stop();
  }
});
